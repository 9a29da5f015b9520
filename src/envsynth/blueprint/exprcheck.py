"""Load-time checks of a condition that need the blueprint: row filters, lookup tables and kinds of values.

:func:`check` infers a coarse kind for every sub-expression (``number``, ``text``, ``date``,
``datetime``, ``duration``, ``bool``, ``list``, ``none`` or ``any`` when unknown) from the
fields and parameters it reads, and refuses what would fail at run time with a type error
or silently compare the wrong things: ``now() - 86400`` (a number taken from a date),
``now() - created_at <= 86400`` (a duration compared with a number), two dates subtracted
without ``now()``/``today()``/a duration to mark the arithmetic as date arithmetic.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from itertools import pairwise
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.filters import LOOKUPS, split_key
from envsynth.blueprint.models import Blueprint, Entity
from envsynth.blueprint.tables import depth

_DATES = ("date", "datetime")
_FIELD_KINDS = {
    "money": "number",
    "float": "number",
    "int": "number",
    "quantity": "number",
    "bool": "bool",
    "date": "date",
    "datetime": "datetime",
}
_PARAM_KINDS = {"integer": "number", "number": "number", "boolean": "bool", "array": "list"}
_HINT = "use a duration: days(n), hours(n), minutes(n) or weeks(n)"


class _Checker:
    def __init__(self, bp: Blueprint, source: str, entity_of: Callable[[str], Entity | None], param_kind: dict[str, str]) -> None:
        self.bp = bp
        self.source = source
        self.entity_of = entity_of
        self.param_kind = param_kind

    def fail(self, msg: str) -> X.ExprError:
        return X.ExprError(f"{msg}: {self.source!r}")

    def kind(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant | ast.Name | ast.Attribute):
            return self.leaf_kind(node)
        if isinstance(node, ast.List | ast.Tuple):
            for e in node.elts:
                self.kind(e)
            return "list"
        if isinstance(node, ast.BoolOp):
            for v in node.values:
                self.kind(v)
            return "bool"
        if isinstance(node, ast.UnaryOp):
            k = self.kind(node.operand)
            return "bool" if isinstance(node.op, ast.Not) else k
        if isinstance(node, ast.IfExp):
            self.kind(node.test)
            a, b = self.kind(node.body), self.kind(node.orelse)
            return a if a == b else "any"
        if isinstance(node, ast.BinOp):
            return self.binop(node)
        if isinstance(node, ast.Compare):
            self.compare(node)
            return "bool"
        if isinstance(node, ast.Call):
            return self.call(node)
        return "any"

    def leaf_kind(self, node: ast.Constant | ast.Name | ast.Attribute) -> str:
        """The kind of a constant, a parameter or ``alias.field`` (``any`` when unknown)."""
        if isinstance(node, ast.Constant):
            v = node.value
            return "none" if v is None else "bool" if isinstance(v, bool) else "number" if isinstance(v, int | float) else "text"
        if isinstance(node, ast.Name):
            return self.param_kind.get(node.id, "any")
        ent = self.entity_of(node.value.id) if isinstance(node.value, ast.Name) else None
        if ent is None or not ent.has(node.attr):
            return "any"
        return _FIELD_KINDS.get(ent.field(node.attr).type, "text")

    def binop(self, node: ast.BinOp) -> str:
        a, b = self.kind(node.left), self.kind(node.right)
        if "any" in (a, b):
            return "any" if not X.temporal(node) else ("duration" if a in _DATES and b in _DATES else "any")
        text = ast.unparse(node)
        if isinstance(node.op, ast.Add | ast.Sub):
            return self.plus_minus(node, a, b, text)
        if "duration" in (a, b) and isinstance(node.op, ast.Mult | ast.Div):
            if {a, b} == {"duration", "number"}:
                return "duration"
            if isinstance(node.op, ast.Div) and a == b == "duration":
                return "number"
        if a in _DATES or b in _DATES or "duration" in (a, b):
            raise self.fail(f"{text} multiplies or divides a date or a duration in a way that means nothing; {_HINT}")
        return "number" if a == b == "number" else "any"

    def plus_minus(self, node: ast.BinOp, a: str, b: str, text: str) -> str:
        sub = isinstance(node.op, ast.Sub)
        if (a in _DATES and b == "number") or (b in _DATES and a == "number"):
            raise self.fail(f"{text} {'takes a number from' if sub else 'adds a number to'} a date; {_HINT}")
        if "duration" in (a, b) and "number" in (a, b):
            raise self.fail(f"{text} mixes a duration and a number; {_HINT}")
        if a in _DATES and b in _DATES:
            if not sub:
                raise self.fail(f"{text} adds two dates; add a duration to a date instead")
            if not X.temporal(node):
                raise self.fail(
                    f"{text} subtracts two dates without now(), today() or a duration in it; "
                    "compare the dates instead, for example 'a - b <= days(30)' as 'a <= b + days(30)'"
                )
            return "duration"
        if a in _DATES and b == "duration":
            return a
        if b in _DATES and a == "duration":
            if sub:
                raise self.fail(f"{text} takes a date from a duration; write the date first")
            return b
        if a == b == "duration":
            return "duration"
        return "number" if a == b == "number" else "any"

    def compare(self, node: ast.Compare) -> None:
        kinds = [self.kind(node.left)] + [self.kind(c) for c in node.comparators]
        for (a, b), op in zip(pairwise(kinds), node.ops, strict=True):
            if isinstance(op, ast.In | ast.NotIn | ast.Is | ast.IsNot) or "any" in (a, b) or "none" in (a, b):
                continue
            pair = {a, b}
            if "duration" in pair and pair != {"duration"}:
                other = (pair - {"duration"}).pop()
                raise self.fail(f"{ast.unparse(node)} compares a duration with a {other}; {_HINT}")
            if pair & set(_DATES) and pair & {"number", "bool"}:
                raise self.fail(
                    f"{ast.unparse(node)} compares a date with a number; compare it with a date (today(), now() - days(n), a date field)"
                )

    def call(self, node: ast.Call) -> str:
        name = node.func.id  # type: ignore[attr-defined]
        if name in X.ROW_FUNCTIONS:
            self.rows(node)
            return "number" if name == "count" else "bool"
        kinds = [self.kind(a) for a in node.args]
        if name in X.DURATION_FUNCTIONS:
            if kinds[0] not in ("number", "any"):
                raise self.fail(f"{name}() takes a number, got a {kinds[0]}")
            return "duration"
        if name == "lookup":
            return self.lookup(node)
        return {
            "now": "datetime",
            "today": "date",
            "len": "number",
            "lower": "text",
        }.get(name, kinds[0] if name in ("old", "abs", "round") else _common(kinds) if name in ("min", "max") else "any")

    def lookup(self, node: ast.Call) -> str:
        tname = node.args[0].value  # type: ignore[attr-defined]
        tables = getattr(self.bp, "tables", None) or {}
        if tname not in tables:
            known = ", ".join(sorted(tables)) or "none: declare one under the top-level key 'tables'"
            raise self.fail(f"lookup table {tname!r} does not exist (tables: {known})")
        want = depth(tables[tname])
        if len(node.args) - 1 != want:
            raise self.fail(f"lookup({tname!r}, ...) takes {want} key(s), one per level of the table, got {len(node.args) - 1}")
        return "any"

    def rows(self, node: ast.Call) -> None:
        ent_name = node.args[0].id  # type: ignore[attr-defined]
        if not self.bp.has_entity(ent_name):
            raise self.fail(f"{node.func.id}(): {ent_name!r} is not an entity (entities: {[e.name for e in self.bp.entities]})")  # type: ignore[attr-defined]
        ent = self.bp.entity(ent_name)
        keywords = list(node.keywords)
        if len(node.args) == 2:
            keywords += node.args[1].keywords  # type: ignore[attr-defined]
        for kw in keywords:
            self.filter(ent, kw.arg or "", kw.value)

    def filter(self, ent: Entity, key: str, value: ast.expr) -> None:
        name, op = split_key(key)
        if ent.has(key) and op != "eq":
            raise self.fail(f"{ent.name}.{key} cannot be filtered on: its name ends like a lookup (__{op}); rename the field")
        if not ent.has(name):
            raise self.fail(
                f"{ent.name} has no field {name!r} (a filter is field=value, or field__op=value with op one of {', '.join(LOOKUPS)})"
            )
        vk = self.kind(value)
        fk = _FIELD_KINDS.get(ent.field(name).type, "text")
        if vk == "list" and op not in ("eq", "ne"):
            raise self.fail(f"{key}=[...]: a list of values goes with field=[...] (one of) or field__ne=[...] (none of)")
        if op in ("lt", "lte", "gt", "gte") and fk in ("bool", "text") and ent.field(name).type not in _DATES:
            raise self.fail(f"{key}: {op} compares numbers or dates, and {ent.name}.{name} is neither")
        if vk == "duration" or (vk in _DATES and fk == "number") or (fk in _DATES and vk in ("number", "bool")):
            raise self.fail(f"{key}={ast.unparse(value)} compares {ent.name}.{name} ({ent.field(name).type}) with a {vk}")


def _common(kinds: list[str]) -> str:
    known = {k for k in kinds if k != "any"}
    return known.pop() if len(known) == 1 else "any"


def check(e: X.Expr, bp: Blueprint, entity_of: Callable[[str], Entity | None], params: list[Any]) -> None:
    """Refuse row filters on unknown fields, unknown lookup tables and date arithmetic that cannot work.

    Args:
        e: the parsed expression.
        bp: the blueprint (entities and ``tables``).
        entity_of: the entity of a row alias, None for other names.
        params: the tool's parameters (``ParamSpec``), for their kinds.

    Raises:
        ExprError: naming the sub-expression and what to write instead.
    """
    kinds = {}
    for p in params:
        sem = getattr(p, "semantic", "")
        kinds[p.name] = sem if sem in _DATES else _FIELD_KINDS.get(sem) or _PARAM_KINDS.get(p.type, "text")
    _Checker(bp, e.source, entity_of, kinds).kind(e.tree)


def check_stored(e: X.Expr, bp: Blueprint, field_type: str, entity_of: Callable[[str], Entity | None], params: list[Any]) -> None:
    """Refuse a value whose kind the column of type ``field_type`` cannot hold (a duration, a datetime in a date...).

    Raises:
        ExprError: saying what to store instead.
    """
    kinds = {
        p.name: (
            getattr(p, "semantic", "")
            if getattr(p, "semantic", "") in _DATES
            else _FIELD_KINDS.get(getattr(p, "semantic", "")) or _PARAM_KINDS.get(p.type, "text")
        )
        for p in params
    }
    kind = _Checker(bp, e.source, entity_of, kinds).kind(e.tree)
    col = _FIELD_KINDS.get(field_type, "text")
    if kind == "duration":
        raise X.ExprError(
            f"{e.source!r} is a duration, which a {field_type} column cannot hold; store a date (today() + days(30)) "
            "or a number ((now() - x.at) / hours(1))"
        )
    if col in _DATES and kind in _DATES and kind != col:
        fix = "today() or a date" if col == "date" else "now() or a datetime"
        raise X.ExprError(f"{e.source!r} is a {kind}, and the column is a {col}: use {fix}")
    if (col in _DATES and kind in ("number", "bool")) or (col == "number" and kind in _DATES):
        raise X.ExprError(f"{e.source!r} is a {kind}, and the column is a {field_type}")
