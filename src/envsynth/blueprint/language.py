"""Checks of the words a blueprint gives people: phrases, nouns, descriptions and user roles.

The keys themselves (``say``, ``reasons``, ``called``, ``known_by``, ``never_describe``,
field ``label`` and the blueprint's ``users``) are declared on the models; what needs the
whole blueprint or an action's expanded tool spec is checked here.
"""

from __future__ import annotations

import string
from collections.abc import Iterator

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Blueprint, Entity
from envsynth.blueprint.spec import ToolSpec


def slots(phrase: str) -> list[str]:
    """The ``{slot}`` names of a phrase, in order.

    Raises:
        ValueError: if the phrase is not a valid template (an unclosed brace, a format spec).
    """
    names = []
    try:
        parts = list(string.Formatter().parse(phrase))
    except ValueError as exc:  # an unbalanced brace
        raise ValueError(f"{phrase!r} is not a slot template ({exc}); write slots as {{name}} and no other braces") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name or spec or conversion or not name.isidentifier():
            raise ValueError(f"{{{name}}} is not a slot; slots are plain names such as {{order}}")
        names.append(name)
    return names


def person_name(ent: Entity) -> str | None:
    """The field holding the name of the person a row is: the label if it is of type name, else the first field of type name."""
    if ent.label is not None and ent.field(ent.label).type == "name":
        return ent.label
    return next((f.name for f in ent.fields if f.type == "name"), None)


def check_language(bp: Blueprint, specs: list[ToolSpec]) -> None:
    """Raise :class:`BlueprintError` at the first phrase slot or user role that names nothing."""
    first = next(iter(language_problems(bp, list(specs))), None)
    if first is not None:
        raise first


def language_problems(bp: Blueprint, specs: list[ToolSpec | None]) -> Iterator[BlueprintError]:
    """Every phrase slot and user role that names nothing (actions whose spec is None are skipped)."""
    for i, (action, spec) in enumerate(zip(bp.actions, specs, strict=True)):
        if spec is not None:
            params = [p.name for p in spec.params]
            for name in action.reasons_for:
                if name not in params:
                    yield BlueprintError(f"actions[{i}].reasons_for", f"{name!r} is not a parameter of {action.name}; use one of {params}")
        if action.say is None or spec is None:
            continue
        try:
            used = slots(action.say)
        except ValueError as exc:
            yield BlueprintError(f"actions[{i}].say", str(exc))
            continue
        allowed = [p.name for p in spec.params if p.name not in ("limit", "offset")] + [b.alias for b in spec.bindings]
        for name in used:
            if name not in allowed:
                yield BlueprintError(f"actions[{i}].say", f"slot {{{name}}} names nothing; use one of {sorted(set(allowed))}")
    yield from _user_problems(bp)
    yield from _asked_by_problems(bp)
    yield from _workflow_problems(bp, specs)


def _asked_by_problems(bp: Blueprint) -> Iterator[BlueprintError]:
    """Every ``asked_by`` role that is no role of ``users``."""
    roles = [u.role for u in bp.users]
    for i, action in enumerate(bp.actions):
        for j, role in enumerate(action.asked_by):
            if role not in roles:
                yield BlueprintError(f"actions[{i}].asked_by[{j}]", f"{role!r} is not a role of users; use one of {roles}")


def _user_problems(bp: Blueprint) -> Iterator[BlueprintError]:
    seen: set[str] = set()
    for i, user in enumerate(bp.users):
        if user.role in seen:
            yield BlueprintError(f"users[{i}].role", f"duplicate role {user.role!r}")
        seen.add(user.role)
        if user.entity is None:
            continue
        if not bp.has_entity(user.entity):
            yield BlueprintError(f"users[{i}].entity", f"unknown entity {user.entity!r}")
            continue
        ent = bp.entity(user.entity)
        if person_name(ent) is None:
            yield BlueprintError(f"users[{i}].entity", f"{user.entity!r} has no field of type name, so its rows name no person")
        for j, name in enumerate(user.identify_by):
            if not ent.has(name):
                yield BlueprintError(f"users[{i}].identify_by[{j}]", f"{name!r} is not a field of {user.entity!r}")
            elif not ent.field(name).unique:
                yield BlueprintError(
                    f"users[{i}].identify_by[{j}]", f"{user.entity}.{name} is not unique, so it cannot tell one user from another"
                )


def _workflow_problems(bp: Blueprint, specs: list[ToolSpec | None]) -> Iterator[BlueprintError]:
    """Every workflow step that is no write action, or that comes twice, and duplicate workflows."""
    by_name = {s.name: s for s in specs if s is not None}
    names: set[str] = set()
    for i, flow in enumerate(bp.workflows):
        if flow.name in names:
            yield BlueprintError(f"workflows[{i}].name", f"duplicate workflow {flow.name!r}")
        names.add(flow.name)
        for j, step in enumerate(flow.steps):
            spec = by_name.get(step)
            if spec is None:
                if not any(a.name == step for a in bp.actions):  # an action with a problem of its own is reported there
                    yield BlueprintError(f"workflows[{i}].steps[{j}]", f"{step!r} is not an action of this blueprint")
            elif spec.mode != "write":
                yield BlueprintError(f"workflows[{i}].steps[{j}]", f"{step!r} only reads; a workflow's steps change something")
            if step in flow.steps[:j]:
                yield BlueprintError(f"workflows[{i}].steps[{j}]", f"{step!r} comes twice; a workflow does each step once")
