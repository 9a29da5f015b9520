"""State machines on every write: the moves an action's update effects make on state fields.

Every update effect of an action (a transition's own move, its ``set`` and ``also``, an
update's ``set``, the ``also`` of any archetype) that writes a field of type ``state`` goes
through the field's ``transitions``. :func:`state_move_checks` works out, per such write,
which states the row can be in when the action runs (all states, narrowed by the action's
pre-conditions of the forms ``alias.field == 'x'``, ``alias.field in [...]``, ``!=`` and
``not in``) and which states it is set to (a literal, a parameter's enum values, or any
state). Then:

- every move it could make is allowed: nothing to add;
- no move it could make is allowed: a load error naming the field, the states the row can
  be in and the moves the machine allows (:class:`~envsynth.blueprint.errors.BlueprintError`);
- some are allowed: an implicit pre-condition ``state:<alias>.<field>`` that rejects the
  others at run time (an Anticipated Rejection the procedural tester violates).

Writing a state a row already has is no move and always allowed. Inserted rows are not
moves: a new row starts in the state its action gives it. Custom code is guarded in the
database at run time instead (see :mod:`envsynth.runtime.guard`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from envsynth.blueprint import expr as X
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Entity, FieldDef
from envsynth.blueprint.spec import Binding, Check, Effect, ParamSpec

if TYPE_CHECKING:
    from collections.abc import Iterable

ANY_TARGET = None
"""Marks a value whose target state cannot be known statically (any state)."""


def moves_text(f: FieldDef) -> str:
    """The allowed moves of a state field, as ``a -> b, c; b -> d`` (``none`` when it has none)."""
    parts = [f"{src} -> {', '.join(dsts)}" for src, dsts in (f.transitions or {}).items() if dsts]
    return "; ".join(parts) or "none"


def _literal_states(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _is_field(node: ast.expr, alias: str, field: str) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == alias and node.attr == field


def _narrow(node: ast.expr, alias: str, field: str, states: list[str]) -> list[str]:
    """``states`` narrowed by one conjunct about ``alias.field`` (unchanged for anything else)."""
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return states
    left, op, right = node.left, node.ops[0], node.comparators[0]
    if _is_field(right, alias, field) and isinstance(op, ast.Eq | ast.NotEq):
        left, right = right, left
    if not _is_field(left, alias, field):
        return states
    values = _literal_states(right)
    if values is None:
        return states
    if isinstance(op, ast.Eq | ast.In):
        return [s for s in states if s in values]
    if isinstance(op, ast.NotEq | ast.NotIn):
        return [s for s in states if s not in values]
    return states


def possible_sources(checks: Iterable[Check], alias: str, f: FieldDef) -> list[str]:
    """The states ``alias.<f>`` can be in when every check holds (narrowed by their top-level conjuncts)."""
    states = list(f.states or [])
    for c in checks:
        try:
            parts = X.conjuncts(X.parse(c.check))
        except X.ExprError:
            continue
        for part in parts:
            states = _narrow(part, alias, f.name, states)
    return states


def target_states(source: str, f: FieldDef, params: list[ParamSpec], alias: str) -> list[str] | None:
    """The states an effect value can set: a literal's, a parameter's enum, or None (any; unknown statically).

    Returns ``[]`` for a value that makes no move (the field itself, or NULL).
    """
    try:
        node = X.parse(source).tree
    except X.ExprError:
        return ANY_TARGET
    if _is_field(node, alias, f.name) or (isinstance(node, ast.Constant) and node.value is None):
        return []
    literal = _literal_states(node) if isinstance(node, ast.Constant) else None
    if literal is not None:
        return literal
    if isinstance(node, ast.IfExp):
        body, orelse = target_states(ast.unparse(node.body), f, params, alias), target_states(ast.unparse(node.orelse), f, params, alias)
        if body is not None and orelse is not None:
            return sorted(set(body) | set(orelse), key=(f.states or []).index)
        return ANY_TARGET
    if isinstance(node, ast.Name):
        p = next((p for p in params if p.name == node.id), None)
        if p is not None and p.enum:
            return [s for s in p.enum if s in (f.states or [])]
    return ANY_TARGET


def _allowed(f: FieldDef, src: str, dst: str) -> bool:
    return src == dst or dst in (f.transitions or {}).get(src, [])


def _quoted(states: list[str]) -> str:
    return ", ".join(repr(s) for s in states) or "none"


class MoveWrite:
    """One write of a state field by an update effect, with what the machine allows of it."""

    def __init__(self, alias: str, ent: Entity, f: FieldDef, source: str, sources: list[str], targets: list[str]) -> None:
        self.alias = alias
        self.ent = ent
        self.f = f
        self.source = source
        self.sources = sources
        self.targets = targets

    @property
    def bad(self) -> list[tuple[str, str]]:
        """(from, to) pairs the machine forbids."""
        return [(s, t) for s in self.sources for t in self.targets if not _allowed(self.f, s, t)]

    @property
    def legal_moves(self) -> list[tuple[str, str]]:
        """(from, to) pairs that change the state and that the machine allows."""
        return [(s, t) for s in self.sources for t in self.targets if s != t and _allowed(self.f, s, t)]

    def error(self) -> str:
        """Why no write of this effect can be a legal move (a load error's message)."""
        into = sorted({s for s in self.f.states or [] for t in self.targets if s != t and _allowed(self.f, s, t)}, key=self.f.states.index)  # type: ignore[union-attr]
        what = f"{self.alias}.{self.f.name}"
        to = _quoted(self.targets) if len(self.targets) < len(self.f.states or []) else "any state"
        return (
            f"sets {what} to {to}, but the state machine of {self.ent.name}.{self.f.name} has no move from "
            f"{_quoted(self.sources)} (the states {self.alias} can be in here) into it; moves into it come from {_quoted(into)} "
            f"(allowed moves: {moves_text(self.f)}). Narrow the row with a pre-condition such as "
            f"{what} in [{_quoted(into)}], or add the move to the field's transitions"
        )

    def check(self, optional: bool) -> Check:
        """The pre-condition that rejects the forbidden moves at run time."""
        col = f"{self.alias}.{self.f.name}"
        if len(self.targets) == 1 and self.source.strip().startswith(("'", '"')):
            t = self.targets[0]
            ok = [s for s in self.sources if _allowed(self.f, s, t)]
            cond = f"{col} in {ok!r}"
            message = f"This {self.ent.name.replace('_', ' ')} is '{{{col}}}'; it cannot become {t!r} (only from {_quoted(ok)})."
        else:
            ways = [
                f"({col} == {s!r} and ({self.source}) in {[t for t in self.targets if _allowed(self.f, s, t)]!r})" for s in self.sources
            ]
            cond = f"({self.source}) == {col} or " + " or ".join(ways)
            message = (
                f"This {self.ent.name.replace('_', ' ')} is '{{{col}}}'; it cannot move to '{{{self.source}}}' "
                f"(allowed moves: {moves_text(self.f)})."
            )
        if optional:
            cond = f"{self.alias} is None or {cond}"
        return Check(id=f"state:{col}", check=cond, message=message, origin="implicit")


def _where(k: int, ef: Effect, fname: str) -> str:
    return f"set.{fname}" if k == 0 else f"also.{ef.alias}.{fname}"


def state_move_checks(
    entity: Callable[[str], Entity],
    bindings: list[Binding],
    params: list[ParamSpec],
    pre: list[Check],
    effects: list[Effect],
    err: Callable[[str, str], BlueprintError],
) -> list[Check]:
    """Implicit pre-conditions for the state moves of ``effects`` (see the module docstring).

    Raises:
        BlueprintError: (made by ``err(where, message)``) for a write no state the row can be
            in may make.
    """
    out: list[Check] = []
    seen: set[str] = set()
    by_alias = {b.alias: b for b in bindings}
    for k, ef in enumerate(effects):
        b = by_alias.get(ef.alias)
        if ef.op != "update" or b is None:
            continue
        ent = entity(ef.entity)
        for fname, source in ef.values.items():
            f = ent.field(fname) if ent.has(fname) else None
            if f is None or f.type != "state" or fname in ef.when_given:
                continue
            targets = target_states(source, f, params, ef.alias)
            write = MoveWrite(
                ef.alias, ent, f, source, possible_sources(pre, ef.alias, f), list(f.states or []) if targets is None else targets
            )
            if not write.bad or not write.targets:
                continue
            if not write.legal_moves:
                raise err(_where(k, ef, fname), write.error())
            check = write.check(b.optional)
            if check.id not in seen:
                seen.add(check.id)
                out.append(check)
    return out
