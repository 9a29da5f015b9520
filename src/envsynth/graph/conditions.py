"""Logic facts of a tool, read from its effects and conditions.

* what a tool *establishes*: ``entity.field`` set to a constant (a state it moves rows
  to, an initial state it creates rows in, or a declared post-condition of a custom tool);
* which numeric fields it *changes* and in which direction (``stock + quantity``);
* what its pre-conditions *require*: ``x.field in [...]`` / ``== c``, ``exists(E, ...)``,
  and numeric fields that must be large (``x.f >= ...``) or small (``x.f + n <= cap``).

Only top-level conjuncts of a pre-condition are requirements; disjunctions and negated
parts are not (they can be met without any other tool's help).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from itertools import product
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.spec import ToolSpec

Value = str | int | float | bool | None


def value_key(v: Value) -> tuple[str, Any]:
    """Type-aware key so that ``True`` never matches ``1`` nor ``'1'``."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("num", float(v))
    return ("none", 0) if v is None else ("str", v)


@dataclass(frozen=True)
class Sets:
    """The tool leaves ``entity.field`` equal to ``value``."""

    entity: str
    field: str
    value: Value


@dataclass(frozen=True)
class Change:
    """The tool moves numeric ``entity.field`` in ``direction`` ('increase' or 'decrease')."""

    entity: str
    field: str
    direction: str


@dataclass(frozen=True)
class Requirement:
    """A pre-condition another tool can help meet.

    ``how`` is 'state' (``values`` are the accepted constants), 'exists' (``values`` are
    ``(field, constant)`` constraints on the row that must exist) or 'increase' /
    'decrease' (the field must be large / small enough).
    """

    how: str
    entity: str
    field: str | None
    values: tuple[Any, ...]
    check: str


def _tree(src: str) -> ast.AST | None:
    """Parse an effect value or condition (effect values may call ``new_id()``)."""
    try:
        return ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None


def aliases(spec: ToolSpec) -> dict[str, str]:
    """Row alias -> entity, for bindings and effect aliases (``new``)."""
    out = {b.alias: b.entity for b in spec.bindings}
    for ef in spec.effects:
        out.setdefault(ef.alias, ef.entity)
    return out


def _constants(node: ast.AST, enums: dict[str, list[str]]) -> set[Value] | None:
    """Values an expression can take when they are all known constants, else None."""
    if isinstance(node, ast.Constant):
        return {node.value}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return {-node.operand.value}
    if isinstance(node, ast.IfExp):
        a, b = _constants(node.body, enums), _constants(node.orelse, enums)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Name) and node.id in enums:
        return set(enums[node.id])
    return None


def _attr(node: ast.AST, amap: dict[str, str]) -> tuple[str, str] | None:
    """``(entity, field)`` of an ``alias.field`` node on a known alias (``old()`` unwrapped)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "old" and node.args:
        node = node.args[0]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in amap:
        return amap[node.value.id], node.attr
    return None


def _direction(entity: str, fname: str, node: ast.AST, amap: dict[str, str]) -> str | None:
    """'increase'/'decrease' if ``node`` is ``<entity.fname> +/- something``."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and node.args:
        node = node.args[0]
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, ast.Add | ast.Sub):
        return None
    if _attr(node.left, amap) == (entity, fname):
        return "increase" if isinstance(node.op, ast.Add) else "decrease"
    if isinstance(node.op, ast.Add) and _attr(node.right, amap) == (entity, fname):
        return "increase"
    return None


def establishes(spec: ToolSpec) -> list[Sets]:
    """Constants the tool writes into fields (effects, then declared post-conditions)."""
    enums = {p.name: list(p.enum) for p in spec.params if p.enum}
    amap = aliases(spec)
    out: set[Sets] = set()
    for ef in spec.effects:
        if ef.op == "delete":
            continue
        for fname, src in ef.values.items():
            tree = _tree(src)
            vals = None if tree is None else _constants(tree, enums)
            for v in vals or ():
                out.add(Sets(ef.entity, fname, v))
    for each in spec.each:  # for_each effects write constants into many rows
        for fname, src in each.values.items():
            vals = None if (tree := _tree(src)) is None else _constants(tree, enums)
            out.update(Sets(each.entity, fname, v) for v in vals or ())
    for c in spec.post:
        if c.origin == "declared":
            out.update(_post_sets(c.check, amap, enums))
    return sorted(out, key=lambda s: (s.entity, s.field, value_key(s.value)))


def _post_sets(check: str, amap: dict[str, str], enums: dict[str, list[Any]]) -> set[Sets]:
    """The constants a declared post-condition says fields hold (``alias.field == c`` conjuncts, not of ``old``)."""
    out: set[Sets] = set()
    for node in X.conjuncts(X.parse(check)):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            at, vals = _attr(node.left, amap), _constants(node.comparators[0], enums)
            if at is not None and vals is not None and not _is_old(node.left):
                out.update(Sets(at[0], at[1], v) for v in vals)
    return out


def _is_old(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "old"


def changes(spec: ToolSpec) -> list[Change]:
    """Numeric fields the tool increases or decreases (effects and declared posts)."""
    amap = aliases(spec)
    out: set[Change] = set()
    for ef in spec.effects:
        if ef.op != "update":
            continue
        for fname, src in ef.values.items():
            tree = _tree(src)
            d = None if tree is None else _direction(ef.entity, fname, tree, amap)
            if d:
                out.add(Change(ef.entity, fname, d))
    for each in spec.each:  # for_each updates (an increment reads the item's own field)
        if each.op == "update":
            item = {**amap, each.alias: each.entity}
            for fname, src in each.values.items():
                d = None if (tree := _tree(src)) is None else _direction(each.entity, fname, tree, item)
                if d:
                    out.add(Change(each.entity, fname, d))
    for c in spec.post:
        for node in X.conjuncts(X.parse(c.check)):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) and not _is_old(node.left):
                at = _attr(node.left, amap)
                d = at and _direction(at[0], at[1], node.comparators[0], amap)
                if at and d:
                    out.add(Change(at[0], at[1], d))
    return sorted(out, key=lambda c: (c.entity, c.field, c.direction))


def inserted_values(spec: ToolSpec) -> dict[str, dict[str, set[Value] | None]]:
    """Entity -> field -> constants a created row can hold (None: not a known constant).

    Entities created without effects (custom tools) map to an empty dict (anything goes).
    """
    enums = {p.name: list(p.enum) for p in spec.params if p.enum}
    out: dict[str, dict[str, set[Value] | None]] = {e: {} for e in spec.creates}
    for ef in spec.effects:
        if ef.op == "insert":
            out[ef.entity] = {f: _constants(t, enums) if (t := _tree(src)) is not None else None for f, src in ef.values.items()}
    for each in spec.each:
        if each.op == "insert" and not out.get(each.entity):
            out[each.entity] = {f: _constants(t, enums) if (t := _tree(src)) is not None else None for f, src in each.values.items()}
    return out


def _signed_terms(node: ast.AST, sign: int, amap: dict[str, str]) -> list[tuple[tuple[str, str], int]]:
    at = _attr(node, amap)
    if at is not None:
        return [(at, sign)]
    if isinstance(node, ast.BinOp):
        right = -sign if isinstance(node.op, ast.Sub | ast.Div) else sign
        return _signed_terms(node.left, sign, amap) + _signed_terms(node.right, right, amap)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _signed_terms(node.operand, -sign, amap)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and node.args:
        return _signed_terms(node.args[0], sign, amap)
    return []


def _requirement(node: ast.expr, amap: dict[str, str], src: str) -> list[Requirement]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "exists" and not _v2_filters(node):
        ent = node.args[0].id  # type: ignore[attr-defined]
        cons = tuple(sorted((kw.arg, kw.value.value) for kw in node.keywords if isinstance(kw.value, ast.Constant)))  # type: ignore[attr-defined]
        return [Requirement("exists", ent, None, cons, src)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exists", "any", "all"):
        return _row_requirements(node, src)
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return []
    op, left, right = node.ops[0], node.left, node.comparators[0]
    if isinstance(op, ast.Eq | ast.Is) and _attr(right, amap) and not _attr(left, amap):
        left, right = right, left
    at = _attr(left, amap)
    if at is not None and isinstance(op, ast.In | ast.Eq | ast.Is):
        return _state_requirement(at, op, right, src)
    if isinstance(op, ast.Gt | ast.GtE | ast.Lt | ast.LtE):
        return _order_requirements(op, left, right, amap, src)
    return []


def _state_requirement(at: tuple[str, str], op: ast.cmpop, right: ast.expr, src: str) -> list[Requirement]:
    """``alias.field == c`` / ``in [c, ...]`` / ``is None``: the field must hold one of those constants."""
    elts = right.elts if isinstance(op, ast.In) and isinstance(right, ast.List | ast.Tuple) else [right]
    if all(isinstance(e, ast.Constant) for e in elts) and (not isinstance(op, ast.Is) or right.value is None):  # type: ignore[attr-defined]
        vals = tuple(sorted({e.value for e in elts}, key=value_key))  # type: ignore[attr-defined]
        return [Requirement("state", at[0], at[1], vals, src)]
    return []


def _order_requirements(op: ast.cmpop, left: ast.expr, right: ast.expr, amap: dict[str, str], src: str) -> list[Requirement]:
    """``a >= b``: each field on the big side must increase enough, each on the small side decrease (``count(...) > n``: a row must exist)."""
    if isinstance(left, ast.Call) and getattr(left.func, "id", None) == "count" and isinstance(op, ast.Gt | ast.GtE):
        return _requirement(ast.Call(func=ast.Name("exists"), args=left.args, keywords=left.keywords), amap, src)
    big = 1 if isinstance(op, ast.Gt | ast.GtE) else -1
    terms = _signed_terms(left, big, amap) + _signed_terms(right, -big, amap)
    return [Requirement("increase" if s > 0 else "decrease", e, f, (), src) for (e, f), s in terms]


def requirements(spec: ToolSpec) -> list[Requirement]:
    """What the tool's pre-conditions need from the state (see the module doc)."""
    amap = {b.alias: b.entity for b in spec.bindings}
    out: list[Requirement] = []
    seen: set[tuple[Any, ...]] = set()
    for c in spec.pre:
        for node in X.conjuncts(X.parse(c.check)):
            for r in _requirement(node, amap, c.check):
                key = (r.how, r.entity, r.field, r.values)
                if key not in seen:
                    seen.add(key)
                    out.append(r)
    return out


def value_constants(spec: ToolSpec, src: str) -> set[Value] | None:
    """Constants an effect value of ``spec`` can take (enum parameters included); None when not all known."""
    tree = _tree(src)
    return None if tree is None else _constants(tree, {p.name: list(p.enum) for p in spec.params if p.enum})


def required_states(spec: ToolSpec) -> list[tuple[str, str, tuple[Value, ...]]]:
    """``(alias, field, accepted constants)`` for each top-level ``alias.field in [...]`` / ``== c`` pre-condition."""
    amap = {b.alias: b.alias for b in spec.bindings}  # the requirement's "entity" is then the alias
    out: list[tuple[str, str, tuple[Value, ...]]] = []
    for c in spec.pre:
        for node in X.conjuncts(X.parse(c.check)):
            for r in _requirement(node, amap, c.check):
                if r.how == "state" and r.field is not None:
                    out.append((r.entity, r.field, r.values))
    return out


def required_children(spec: ToolSpec) -> list[tuple[str, str, str, str]]:
    """``(child entity, child field, alias, alias field)`` for each top-level ``exists(child, field=alias.f, ...)``."""
    aliases_ = {b.alias for b in spec.bindings}
    out: list[tuple[str, str, str, str]] = []
    for c in spec.pre:
        for node in X.conjuncts(X.parse(c.check)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exists", "any")):
                continue
            if not (node.args and isinstance(node.args[0], ast.Name)):
                continue
            for kw in node.keywords:
                v = kw.value
                if kw.arg and isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in aliases_:
                    out.append((node.args[0].id, kw.arg, v.value.id, v.attr))
    return out


def _v2_filters(node: ast.Call) -> bool:
    """Whether a row function uses a list of values or a ``field__op`` filter (language v2)."""
    return any("__" in (kw.arg or "") or isinstance(kw.value, ast.List | ast.Tuple) for kw in node.keywords)


def _row_requirements(node: ast.Call, src: str) -> list[Requirement]:
    """``exists``/``any``/``all`` with v2 filters: one ``exists`` requirement per combination of the values a
    constant list allows (``status=['a', 'b']``: a row with status a, or one with b); ``all`` needs its tests.
    Order filters (``field__gt``) and ``__ne`` constrain nothing another tool establishes, so they are left out."""
    ent = node.args[0].id  # type: ignore[attr-defined]
    fixed: list[tuple[str, Any]] = []
    choices: list[list[tuple[str, Any]]] = []
    for kw in node.keywords:
        key, v = kw.arg or "", kw.value
        if "__" in key:
            continue
        if isinstance(v, ast.Constant):
            fixed.append((key, v.value))
        elif isinstance(v, ast.List | ast.Tuple) and v.elts and all(isinstance(e, ast.Constant) for e in v.elts):
            choices.append([(key, e.value) for e in v.elts])  # type: ignore[attr-defined]
    out = []
    for combo in product(*choices):
        cons = tuple(sorted([*fixed, *combo], key=lambda kv: (kv[0], value_key(kv[1]))))
        out.append(Requirement("exists", ent, None, cons, src))
    return out
