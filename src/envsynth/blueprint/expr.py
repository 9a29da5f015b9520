"""The condition language: small, declarative expressions over entity rows and parameters.

A condition is a Python-like expression, for example::

    order.status == 'paid'
    account.balance >= amount
    product.stock - quantity >= 0 and product.status in ['active', 'low_stock']
    not exists(customer, email=email)
    account.balance == old(account.balance) - amount

Names are either action parameters (``amount``) or row aliases bound by the action
(``order``); ``alias.field`` reads a column of that row. ``old(x)`` (post-conditions
only) is the value before the call, ``result`` the tool's return value, ``now()`` the
episode clock, ``exists(entity, field=value, ...)`` / ``count(entity, ...)`` look for rows.

The source is parsed with :mod:`ast` and checked node by node against a whitelist, then
turned into Python source text with a renderer (generated tools and the tester render
the same tree differently). Nothing outside the whitelist ever reaches ``eval``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envsynth.errors import EnvsynthError

FUNCTIONS = {"old", "now", "today", "exists", "count", "len", "abs", "round", "lower"}
DURATION_FUNCTIONS = ("weeks", "days", "hours", "minutes")
ROW_FUNCTIONS = ("exists", "count", "any", "all")  # look for rows: an entity name, then filters
FUNCTIONS |= {*DURATION_FUNCTIONS, "any", "all", "where", "min", "max", "lookup"}
_TEMPORAL_CALLS = {"now", "today", *DURATION_FUNCTIONS}
_CMP = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%"}


class ExprError(EnvsynthError, ValueError):
    """A condition that does not parse or uses something outside the language."""


@dataclass(frozen=True)
class Expr:
    """A parsed, validated expression. ``source`` is the text as written."""

    source: str
    tree: ast.expr

    def names(self) -> set[str]:
        """Bare names used (parameters, aliases, ``result``), excluding function names."""
        skip: set[int] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                skip.add(id(node.func))
                if node.func.id in ROW_FUNCTIONS and node.args and isinstance(node.args[0], ast.Name):
                    skip.add(id(node.args[0]))
        return {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name) and id(n) not in skip}

    def fields(self) -> set[tuple[str, str]]:
        """``(alias, field)`` pairs read by the expression."""
        return {(n.value.id, n.attr) for n in ast.walk(self.tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}

    def uses_old(self) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "old" for n in ast.walk(self.tree))


@lru_cache(maxsize=4096)
def parse(source: str) -> Expr:
    """Parse and validate one expression.

    Raises:
        ExprError: with a message naming the offending construct.
    """
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ExprError(f"cannot parse {source!r}: {exc.msg}") from None
    _check(tree, source)
    return Expr(source=source, tree=tree)


def _bad(what: str, source: str) -> ExprError:
    return ExprError(f"{what} is not allowed in the condition language: {source!r}")


_ARITY = {"now": (0, 0), "today": (0, 0), "old": (1, 1), "len": (1, 1), "abs": (1, 1), "lower": (1, 1), "round": (1, 2)}
_ARITY |= {d: (1, 1) for d in DURATION_FUNCTIONS} | {"min": (2, 99), "max": (2, 99), "lookup": (2, 99)}


def _check_call(node: ast.Call, source: str) -> None:
    """A call: one of :data:`FUNCTIONS`, with the arguments it takes."""
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        raise ExprError(
            f"call {ast.unparse(node.func)!r} is not allowed in the condition language: {source!r}; "
            f"the functions are {', '.join(sorted(FUNCTIONS - {'where'}))}"
        )
    name = node.func.id
    if name in ROW_FUNCTIONS:
        _check_rows(node, source)
        return
    if name == "where":
        raise ExprError(f"where(...) is only allowed as the second argument of all(entity, where(...), field=value): {source!r}")
    if node.keywords:
        raise _bad(f"keyword arguments to {name}()", source)
    lo, hi = _ARITY[name]
    if not lo <= len(node.args) <= hi:
        takes = f"{lo}" if lo == hi else f"{lo} or more" if hi == 99 else f"{lo} to {hi}"
        raise ExprError(f"{name}() takes {takes} argument(s), got {len(node.args)}: {source!r}")
    if name == "lookup" and not (isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        raise ExprError(f"lookup() takes a table name in quotes first, then one key per level: {source!r}")
    for a in node.args:
        _check(a, source)


def _check_rows(node: ast.Call, source: str) -> None:
    """``exists``/``count``/``any``/``all``: an entity name, (for ``all`` a ``where(...)``,) then ``field=value`` filters."""
    name = node.func.id  # type: ignore[attr-defined]
    shape = (
        "all() takes an entity name, where(field=value, ...) choosing the rows, then field=value tests they must all pass"
        if name == "all"
        else f"{name}() takes an entity name then field=value pairs"
    )
    if not node.args or not isinstance(node.args[0], ast.Name) or len(node.args) > (2 if name == "all" else 1):
        raise ExprError(f"{shape}: {source!r}")
    keywords = list(node.keywords)
    if name == "all":
        sel = node.args[1] if len(node.args) == 2 else None
        if sel is not None:
            if not (isinstance(sel, ast.Call) and isinstance(sel.func, ast.Name) and sel.func.id == "where" and not sel.args):
                raise ExprError(f"{shape}: {source!r}")
            keywords += sel.keywords
        if not node.keywords:
            raise ExprError(f"{shape} (no test given): {source!r}")
    for kw in keywords:
        if kw.arg is None:
            raise _bad("**kwargs", source)
        _check(kw.value, source)


def temporal(node: ast.AST) -> bool:
    """Whether ``node`` is date arithmetic or a duration by its form: a call of ``now``, ``today`` or a duration
    function, or arithmetic, a conditional, ``min``/``max``/``abs``/``round``/``old`` over one.

    ``+`` and ``-`` with a temporal operand are rendered as ``date_add``/``date_sub`` (dates are ISO strings).
    """
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in _TEMPORAL_CALLS:
            return True
        return node.func.id in ("min", "max", "abs", "round", "old") and any(temporal(a) for a in node.args)
    if isinstance(node, ast.BinOp):
        return temporal(node.left) or temporal(node.right)
    if isinstance(node, ast.IfExp):
        return temporal(node.body) or temporal(node.orelse)
    return False


def _check(node: ast.AST, source: str) -> None:
    def bad(what: str) -> ExprError:
        return _bad(what, source)

    if isinstance(node, ast.BoolOp):
        for v in node.values:
            _check(v, source)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, ast.Not | ast.USub):
            raise bad(type(node.op).__name__)
        _check(node.operand, source)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BIN:
            raise bad(f"operator {type(node.op).__name__}")
        _check(node.left, source)
        _check(node.right, source)
    elif isinstance(node, ast.Compare):
        for op in node.ops:
            if type(op) not in _CMP:
                raise bad(f"comparison {type(op).__name__}")
        _check(node.left, source)
        for c in node.comparators:
            _check(c, source)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            _check(part, source)
    else:
        _check_operand(node, source)


def _check_operand(node: ast.AST, source: str) -> None:
    """Check a node that is not an operator: a constant, a list, a name, ``alias.field`` or a call."""
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, str | int | float | bool | type(None)):
            raise _bad(f"constant {node.value!r}", source)
    elif isinstance(node, ast.List | ast.Tuple):
        for e in node.elts:
            _check(e, source)
    elif isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise _bad(f"name {node.id!r}", source)
    elif isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name) or node.attr.startswith("_"):
            raise _bad("attribute access other than alias.field", source)
    elif isinstance(node, ast.Call):
        _check_call(node, source)
    else:
        raise _bad(type(node).__name__, source)


Renderer = Callable[[ast.AST], str | None]


def render(expr: Expr | ast.expr, hook: Renderer) -> str:
    """Render to Python source. ``hook`` may return text for a node to override it."""
    node = expr.tree if isinstance(expr, Expr) else expr
    return _render(node, hook)


def _render(node: ast.AST, hook: Renderer) -> str:
    custom = hook(node)
    if custom is not None:
        return custom
    r = lambda n: _render(n, hook)  # noqa: E731
    if isinstance(node, ast.BoolOp):
        op = " and " if isinstance(node.op, ast.And) else " or "
        return "(" + op.join(r(v) for v in node.values) + ")"
    if isinstance(node, ast.UnaryOp):
        return f"(not {r(node.operand)})" if isinstance(node.op, ast.Not) else f"(-{r(node.operand)})"
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Add | ast.Sub) and temporal(node):
            return f"_date_{'add' if isinstance(node.op, ast.Add) else 'sub'}({r(node.left)}, {r(node.right)})"
        return f"({r(node.left)} {_BIN[type(node.op)]} {r(node.right)})"
    if isinstance(node, ast.Compare):
        parts = [r(node.left)]
        for op, c in zip(node.ops, node.comparators, strict=True):
            parts += [_CMP[type(op)], r(c)]
        return "(" + " ".join(parts) + ")"
    if isinstance(node, ast.IfExp):
        return f"({r(node.body)} if {r(node.test)} else {r(node.orelse)})"
    if isinstance(node, ast.Constant):
        return repr(node.value)
    if isinstance(node, ast.List | ast.Tuple):
        return "(" + "".join(r(e) + ", " for e in node.elts) + ")"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{r(node.value)}[{node.attr!r}]"
    if isinstance(node, ast.Call):
        return _render_call(node, r)
    raise ExprError(f"cannot render {ast.dump(node)}")  # pragma: no cover - _check forbids


def _render_call(node: ast.Call, r: Callable[[ast.AST], str]) -> str:
    """A call rendered: row functions and the language's own functions as runtime helpers (``_exists``, ``_now``)."""
    name = node.func.id  # type: ignore[attr-defined]
    if name in ROW_FUNCTIONS:
        table, sel, test = row_call(node, r)
        if name == "all":
            return f"_all({table!r}, {sel}, {test})"
        return f"_{'exists' if name == 'any' else name}({table!r}, {sel})"
    if name == "lower":
        return f"str({r(node.args[0])}).lower()"
    if name == "lookup":
        return f"_lookup({', '.join(r(a) for a in node.args)})"
    args = ", ".join(r(a) for a in node.args)
    return f"_{name}({args})" if name in ("now", "today", "old", *DURATION_FUNCTIONS) else f"{name}({args})"


def row_call(node: ast.Call, r: Callable[[ast.AST], str]) -> tuple[str, str, str]:
    """``(entity, selecting filters, tested filters)`` of a row function, the filters rendered as dict literals.

    For ``exists``/``count``/``any`` every filter selects and the tests are ``{}``; for ``all`` the
    ``where(...)`` filters select and the others are the tests.
    """
    table = node.args[0].id  # type: ignore[attr-defined]
    if node.func.id == "all":  # type: ignore[attr-defined]
        sel_kws = node.args[1].keywords if len(node.args) == 2 else []  # type: ignore[attr-defined]
        test_kws = node.keywords
    else:
        sel_kws, test_kws = node.keywords, []
    fmt = lambda kws: "{" + ", ".join(f"{kw.arg!r}: {r(kw.value)}" for kw in kws) + "}"  # noqa: E731
    return table, fmt(sel_kws), fmt(test_kws)


def plain(node: ast.AST) -> str | None:
    """The default hook: no overrides."""
    return None


def compile_eval(expr: Expr, hook: Renderer = plain) -> Any:
    """Compile to a code object that ``evaluate`` can run."""
    return compile(render(expr, hook), f"<condition {expr.source}>", "eval")


def conjuncts(expr: Expr) -> list[ast.expr]:
    """Split a top-level ``a and b and c`` into its parts (one part otherwise)."""
    node = expr.tree
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return list(node.values)
    return [node]


def describe(node: ast.expr) -> str:
    """Source text of a sub-expression."""
    return ast.unparse(node)
