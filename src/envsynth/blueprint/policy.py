"""Policy and authorization: blueprint keys that add checks to the expanded tools.

``policy.rules`` with ``check`` become pre-conditions (``policy:<rule>``) of the actions they
name; rules with ``forbid`` are left to the agent and only validated here. ``authorization``
gives every tool that loads a row the acting user owns (or a user row) the acting-user
parameter and an ownership check (``auth:<alias>``). Both are plain :class:`Check` entries, so
the compiler, the procedural tester and the dependency graph see them like any ``pre``.
See docs/blueprints.md, sections 11.8 and 11.9.
"""

from __future__ import annotations

import re
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Authorization, Blueprint, Entity, PolicyRule, TransferAction
from envsynth.blueprint.spec import Binding, Check, ParamSpec, ToolSpec

ACTING_ALIAS = "acting_user"
"""Alias of the acting user's row in tools that take the acting-user parameter."""


def apply(bp: Blueprint, specs: list[ToolSpec]) -> list[ToolSpec]:
    """Add the authorization and enforced-policy checks to the tools; validate the agent rules.

    Raises:
        BlueprintError: a rule names an unknown action or a name its condition cannot see, or
            the authorization names an unknown role, entity or path.
    """
    if bp.authorization is None and bp.policy is None:
        return specs
    by_name = {s.name: i for i, s in enumerate(specs)}
    out = list(specs)
    if bp.authorization is not None:
        auth = bp.authorization
        user = user_entity(bp, auth)
        paths = _owned_paths(bp, auth, user)
        out = [_authorize(bp, s, user, acting_param(bp), paths) for s in out]
    for i, rule in enumerate(bp.policy.rules if bp.policy else []):
        for j, name in enumerate(rule.actions):
            where = f"policy.rules[{i}].actions[{j}]"
            if name not in by_name:
                raise BlueprintError(where, f"{rule.rule}: unknown action {name!r}")
            k = by_name[name]
            _condition_ok(bp, out[k], rule, f"policy.rules[{i}]")
            if rule.check is not None:
                out[k] = _with_rule(out[k], rule)
    _unique_rules(bp)
    return out


def user_entity(bp: Blueprint, auth: Authorization) -> Entity:
    """The entity whose rows are the acting users (the role's entity)."""
    role = next((u for u in bp.users if u.role == auth.role), None)
    if role is None:
        raise BlueprintError("authorization.role", f"{auth.role!r} is not a role of 'users' (roles: {[u.role for u in bp.users]})")
    if role.entity is None:
        raise BlueprintError("authorization.role", f"the role {auth.role!r} has no entity, so no row is the acting user")
    if not bp.has_entity(role.entity):
        raise BlueprintError("authorization.role", f"the role {auth.role!r} names the unknown entity {role.entity!r}")
    return bp.entity(role.entity)


def acting_param(bp: Blueprint) -> str:
    """Name of the acting-user parameter (``authorization.param``, else the user entity's id field)."""
    auth = bp.authorization
    if auth is None:
        raise ValueError("the blueprint declares no authorization")
    return auth.param or user_entity(bp, auth).id_field


def acting_user_of(bp: Blueprint, spec: ToolSpec) -> str | None:
    """The parameter of ``spec`` that carries the acting user, or None if the tool acts for no one."""
    if bp.authorization is None:
        return None
    name = acting_param(bp)
    return name if any(c.id.startswith("auth:") for c in spec.pre) and any(p.name == name for p in spec.params) else None


def _owned_paths(bp: Blueprint, auth: Authorization, user: Entity) -> dict[str, list[tuple[Entity, str]]]:
    """Per owned entity, the hops ``(entity, ref field)`` from its row to the user."""
    out: dict[str, list[tuple[Entity, str]]] = {}
    for name, path in auth.owns.items():
        where = f"authorization.owns.{name}"
        if not bp.has_entity(name):
            raise BlueprintError(where, f"unknown entity {name!r}")
        if name == user.name:
            raise BlueprintError(where, f"{name!r} is the user entity itself: a user always owns their own row")
        ent, hops = bp.entity(name), []
        for fname in path.split("."):
            if not ent.has(fname) or ent.field(fname).type != "ref":
                refs = [f.name for f in ent.fields if f.type == "ref"]
                raise BlueprintError(where, f"{ent.name}.{fname} is not a ref field (ref fields: {refs})")
            hops.append((ent, fname))
            ent = bp.entity(ent.field(fname).ref or "")
        if ent.name != user.name:
            raise BlueprintError(where, f"the path {path!r} leads to {ent.name!r}, not to the user entity {user.name!r}")
        out[name] = hops
    return out


def _authorize(bp: Blueprint, spec: ToolSpec, user: Entity, param: str, paths: dict[str, list[tuple[Entity, str]]]) -> ToolSpec:
    """Give a tool that loads owned rows the acting-user parameter and one ownership check per row."""
    if spec.query is not None and spec.query.op != "get":
        return spec
    rows = _owned_rows(bp, spec, user, paths)
    if not rows:
        return spec
    params, bindings, pre = list(spec.params), list(spec.bindings), list(spec.pre)
    existing = next((p for p in params if p.name == param), None)
    acting_is_user_row = any(b.param == param and b.entity == user.name for b in rows)
    if existing is not None and not acting_is_user_row:
        raise BlueprintError(
            "authorization.param", f"{spec.name}: parameter {param!r} exists but does not load a {user.name}; set another 'param'"
        )
    checks: list[Check] = [] if existing is not None else [_acting_user(bp, user, param, params, bindings)]
    for b in rows:
        if b.param == param:
            continue
        hops = paths.get(b.entity, [])
        owner = b.alias
        if len(hops) == 2 and not b.optional:  # follow the first hop as a bound row, as `bind` does
            owner = _hop_binding(bp, bindings, b, hops[0])
            hops = hops[1:]
        checks.append(_owner_check(bp, b, owner, user, param, hops))
    last_exists = max((i for i, c in enumerate(pre) if c.id.startswith("exists:")), default=-1)
    pre[last_exists + 1 : last_exists + 1] = checks
    reads = sorted(set(spec.reads) | {user.name} | _path_reads(rows, paths))
    return spec.model_copy(update={"params": params, "bindings": bindings, "pre": pre, "reads": reads})


def _owned_rows(bp: Blueprint, spec: ToolSpec, user: Entity, paths: dict[str, list[tuple[Entity, str]]]) -> list[Binding]:
    """The bindings that load owned rows, or user rows by id, from a parameter (not a transfer's recipient)."""
    # rows loaded from a parameter: owned rows, and user rows by id (a look-up by email finds who asks);
    # not the target of a transfer: a user may send to someone else's row
    action = bp.index.actions.get(spec.name)
    recipient = action.target if isinstance(action, TransferAction) else None
    return [
        b
        for b in spec.bindings
        if b.param and b.alias != recipient and (b.entity in paths or (b.entity == user.name and b.key == user.id_field))
    ]


def _acting_user(bp: Blueprint, user: Entity, param: str, params: list[ParamSpec], bindings: list[Binding]) -> Check:
    """Add the acting-user parameter (after the required ones) and its binding; the check that the user exists."""
    new = ParamSpec(
        name=param,
        type="string",
        description=f"Id of the {_called(bp, user)} the agent acts for: the person making the request (like '{user.prefix}_104233').",
        ref=user.name,
        field=f"{user.name}.{user.id_field}",
        semantic="id",
    )
    last_required = max((i for i, p in enumerate(params) if p.required), default=-1)
    params.insert(last_required + 1, new)
    bindings.append(Binding(alias=ACTING_ALIAS, entity=user.name, key=user.id_field, param=param))
    return Check(
        id=f"exists:{ACTING_ALIAS}",
        check=f"{ACTING_ALIAS} is not None",
        message=f"No {_called(bp, user)} with id '{{{param}}}'.",
        origin="implicit",
    )


def _path_reads(rows: list[Binding], paths: dict[str, list[tuple[Entity, str]]]) -> set[str]:
    return {ent.name for b in rows for ent, _ in paths.get(b.entity, [])}


def _hop_binding(bp: Blueprint, bindings: list[Binding], b: Binding, hop: tuple[Entity, str]) -> str:
    """The alias of the row ``b.<ref field>`` leads to: an existing ``bind`` of it, else a new one."""
    ent, fname = hop
    via = f"{b.alias}.{fname}"
    target = ent.field(fname).ref or ""
    found = next((x for x in bindings if x.via == via), None)
    if found is not None:
        return found.alias
    alias = f"owner_of_{b.alias}"
    bindings.append(Binding(alias=alias, entity=target, key=bp.entity(target).id_field, via=via))
    return alias


def _owner_check(bp: Blueprint, b: Binding, owner: str, user: Entity, param: str, hops: list[tuple[Entity, str]]) -> Check:
    """``auth:<alias>``: the row bound as ``b`` (reached through the row ``owner``) belongs to the acting user."""
    if not hops:  # a row of the user entity itself
        cond = f"{b.alias}.{user.id_field} == {param}"
    elif len(hops) == 1:
        cond = f"{owner}.{hops[0][1]} == {param}"
    else:
        mid, last = hops[1]
        cond = f"exists({mid.name}, {mid.id_field}={b.alias}.{hops[0][1]}, {last}={param})"
    if b.optional:
        cond = f"{b.alias} is None or {cond}"
    what = _called(bp, bp.entity(b.entity))
    message = f"This {what} ('{{{b.param}}}') does not belong to the {_called(bp, user)} '{{{param}}}'; act only on their own records."
    return Check(id=f"auth:{b.alias}", check=cond, message=message, origin="implicit")


def _called(bp: Blueprint, ent: Entity) -> str:
    return ent.called or ent.name.replace("_", " ")


def _with_rule(spec: ToolSpec, rule: PolicyRule) -> ToolSpec:
    message = rule.message or f"The policy forbids this: {rule.text or rule.check}"
    check = Check(id=f"policy:{rule.rule}", check=rule.check or "", message=message)
    return spec.model_copy(update={"pre": [*spec.pre, check]})


def _condition_ok(bp: Blueprint, spec: ToolSpec, rule: PolicyRule, where: str) -> None:
    """The rule's condition parses and names only what ``spec`` has (parameters, rows, entities)."""
    key = "check" if rule.check is not None else "forbid"
    source = rule.check if rule.check is not None else rule.forbid or ""
    try:
        e = X.parse(source)
    except X.ExprError as exc:
        raise BlueprintError(f"{where}.{key}", f"{rule.rule}: {exc}") from None
    if e.uses_old():
        raise BlueprintError(f"{where}.{key}", f"{rule.rule}: old() only makes sense in post-conditions")
    known = known_names(spec)
    unknown = e.names() - known - _entities_in(e)
    if unknown:
        raise BlueprintError(
            f"{where}.{key}", f"{rule.rule}: unknown name(s) {sorted(unknown)} in {source!r} for {spec.name}; known: {sorted(known)}"
        )
    entities = {b.alias: b.entity for b in spec.bindings}
    for alias, fname in sorted(e.fields()):
        if alias in entities and not bp.entity(entities[alias]).has(fname):
            raise BlueprintError(f"{where}.{key}", f"{rule.rule}: {alias!r} ({entities[alias]}) has no field {fname!r} in {source!r}")
    for placeholder in re.findall(r"\{([^{}]+)\}", rule.message or ""):
        try:
            names = X.parse(placeholder).names()
        except X.ExprError as exc:
            raise BlueprintError(f"{where}.message", f"placeholder {{{placeholder}}}: {exc}") from None
        if names - known:
            raise BlueprintError(f"{where}.message", f"placeholder {{{placeholder}}} names {sorted(names - known)}, unknown in {spec.name}")


def known_names(spec: ToolSpec) -> set[str]:
    """The names a condition on ``spec`` may use: its parameters and bound rows."""
    return {p.name for p in spec.params} | {b.alias for b in spec.bindings}


def _entities_in(e: X.Expr) -> set[str]:
    import ast

    return {
        n.args[0].id  # type: ignore[attr-defined]
        for n in ast.walk(e.tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("exists", "count") and n.args
    }


def _unique_rules(bp: Blueprint) -> None:
    seen: set[str] = set()
    for i, rule in enumerate(bp.policy.rules if bp.policy else []):
        if rule.rule in seen:
            raise BlueprintError(f"policy.rules[{i}].rule", f"duplicate rule {rule.rule!r}")
        seen.add(rule.rule)


def agent_rules(bp: Blueprint) -> list[PolicyRule]:
    """The rules the tools allow and the agent must obey (``forbid``)."""
    return [r for r in (bp.policy.rules if bp.policy else []) if r.forbid is not None]


def policy_text(bp: Blueprint) -> str:
    """The policy as the agent reads it: the markdown text, then one line per rule that has a text.

    Empty when the blueprint has no policy.
    """
    if bp.policy is None:
        return ""
    lines = [bp.policy.text.strip()]
    stated = [r for r in bp.policy.rules if r.text and r.text.strip() not in bp.policy.text]
    if stated:
        lines += ["", "Rules:", *(f"- {r.text.strip()}" for r in stated)]
    if bp.authorization is not None:
        user = user_entity(bp, bp.authorization)
        lines += [
            "",
            f"Act only for the {_called(bp, user)} who is asking: pass their id as `{acting_param(bp)}`; "
            "the tools refuse records that belong to someone else.",
        ]
    return "\n".join(lines)


def describe_rules(bp: Blueprint) -> list[dict[str, Any]]:
    """The rules as data for the serving surfaces: id, text, actions and who enforces them."""
    return [
        {"rule": r.rule, "text": r.text, "actions": list(r.actions), "enforced_by": "tools" if r.check is not None else "agent"}
        for r in (bp.policy.rules if bp.policy else [])
    ]
