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

FUNCTIONS = {"old", "now", "today", "exists", "count", "len", "abs", "round", "lower"}
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


class ExprError(ValueError):
    """A condition that does not parse or uses something outside the language."""


@dataclass(frozen=True)
class Expr:
    """A parsed, validated expression. ``source`` is the text as written."""

    source: str
    tree: ast.expr

    def names(self) -> set[str]:
        """Bare names used (parameters, aliases, ``result``), excluding function names."""
        out: set[str] = set()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id not in FUNCTIONS:
                out.add(node.id)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in ("exists", "count") and node.args:
                    first = node.args[0]
                    if isinstance(first, ast.Name):
                        out.discard(first.id)
        return out

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


def _check(node: ast.AST, source: str) -> None:
    def bad(what: str) -> ExprError:
        return ExprError(f"{what} is not allowed in a condition: {source!r}")

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
    elif isinstance(node, ast.Constant):
        if not isinstance(node.value, str | int | float | bool | type(None)):
            raise bad(f"constant {node.value!r}")
    elif isinstance(node, ast.List | ast.Tuple):
        for e in node.elts:
            _check(e, source)
    elif isinstance(node, ast.Name):
        if node.id.startswith("_"):
            raise bad(f"name {node.id!r}")
    elif isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name) or node.attr.startswith("_"):
            raise bad("attribute access other than alias.field")
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            raise ExprError(f"{bad(f'call {ast.unparse(node.func)!r}')}; the functions are {', '.join(sorted(FUNCTIONS))}")
        name = node.func.id
        if name in ("exists", "count"):
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                raise ExprError(f"{name}() takes an entity name then field=value pairs: {source!r}")
            for kw in node.keywords:
                if kw.arg is None:
                    raise bad("**kwargs")
                _check(kw.value, source)
        else:
            if node.keywords:
                raise bad(f"keyword arguments to {name}()")
            for a in node.args:
                _check(a, source)
            if name == "old" and (len(node.args) != 1):
                raise ExprError(f"old() takes one argument: {source!r}")
    else:
        raise bad(type(node).__name__)


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
        name = node.func.id  # type: ignore[attr-defined]
        if name in ("exists", "count"):
            kws = ", ".join(f"{kw.arg!r}: {r(kw.value)}" for kw in node.keywords)
            return f"_{name}({node.args[0].id!r}, {{{kws}}})"  # type: ignore[attr-defined]
        if name == "lower":
            return f"str({r(node.args[0])}).lower()"
        args = ", ".join(r(a) for a in node.args)
        return f"_{name}({args})" if name in ("now", "today", "old") else f"{name}({args})"
    raise ExprError(f"cannot render {ast.dump(node)}")  # pragma: no cover - _check forbids


def plain(node: ast.AST) -> str | None:
    """The default hook: no overrides."""
    return None


def compile_eval(expr: Expr, hook: Renderer = plain) -> Any:
    """Compile to a code object that ``evaluate`` can run."""
    return compile(render(expr, hook), f"<condition {expr.source}>", "eval")


def evaluate(code: Any, namespace: dict[str, Any]) -> Any:
    """Evaluate a compiled, whitelisted expression with only ``namespace`` in scope."""
    return eval(code, {"__builtins__": {"len": len, "abs": abs, "round": round, "str": str}}, namespace)


def conjuncts(expr: Expr) -> list[ast.expr]:
    """Split a top-level ``a and b and c`` into its parts (one part otherwise)."""
    node = expr.tree
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return list(node.values)
    return [node]


def describe(node: ast.expr) -> str:
    """Source text of a sub-expression."""
    return ast.unparse(node)
