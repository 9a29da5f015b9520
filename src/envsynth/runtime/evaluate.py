"""Evaluating the condition language in Python (the tester, the fixture solver, policy checks).

The generated tools run conditions as Python code of their own; this is the interpreter the
tester and the task pipeline use on row dicts. Its date and filter functions are the
runtime's (:mod:`envsynth.runtime.toolkit`), so both sides mean the same thing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from envsynth.blueprint.expr import DURATION_FUNCTIONS
from envsynth.runtime import toolkit as F

EVALUATION_ERRORS: tuple[type[Exception], ...] = (ArithmeticError, AttributeError, LookupError, NameError, TypeError, ValueError)
"""What evaluating a condition raises on rows or values that do not fit it: a row not bound or a
field missing, a value of another kind, a date that does not parse, a division by zero. Callers
that read such a failure as "the condition does not hold" catch these; anything else is a bug."""


def evaluate(code: Any, namespace: dict[str, Any]) -> Any:
    """Evaluate a compiled, whitelisted expression with only ``namespace`` in scope."""
    return eval(code, _GLOBALS, namespace)


def all_rows(rows: Any) -> Callable[[str, dict[str, Any], dict[str, Any]], bool]:
    """``_all`` over ``rows`` (table -> list of row dicts): every row passing ``sel`` passes ``test``."""
    return lambda t, sel, test: all(F.row_matches(x, test) for x in rows.get(t, ()) if F.row_matches(x, sel))


def row_functions(rows: Any, now: str, tables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The names a condition's helpers have in generated tools, over ``rows`` (table -> list of row dicts):
    ``_exists``, ``_count``, ``_all`` (filters as :func:`~envsynth.runtime.toolkit.row_matches`), the clock
    (``_now``, ``_today``) and the blueprint's lookup tables (``_lookup``)."""
    return {
        "_exists": lambda t, w: any(F.row_matches(r, w) for r in rows.get(t, ())),
        "_count": lambda t, w: sum(F.row_matches(r, w) for r in rows.get(t, ())),
        "_all": all_rows(rows),
        "_lookup": table_lookup(tables),
        "_now": lambda: now,
        "_today": lambda: now[:10],
    }


def table_lookup(tables: dict[str, Any] | None) -> Callable[..., Any]:
    """``_lookup('name', key, ...)`` over a blueprint's lookup tables."""
    return lambda name, *keys: F.lookup((tables or {}).get(name, {}), *keys)


_GLOBALS: dict[str, Any] = {
    "__builtins__": {"len": len, "abs": abs, "round": round, "str": str, "min": min, "max": max},
    "_date_add": F.date_add,
    "_date_sub": F.date_sub,
    **{f"_{d}": getattr(F, d) for d in DURATION_FUNCTIONS},
}
