"""The expander of one action: its parameters, bindings, checks and effects as they are built.

:class:`_Expander` holds what an archetype (see :mod:`envsynth.blueprint.archetypes`) adds
while it expands an action, checks every name, field and table a condition or value uses
(errors carry the path of the offending item, ``actions[4].pre[0]``), derives the
post-conditions the effects imply and seals the result into a :class:`ToolSpec`.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from envsynth.blueprint import effects as V2
from envsynth.blueprint import expr as X
from envsynth.blueprint import exprcheck
from envsynth.blueprint.correlate import composite_unique_checks
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.fieldtypes import (
    DATE_PATTERN,
    DATETIME_PATTERN,
    EMAIL_PATTERN,
    GENERATED_LOCALS,
    article,
    default_value_expr,
    human,
    json_type,
)
from envsynth.blueprint.machines import state_move_checks
from envsynth.blueprint.models import (
    Action,
    Blueprint,
    Condition,
    CustomAction,
    Entity,
    FieldDef,
)
from envsynth.blueprint.nouns import row_noun
from envsynth.blueprint.problems import suggest
from envsynth.blueprint.spec import Binding, Check, EachEffect, Effect, ParamSpec, ToolSpec


class _Expander:
    def __init__(self, bp: Blueprint, index: int, action: Action) -> None:
        self.bp = bp
        self.index = index
        self.a = action
        self.path = f"actions[{index}]"
        self.params: list[ParamSpec] = []
        self.bindings: list[Binding] = []
        self.pre: list[Check] = []
        self.effects: list[Effect] = []
        self.each: list[EachEffect] = []
        self.post: list[Check] = []

    # -- helpers -------------------------------------------------------------
    def err(self, where: str, msg: str) -> BlueprintError:
        return BlueprintError(f"{self.path}.{where}" if where else self.path, f"{self.a.name}: {msg}")

    def entity(self, name: str, where: str = "entity") -> Entity:
        if not self.bp.has_entity(name):
            known = ", ".join(e.name for e in self.bp.entities)
            raise self.err(where, f"unknown entity {name!r}{suggest(name, [e.name for e in self.bp.entities])} (entities: {known})")
        return self.bp.entity(name)

    def field(self, ent: Entity, name: str, where: str) -> FieldDef:
        if not ent.has(name):
            known = ", ".join(f.name for f in ent.fields)
            meant = suggest(name, [f.name for f in ent.fields])
            raise self.err(where, f"entity {ent.name!r} has no field {name!r}{meant} (fields: {known})")
        return ent.field(name)

    def param_from_field(self, name: str, f: FieldDef, ent: Entity, *, required: bool = True, description: str = "") -> ParamSpec:
        ptype = json_type(f.type)
        ref = ent.name if f.type == "id" else f.ref
        desc = description or f.description or self._default_desc(f, ent)
        pattern = {"date": DATE_PATTERN, "datetime": DATETIME_PATTERN, "email": EMAIL_PATTERN}.get(f.type)
        minimum = f.lower_bound if f.type in ("int", "quantity", "money", "float") else None
        return ParamSpec(
            name=name,
            type=ptype,  # type: ignore[arg-type]
            description=desc,
            required=required,
            enum=list(f.choices) if f.choices else None,
            minimum=minimum,
            maximum=f.max,
            pattern=pattern,
            ref=ref,
            field=f"{ent.name}.{f.name}",
            semantic=f.type,
        )

    def _default_desc(self, f: FieldDef, ent: Entity) -> str:
        if f.type == "id":
            return f"Id of the {row_noun(ent.name)} (like '{ent.prefix}_104233')."
        if f.type == "ref":
            target = self.bp.entity(f.ref) if self.bp.has_entity(f.ref or "") else None
            prefix = target.prefix if target else "id"
            return f"Id of the {human(f.ref or '')} (like '{prefix}_104233')."
        if f.type == "date":
            return f"{human(f.name).capitalize()} as YYYY-MM-DD."
        if f.type == "datetime":
            return f"{human(f.name).capitalize()} as YYYY-MM-DDTHH:MM:SS."
        return f"{human(f.name).capitalize()} of the {row_noun(ent.name)}."

    def add_param(self, p: ParamSpec, where: str) -> None:
        own = self.a.kind == "search" and where in ("limit", "offset")  # the paging parameters search adds itself
        if self.a.kind != "custom" and p.name in GENERATED_LOCALS and not own:
            raise self.err(
                where, f"parameter name {p.name!r} is used by the generated code; pick another (reserved: {sorted(GENERATED_LOCALS)})"
            )
        if any(q.name == p.name for q in self.params):
            raise self.err(where, f"parameter {p.name!r} is defined twice")
        self.params.append(p)

    def bind_param(self, alias: str, ent: Entity, p: ParamSpec, where: str, key: str | None = None) -> None:
        if any(b.alias == alias for b in self.bindings):
            raise self.err(where, f"two rows would be called {alias!r}; give the parameter an explicit alias")
        self.bindings.append(Binding(alias=alias, entity=ent.name, key=key or ent.id_field, param=p.name, optional=not p.required))
        label = ent.label
        what = f"No {row_noun(ent.name)} with {human(key or ent.id_field)} '{{{p.name}}}'."
        self.pre.append(
            Check(
                id=f"exists:{alias}",
                check=f"{alias} is not None" if p.required else f"{p.name} is None or {alias} is not None",
                message=what,
                origin="implicit",
            )
        )
        del label

    def ref_param(self, f: FieldDef, ent: Entity, name: str, *, required: bool, alias: str | None, where: str) -> ParamSpec:
        p = self.param_from_field(name, f, ent, required=required)
        self.add_param(p, where)
        if f.type in ("ref", "id"):
            target = self.entity(f.ref if f.type == "ref" else ent.name, where)  # type: ignore[arg-type]
            self.bind_param(alias or target.name, target, p, where)
        return p

    def explicit_params(self) -> None:
        for j, p in enumerate(self.a.params):
            where = f"params[{j}]"
            if p.type == "list":
                V2.list_param(self, p, where)
                continue
            if p.field:
                ent_name, fname = p.field.split(".")
                ent = self.entity(ent_name, where + ".field")
                f = self.field(ent, fname, where + ".field")
                spec = self.param_from_field(p.name, f, ent, required=p.required, description=p.description)
                upd: dict[str, Any] = {}
                if p.min is not None:
                    upd["minimum"] = p.min
                if p.max is not None:
                    upd["maximum"] = p.max
                if p.default is not None:
                    upd["default"] = p.default
                spec = spec.model_copy(update=upd)
                self.add_param(spec, where)
                if f.type in ("ref", "id"):
                    target = self.entity(f.ref if f.type == "ref" else ent.name, where)  # type: ignore[arg-type]
                    self.bind_param(p.alias or target.name, target, spec, where)
                continue
            assert p.type is not None
            if p.type == "ref":
                target = self.entity(p.ref or "", where + ".ref")
                spec = self.param_from_field(p.name, target.fields[0], target, required=p.required, description=p.description)
                self.add_param(spec, where)
                self.bind_param(p.alias or target.name, target, spec, where)
                continue
            ptype = json_type(p.type)
            desc = p.description or f"{human(p.name).capitalize()}."
            self.add_param(
                ParamSpec(
                    name=p.name,
                    type=ptype,  # type: ignore[arg-type]
                    description=desc,
                    required=p.required,
                    enum=p.values,
                    minimum=p.min,
                    maximum=p.max,
                    default=p.default,
                    semantic=p.type
                    if p.type not in ("integer", "number", "boolean")
                    else {"integer": "int", "number": "float", "boolean": "bool"}[p.type],
                    pattern={"date": DATE_PATTERN, "datetime": DATETIME_PATTERN, "email": EMAIL_PATTERN}.get(p.type or ""),
                ),
                where,
            )

    def extra_bindings(self) -> None:
        for alias, via in self.a.bind.items():
            where = f"bind.{alias}"
            if "." not in via:
                raise self.err(where, f"expected 'alias.ref_field', got {via!r}")
            src_alias, fname = via.split(".", 1)
            src = next((b for b in self.bindings if b.alias == src_alias), None)
            if src is None:
                raise self.err(where, f"{src_alias!r} is not a bound row (bound: {[b.alias for b in self.bindings]})")
            f = self.field(self.bp.entity(src.entity), fname, where)
            if f.type != "ref":
                raise self.err(where, f"{via} is not a ref field")
            target = self.bp.entity(f.ref)  # type: ignore[arg-type]
            if any(b.alias == alias for b in self.bindings):
                raise self.err(where, f"alias {alias!r} is already bound")
            self.bindings.append(
                Binding(alias=alias, entity=target.name, key=target.id_field, via=via, optional=src.optional or f.nullable)
            )

    def declared(self, conds: list[Condition], kind: str) -> list[Check]:
        out = []
        problems: list[BlueprintError] = []
        for j, c in enumerate(conds):
            try:
                out.append(self.declared_one(c, kind, j))
            except BlueprintError as exc:  # each condition is checked, all problems are reported together
                problems.append(exc)
        if problems:
            raise BlueprintError.collected(problems)
        return out

    def declared_one(self, c: Condition, kind: str, j: int) -> Check:
        """The check of one declared condition (``kind`` is pre or post, ``j`` its index)."""
        try:
            e = X.parse(c.check)
        except X.ExprError as exc:
            raise self.err(f"{kind}[{j}]", str(exc)) from None
        self.check_names(e, f"{kind}[{j}]", post=(kind == "post"))
        if kind == "pre" and e.uses_old():
            raise self.err(f"{kind}[{j}]", "old() only makes sense in post-conditions")
        for placeholder in re.findall(r"\{([^{}]+)\}", c.message or ""):
            try:
                self.check_names(X.parse(placeholder), f"{kind}[{j}].message")
            except X.ExprError as exc:
                raise self.err(f"{kind}[{j}].message", f"placeholder {{{placeholder}}}: {exc}") from None
        return Check(id=f"{kind}[{j}]", check=c.check, message=c.message or f"Condition not met: {c.check}.")

    def check_names(self, e: X.Expr, where: str, *, post: bool = False) -> None:
        """Every name, field and table ``e`` uses exists here (``post``: ``new``, ``result`` and inserted rows too)."""
        self._known_names(e, where, post)
        for alias, fname in e.fields():
            if alias in ("result",):
                continue
            ent = self._alias_entity(alias)
            if ent is not None and not ent.has(fname):
                raise self.err(where, f"{alias!r} ({ent.name}) has no field {fname!r} in {e.source!r}")
        for node in ast.walk(e.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
                self.entity(node.args[0].id, where)  # type: ignore[attr-defined]
        try:
            exprcheck.check(e, self.bp, self._alias_entity, self.params)
        except X.ExprError as exc:
            raise self.err(where, str(exc)) from None

    def _known_names(self, e: X.Expr, where: str, post: bool) -> None:
        """Every bare name of ``e`` is an alias, a parameter or an entity."""
        aliases = {b.alias for b in self.bindings} | ({"new", "result"} if post else set())
        if any(ef.op == "insert" for ef in self.effects):
            aliases |= {ef.alias for ef in self.effects if ef.op == "insert"}
        known = aliases | {p.name for p in self.params} | {e_.name for e_ in self.bp.entities}
        unknown = e.names() - known
        if unknown & {"result", "new"} and not post:
            only = sorted(unknown & {"result", "new"})[0]
            raise self.err(where, f"{only!r} is only allowed in post-conditions ('post'), not here: {e.source!r}")
        if unknown:
            raise self.err(
                where, f"unknown name(s) {sorted(unknown)} in {e.source!r}; known: {sorted(aliases | {p.name for p in self.params})}"
            )

    def _alias_entity(self, alias: str) -> Entity | None:
        for b in self.bindings:
            if b.alias == alias:
                return self.bp.entity(b.entity)
        for ef in self.effects:
            if ef.op == "insert" and ef.alias == alias:
                return self.bp.entity(ef.entity)
        return None

    def expr_ok(self, source: str, where: str) -> None:
        try:
            e = X.parse(source)
        except X.ExprError as exc:
            raise self.err(where, str(exc)) from None
        self.check_names(e, where)
        if e.uses_old():
            raise self.err(where, "old() only makes sense in post-conditions; a value is computed from the rows before the call anyway")

    def insert_values(self, ent: Entity, given: dict[str, str], where: str) -> dict[str, str]:
        """Values for every column of a new row: given ones, then defaults."""
        values: dict[str, str] = {ent.id_field: "new_id()"}
        for fname, src in given.items():
            self.field(ent, fname, f"{where}.{fname}")
            src = V2.field_value(self, ent, None, fname, src, f"{where}.{fname}")
            self.expr_ok(src, f"{where}.{fname}")
            values[fname] = src
        for f in ent.fields[1:]:
            if f.name in values:
                continue
            d = default_value_expr(f)
            if d is None:
                raise self.err(where, f"a new {ent.name} needs a value for {f.name!r}: add it to 'fields' or 'set', or make it nullable")
            values[f.name] = d
        return values

    def unique_checks(self, ent: Entity, fields: list[str], alias: str | None) -> None:
        for fname in fields:
            f = ent.field(fname)
            if not f.unique:
                continue
            if alias is None:
                check = f"not exists({ent.name}, {fname}={fname})"
            else:
                check = f"{fname} is None or {fname} == {alias}.{fname} or not exists({ent.name}, {fname}={fname})"
            self.pre.append(
                Check(
                    id=f"unique:{fname}",
                    check=check,
                    message=f"{article(row_noun(ent.name)).capitalize()} {row_noun(ent.name)} with {human(fname)} '{{{fname}}}' already exists.",
                    origin="implicit",
                )
            )

    def derive_post(self) -> None:
        """Post-conditions implied by the effects, evaluated on the state after the call."""
        aliases = {b.alias for b in self.bindings}
        for k, ef in enumerate(self.effects):
            if ef.op == "delete":
                ent = self.bp.entity(ef.entity)
                self.post.append(
                    Check(
                        id=f"effect[{k}]",
                        check=f"not exists({ent.name}, {ent.id_field}=old({ef.alias}.{ent.id_field}))",
                        message="row still exists",
                        origin="implicit",
                    )
                )
                continue
            for fname, src in ef.values.items():
                if src == "new_id()":
                    continue
                rhs = as_old(src, aliases)
                check = f"{ef.alias}.{fname} == ({rhs})"
                if fname in ef.when_given:
                    check = f"{ef.when_given[fname]} is None or {check}"
                self.post.append(Check(id=f"effect[{k}].{fname}", check=check, message=f"{ef.alias}.{fname} is wrong", origin="implicit"))

    def build(self, **kw: Any) -> ToolSpec:
        """The tool spec: declared and implied checks, effects, and the tables it reads and writes."""
        a = self.a
        self.check_stored_values()
        self._declare_conditions()
        self.pre.extend(state_move_checks(self.bp.entity, self.bindings, self.params, self.pre, self.effects, self.err))
        self.pre.extend(composite_unique_checks(self.bp.entity, self.effects, {b.alias for b in self.bindings}))
        reads = sorted(
            {b.entity for b in self.bindings}
            | ({kw["query"].entity} if kw.get("query") else set())
            | self._exists_entities()
            | {e.source for e in self.each if e.source}
        )
        writes, creates, deletes = self._footprint()
        if isinstance(a, CustomAction):
            self._custom_footprint(a, writes, creates, deletes)
        mode = kw.pop("mode", None) or ("write" if (writes or creates or deletes) else "read")
        return ToolSpec(
            name=a.name,
            kind=a.kind,
            description=a.description,
            entity=a.entity,
            mode=mode,
            params=self.params,
            bindings=self.bindings,
            pre=self.pre,
            effects=self.effects,
            each=self.each,
            post=self.post,
            reads=reads,
            writes={k: sorted(v) for k, v in sorted(writes.items())},
            creates=sorted(creates),
            deletes=sorted(deletes),
            **kw,
        )

    def _declare_conditions(self) -> None:
        """Add the action's declared pre- and post-conditions (the problems of both reported together)."""
        problems: list[BlueprintError] = []
        for conds, kind, checks in ((self.a.pre, "pre", self.pre), (self.a.post, "post", self.post)):
            try:
                checks.extend(self.declared(conds, kind))
            except BlueprintError as exc:
                problems.append(exc)
        if problems:
            raise BlueprintError.collected(problems)

    def _footprint(self) -> tuple[dict[str, set[str]], set[str], set[str]]:
        """The fields each table's rows get written, the tables that get rows, those that lose rows (cascades included)."""
        writes: dict[str, set[str]] = {}
        creates, deletes = set(), set()
        for ef in self.effects:
            if ef.op == "update":
                writes.setdefault(ef.entity, set()).update(ef.values)
            elif ef.op == "insert":
                creates.add(ef.entity)
            else:
                deletes.add(ef.entity)
                deletes.update(c for c, _ in ef.cascade)
        for each in self.each:
            if each.op == "update":
                writes.setdefault(each.entity, set()).update(each.values)
            else:
                creates.add(each.entity)
        return writes, creates, deletes

    def _custom_footprint(self, a: CustomAction, writes: dict[str, set[str]], creates: set[str], deletes: set[str]) -> None:
        """Add what a custom action declares it writes, creates and deletes (each name checked)."""
        for ent, fields in a.writes.items():
            e = self.entity(ent, f"writes.{ent}")
            for fname in fields:
                self.field(e, fname, f"writes.{ent}")
            writes.setdefault(ent, set()).update(fields)
        for ent in a.creates:
            self.entity(ent, "creates")
        for ent in a.deletes:
            self.entity(ent, "deletes")
        creates.update(a.creates)
        deletes.update(a.deletes)

    def check_stored_values(self) -> None:
        """Every value an effect writes must fit its column: no duration, no datetime in a date column (language v2)."""
        for ef in self.effects:
            ent = self.bp.entity(ef.entity)
            for fname, src in ef.values.items():
                if src == "new_id()" or not ent.has(fname):
                    continue
                try:
                    exprcheck.check_stored(X.parse(src), self.bp, ent.field(fname).type, self._alias_entity, self.params)
                except X.ExprError as exc:
                    raise self.err(self._value_path(ef.alias, fname), str(exc)) from None

    def _value_path(self, alias: str, fname: str) -> str:
        """Where a written value comes from in the action (``set.f``, ``also.a.f``, ``log_set.f``), best effort."""
        a = self.a
        if alias in (getattr(a, "also", None) or {}):
            return f"also.{alias}.{fname}"
        for key in ("set", "log_set"):
            if fname in (getattr(a, key, None) or {}):
                return f"{key}.{fname}"
        return "fields" if fname in (getattr(a, "fields", None) or []) else f"set.{fname}"

    def _exists_entities(self) -> set[str]:
        out = set()
        for c in self.pre:
            for node in ast.walk(X.parse(c.check).tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
                    out.add(node.args[0].id)  # type: ignore[attr-defined]
        return out


def as_old(source: str, aliases: set[str]) -> str:
    """Rewrite ``alias.field`` as ``old(alias.field)`` (values before the call)."""

    class T(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if isinstance(node.func, ast.Name) and node.func.id in ("old", *X.ROW_FUNCTIONS):
                return node
            return self.generic_visit(node)

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id in aliases:
                return ast.Call(func=ast.Name("old", ast.Load()), args=[node], keywords=[])
            return node

    tree = T().visit(ast.parse(source, mode="eval"))
    return ast.unparse(tree.body)
