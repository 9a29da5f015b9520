"""Choosing values for the fixture solver: a valid random argument, or one that makes a comparison hold.

:class:`~envsynth.testing.fixtures.Solver` repairs a condition one comparison at a time; once
it knows which field or parameter to change and the value on the other side, :func:`pick`
chooses the new value (``x >= e`` gives ``e`` or a bit more, ``x != e`` another choice,
``x in [...]`` one of the list), kept within the field's or parameter's bounds. The
drawing helpers (:func:`filter_value`, :func:`draw_number`) give a fresh argument that a
query's target row or a parameter's schema admits.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import random
from typing import Any

from envsynth.blueprint.models import FieldDef
from envsynth.blueprint.spec import ParamSpec
from envsynth.errors import EnvsynthError
from envsynth.runtime import evaluate as E
from envsynth.testing import steer

NEGATE = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
MIRROR = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
_ORDERED = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


class Unsolvable(EnvsynthError):
    """No assignment found for a condition."""


def compare(op: type, a: Any, b: Any) -> bool:
    """Whether ``a <op> b`` holds for an ``ast`` comparison operator (False when it cannot be evaluated)."""
    try:
        return {
            ast.Eq: lambda: a == b,
            ast.NotEq: lambda: a != b,
            ast.In: lambda: a in b,
            ast.NotIn: lambda: a not in b,
            ast.Lt: lambda: a < b,
            ast.LtE: lambda: a <= b,
            ast.Gt: lambda: a > b,
            ast.GtE: lambda: a >= b,
            ast.Is: lambda: a is b,
            ast.IsNot: lambda: a is not b,
        }[op]()
    except E.EVALUATION_ERRORS:
        return False


def filter_value(flt: Any, target: dict[str, Any], rng: random.Random) -> Any:
    """An argument for a query filter that the query's target row passes (a word of it for ``contains``)."""
    v = target.get(flt.field)
    if v is None:
        return None
    if flt.op == "contains":
        text = str(v)
        words = [w for w in text.split() if len(w) >= 3] or [text]
        return rng.choice(words).lower()
    if flt.op == "in":
        return [v]
    if flt.op in _BOUNDS:
        return round_bound(v, flt.op)
    return v


_BOUNDS = frozenset(("gte", "gt", "lte", "lt"))


def round_bound(v: Any, op: str) -> Any:
    """A bound a person would say for a row's value ``v`` that the value still passes: "at most $65", not "at most $61.81".

    A lower bound (``gte``/``gt``) is rounded down, an upper one (``lte``/``lt``) up, to a step that grows with the
    value (1 under 10, 5 under 100, 10 under 1,000, 50 under 10,000, then 100; whole integers under 20 stay as they
    are); a strict bound that lands on ``v`` moves one step further. Anything but a number is returned as it is.
    """
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return v
    step = _step(abs(v), isinstance(v, int))
    lower = op in ("gte", "gt")
    bound = math.floor(v / step) * step if lower else math.ceil(v / step) * step
    if op in ("gt", "lt") and bound == v:
        bound += -step if lower else step
    return int(bound) if isinstance(v, int) else float(bound)


def _step(size: float, whole: bool) -> int:
    """The rounding step of a bound near ``size`` (1 for a small whole number: a person says it as it is)."""
    if whole and size < 20:
        return 1
    for below, step in ((10, 1), (100, 5), (1_000, 10), (10_000, 50)):
        if size < below:
            return step
    return 100


def draw_number(p: ParamSpec, rng: random.Random) -> int | float:
    """A random number within an integer or number parameter's bounds (at most 40 above the lower one); a number
    parameter's is round when the bounds allow: whole for money, a multiple of 0.5 else."""
    if p.minimum is not None:
        lo = p.minimum
    elif p.exclusive_minimum is not None:
        lo = p.exclusive_minimum + (1 if p.type == "integer" else 0.01)
    else:
        lo = 1
    hi = p.maximum if p.maximum is not None else max(lo + 10, 20)
    hi = min(hi, lo + 40)
    if p.type == "integer":
        return rng.randint(int(lo), int(hi))
    if math.ceil(lo) <= math.floor(hi):  # an amount as a person says it: "$25", "2.5 hours", not "$2.64"
        step = 1.0 if p.semantic == "money" else 0.5
        return float(rng.randint(math.ceil(lo / step), math.floor(hi / step)) * step)
    return round(rng.uniform(lo, hi), 2)


def pick(rng: random.Random, op: type, v: Any, f: FieldDef | None, p: ParamSpec | None, current: Any) -> Any:
    """A value ``x`` of field ``f`` or parameter ``p`` such that ``x <op> v`` holds.

    Args:
        rng: The solver's random stream.
        op: The ``ast`` comparison operator the value must satisfy.
        v: The value on the other side.
        f: The entity field being assigned, if any.
        p: The parameter being assigned, if any.
        current: The value it has now (kept where any non-null value does).

    Raises:
        Unsolvable: No value within the field's or parameter's bounds and choices fits.
    """
    choices = (f.choices if f else None) or (p.enum if p else None)
    is_int = (f is not None and f.type in ("int", "quantity")) or (p is not None and p.type == "integer")
    lo = f.lower_bound if f is not None else (p.minimum if p is not None else None)
    hi = f.max if f is not None else (p.maximum if p is not None else None)
    if p is not None and p.exclusive_minimum is not None:
        lo = p.exclusive_minimum + (1 if is_int else 0.01)
    out = _raw(rng, op, v, choices, is_int, hi, current)
    out = steer.fit_stamp(out, steer.field_kind(f, p.semantic if p is not None else None), op)
    if isinstance(out, int | float) and not isinstance(out, bool):
        out = _fit_number(op, out, v, is_int, lo, hi)
    return out


def _raw(rng: random.Random, op: type, v: Any, choices: Any, is_int: bool, hi: Any, current: Any) -> Any:
    """The value before dates are fitted and numbers bounded."""
    if op is ast.Eq:
        return v
    if op is ast.NotEq:
        return _other(rng, v, choices, hi, current)
    if op in (ast.In, ast.NotIn):
        pool = list(v)
        if op is ast.In:
            if not pool:
                raise Unsolvable("empty list")
            return rng.choice(pool)
        others = [c for c in (choices or []) if c not in pool]
        if not others:
            raise Unsolvable("nothing outside the list")
        return rng.choice(others)
    if op is ast.Is:
        return None
    if op is ast.IsNot:
        return current if current is not None else (rng.choice(choices) if choices else 1 if is_int else "x")
    return ordered(rng, op, v, is_int)


def _other(rng: random.Random, v: Any, choices: Any, hi: Any, current: Any) -> Any:
    """A value different from ``v``."""
    if choices:
        others = [c for c in choices if c != v]
        if not others:
            raise Unsolvable("no other choice")
        return rng.choice(others)
    if isinstance(v, bool):
        return not v
    if isinstance(v, int | float):
        return v + 1 if hi is None or v + 1 <= hi else v - 1
    if v is None:
        return current if current is not None else "x"
    return f"{v} II"


def _fit_number(op: type, out: int | float, v: Any, is_int: bool, lo: Any, hi: Any) -> int | float:
    """``out`` clamped into ``[lo, hi]`` for an order comparison, made an integer or rounded, then checked."""
    if op in _ORDERED:  # a random margin may overshoot a bound
        if lo is not None and out < lo:
            out = lo
        if hi is not None and out > hi:
            out = hi
    if is_int:
        if out != int(out):
            out = int(out) + (1 if op in (ast.Gt, ast.GtE) else 0)
        out = int(out)
    elif isinstance(out, float):
        out = round(out, 2)
    if op in _ORDERED and not compare(op, out, v):
        raise Unsolvable(f"no value within bounds is {op.__name__} {v}")
    if (lo is not None and out < lo) or (hi is not None and out > hi):
        raise Unsolvable(f"{out} is out of bounds")
    return out


def ordered(rng: random.Random, op: type, v: Any, is_int: bool) -> Any:
    """A value on the ``op`` side of ``v`` (a date a few days away, a number with a random margin)."""
    if isinstance(v, str):
        day = dt.date.fromisoformat(v[:10])
        shift = {ast.GtE: rng.randint(0, 5), ast.Gt: rng.randint(1, 5), ast.LtE: -rng.randint(0, 5), ast.Lt: -rng.randint(1, 5)}[op]
        new = (day + dt.timedelta(days=shift)).isoformat()
        return new + v[10:]
    step = 1 if is_int else 0.01
    spread = rng.choice([0, 0, 1, 2, 5]) if is_int else rng.choice([0.0, 0.0, 1.0, 2.5, 10.0])
    if op is ast.GtE:
        return v + spread
    if op is ast.Gt:
        return v + step + spread
    if op is ast.LtE:
        return v - spread
    return v - step - spread
