"""Steering the condition language's functions: how the fixture solver makes them true or false.

:class:`~envsynth.testing.fixtures.Solver` handles comparisons, ``and``/``or``/``not`` and
``exists``; this module adds what sits behind a function call:

* row functions: ``exists``/``any`` (add a row that passes the filters, or drop / spoil the
  rows that do), ``all`` (make every selected row pass the tests, or one fail them) and
  ``count(...) <op> n`` (add or drop matching rows until the count fits);
* ``len(x)``, ``abs(e)``, ``round(e, n)``, ``min(...)``/``max(...)``, the duration functions
  (``days(x) <= days(14)`` solves ``x``) and ``lookup('table', k1, k2, ...)`` (pick an entry
  whose value fits, then make each key argument equal its key).

Every function raises :class:`~envsynth.testing.fixtures.Unsolvable` with the true reason
when it cannot steer, so the tester's detail can say it.
"""

from __future__ import annotations

import ast
import datetime as dt
from typing import TYPE_CHECKING, Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.tables import leaves
from envsynth.errors import EnvsynthError
from envsynth.runtime import toolkit as F
from envsynth.runtime.evaluate import EVALUATION_ERRORS

if TYPE_CHECKING:
    from envsynth.blueprint.models import Entity, FieldDef
    from envsynth.testing.fixtures import Fixture, Solver

_ORDER = {"lt": ast.Lt, "lte": ast.LtE, "gt": ast.Gt, "gte": ast.GtE}
_FLIP = {
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
STEERED_CALLS = ("count", "len", "abs", "round", "min", "max", "lookup", *X.DURATION_FUNCTIONS)


_TRY_NEXT = (EnvsynthError, *EVALUATION_ERRORS)
"""What makes the solver try its next option: an :class:`~envsynth.testing.fixtures.Unsolvable` (an
EnvsynthError, imported late: fixtures imports this module) or a value that does not fit."""


def _unsolvable(msg: str) -> Exception:
    from envsynth.testing.choose import Unsolvable

    return Unsolvable(msg)


def call_name(node: ast.AST) -> str | None:
    """The function name of a call node, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def filters(solver: Solver, fx: Fixture, node: ast.Call) -> tuple[Entity, dict[str, Any], dict[str, Any]]:
    """The entity, the selecting filters and the tests (``all`` only) of a row function, evaluated."""
    ent = solver.bp.entity(node.args[0].id)  # type: ignore[attr-defined]
    sel_kws = node.args[1].keywords if len(node.args) == 2 else []  # type: ignore[attr-defined]
    if call_name(node) == "all":
        sel = {kw.arg: solver.value(fx, kw.value) for kw in sel_kws}
        test = {kw.arg: solver.value(fx, kw.value) for kw in node.keywords}
    else:
        sel, test = {kw.arg: solver.value(fx, kw.value) for kw in node.keywords}, {}
    return ent, sel, test  # type: ignore[return-value]


def _key(ent: Entity, key: str) -> tuple[str, str]:
    return (key, "eq") if ent.has(key) else F.split_key(key)


def passing_value(solver: Solver, fx: Fixture, ent: Entity, key: str, v: Any, want: bool = True) -> Any:
    """A value of the filtered field that passes (``want``) or fails the filter ``key=v``."""
    name, op = _key(ent, key)
    f = ent.field(name)
    if want and op == "eq" and not isinstance(v, list | tuple):
        return v
    sym = _filter_op(op, v, want)
    if f.type in ("ref", "id"):
        return _passing_id(solver, fx, ent, f, key, op, v, want)
    if sym is ast.NotIn and not (f.choices or ()):
        nums = [x for x in v if isinstance(x, int | float) and not isinstance(x, bool)]
        return max(nums) + 1 if nums and len(nums) == len(v) else f"{v[0]} II" if v else "x"
    if sym is ast.NotEq and f.type in ("date", "datetime") and isinstance(v, str):
        sym = ast.Gt
    return solver._pick(sym, v, f, None, None)


def _filter_op(op: str, v: Any, want: bool) -> type:
    """The comparison a filter ``field__op=v`` makes (negated unless ``want``)."""
    if op in _ORDER:
        sym: type = _ORDER[op]
    elif isinstance(v, list | tuple):
        sym = ast.In if op == "eq" else ast.NotIn
    else:
        sym = ast.Eq if op == "eq" else ast.NotEq
    return sym if want else _FLIP[sym]


def _passing_id(solver: Solver, fx: Fixture, ent: Entity, f: FieldDef, key: str, op: str, v: Any, want: bool) -> Any:
    """An existing id (of ``ent``, or of the table ``f`` refers to) that passes (``want``) or fails ``key=v``."""
    target = solver.bp.entity(f.ref or "") if f.type == "ref" else ent
    ids = [r[target.id_field] for r in fx.rows.get(target.name, []) if F.value_matches(r[target.id_field], op, v) == want]
    if not ids:
        raise _unsolvable(f"no {target.name} id {'passes' if want else 'fails'} {key}={v!r}")
    return solver.rng.choice(ids)


def concrete(solver: Solver, fx: Fixture, ent: Entity, where: dict[str, Any]) -> dict[str, Any]:
    """Column values for a new row that passes every filter of ``where``."""
    out: dict[str, Any] = {}
    for key, v in where.items():
        name, _ = _key(ent, key)
        if name in out and F.value_matches(out[name], _key(ent, key)[1], v):
            continue
        out[name] = passing_value(solver, fx, ent, key, v)
    if not F.row_matches(out, {k: v for k, v in where.items()}):
        raise _unsolvable(f"the filters {where!r} of {ent.name} contradict each other")
    return out


def _bound(fx: Fixture) -> set[int]:
    return {id(r) for r in fx.aliases.values() if r is not None}


def add_row(solver: Solver, fx: Fixture, ent: Entity, values: dict[str, Any]) -> dict[str, Any]:
    """Insert a row of ``ent`` with ``values`` into the fixture."""
    if fx.builder is None:
        raise _unsolvable("no state builder")
    row = fx.builder.add(ent, values)
    if row is None:
        raise _unsolvable(f"cannot add a {ent.name} row (a table it refers to is empty)")
    return row


def spoil(solver: Solver, fx: Fixture, ent: Entity, row: dict[str, Any], where: dict[str, Any], refs: bool = False) -> None:
    """Change one filtered, non-key field of ``row`` so that it no longer passes ``where`` (``refs``: a
    reference may change too, after the plain fields, when none of them can)."""
    keys = [k for k in where if ent.field(_key(ent, k)[0]).type not in ("id", "ref")]
    solver.rng.shuffle(keys)
    if refs:
        keys += [k for k in where if ent.field(_key(ent, k)[0]).type == "ref"]
    for key in keys:
        try:
            row[_key(ent, key)[0]] = passing_value(solver, fx, ent, key, where[key], want=False)
            return
        except _TRY_NEXT:  # an Unsolvable or a value that does not fit: try the next filter
            continue
    raise _unsolvable(f"a bound {ent.name} row passes {where!r} and no filter of it can be changed")


def remove_matches(solver: Solver, fx: Fixture, ent: Entity, where: dict[str, Any], keep: int = 0) -> None:
    """Leave at most ``keep`` rows of ``ent`` passing ``where``: drop unbound ones, spoil bound ones."""
    matching = [r for r in fx.rows[ent.name] if F.row_matches(r, where)]
    bound = _bound(fx)
    matching.sort(key=lambda r: id(r) in bound, reverse=True)  # keep bound rows when some may stay
    for r in matching[keep:]:
        if id(r) in bound:
            spoil(solver, fx, ent, r, where)
        else:
            solver._drop(fx, ent.name, r)


def make_rows(solver: Solver, fx: Fixture, node: ast.Call, want: bool) -> None:
    """Make ``exists``/``any``/``all`` evaluate to ``want``."""
    ent, sel, test = filters(solver, fx, node)
    if call_name(node) != "all":
        if want:
            add_row(solver, fx, ent, concrete(solver, fx, ent, sel))
        else:
            remove_matches(solver, fx, ent, sel)
        return
    selected = [r for r in fx.rows[ent.name] if F.row_matches(r, sel)]
    if want:
        for r in selected:
            for key, v in test.items():
                name, op = _key(ent, key)
                if not F.value_matches(r.get(name), op, v):
                    if ent.field(name).type == "id":
                        raise _unsolvable(f"a selected {ent.name} row fails {key}={v!r} on its id")
                    r[name] = passing_value(solver, fx, ent, key, v)
        return
    if selected:
        row = solver.rng.choice(selected)
        spoil(solver, fx, ent, row, test, refs=True)  # a row that belongs elsewhere (a line of another order)
        return
    values = concrete(solver, fx, ent, sel)
    key = solver.rng.choice(list(test))
    values[_key(ent, key)[0]] = passing_value(solver, fx, ent, key, test[key], want=False)
    add_row(solver, fx, ent, values)


def target_int(op: type, v: Any, current: int) -> int:
    """The count nearest ``current`` that satisfies ``count op v``."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise _unsolvable(f"a count compared with {v!r}")
    lo = int(v) + (0 if v == int(v) else 1)  # smallest integer >= v
    hi = int(v) if v >= 0 else int(v) - (0 if v == int(v) else 1)  # largest integer <= v
    pick = {
        ast.Eq: lambda: v if v == int(v) else None,
        ast.NotEq: lambda: current if current != v else current + 1,
        ast.GtE: lambda: max(current, lo),
        ast.Gt: lambda: max(current, hi + 1),
        ast.LtE: lambda: min(current, hi),
        ast.Lt: lambda: min(current, lo - 1),
    }.get(op)
    n = pick() if pick else None
    if n is None or n < 0:
        raise _unsolvable(f"no count of rows is {op.__name__} {v!r}")
    return int(n)


def solve_call(solver: Solver, fx: Fixture, node: ast.Call, op: type, v: Any) -> None:
    """Make ``node op v`` hold where ``node`` is one of :data:`STEERED_CALLS`."""
    name = call_name(node)
    if name == "count":
        ent, sel, _ = filters(solver, fx, node)
        have = sum(F.row_matches(r, sel) for r in fx.rows[ent.name])
        n = target_int(op, v, have)
        if n > have:
            for _ in range(n - have):
                add_row(solver, fx, ent, concrete(solver, fx, ent, sel))
        elif n < have:
            remove_matches(solver, fx, ent, sel, keep=n)
        return
    if name == "len":
        return _solve_len(solver, fx, node.args[0], op, v)
    if name in X.DURATION_FUNCTIONS:
        if not isinstance(v, dt.timedelta):
            raise _unsolvable(f"{name}(...) compared with {v!r}, not a duration")
        return solver._solve(fx, node.args[0], op, v / F.DURATIONS[name])
    if name == "abs":
        return _solve_abs(solver, fx, node.args[0], op, v)
    if name == "round":
        return solver._solve(fx, node.args[0], op, v)
    if name in ("min", "max"):
        return _solve_extreme(solver, fx, node, op, v)
    if name == "lookup":
        return _solve_lookup(solver, fx, node, op, v)
    raise _unsolvable(f"cannot steer {X.describe(node)}")


def _solve_len(solver: Solver, fx: Fixture, arg: ast.expr, op: type, v: Any) -> None:
    if not solver._assignable(arg):
        raise _unsolvable(f"len() of {X.describe(arg)}, which is not a parameter or a field of a bound row")
    current = solver.value(fx, arg)
    n = target_int(op, v, len(current) if current is not None else 0)
    if isinstance(current, list | tuple) or (isinstance(arg, ast.Name) and solver.spec.param(arg.id).type == "array"):
        p = solver.spec.param(arg.id)  # type: ignore[attr-defined]
        pool = list(p.items_enum or [])
        base = list(current or [])
        if n <= len(base):
            new: Any = base[:n]
        elif pool:
            new = base + [solver.rng.choice(pool) for _ in range(n - len(base))]
        else:
            raise _unsolvable(f"no values to grow {X.describe(arg)} with")
    else:
        text = str(current or "") or "item"
        new = (text * (n // len(text) + 1))[:n]
    solver._solve(fx, arg, ast.Eq, new)


def _solve_abs(solver: Solver, fx: Fixture, arg: ast.expr, op: type, v: Any) -> None:
    zero = v * 0
    if op in (ast.Lt, ast.LtE):
        if op is ast.Lt and not v > zero:
            raise _unsolvable(f"abs() is never below {v!r}")
        return solver._solve(fx, arg, ast.Eq, zero)
    if op is ast.Eq:
        return solver._solve(fx, arg, ast.Eq, v)
    if op is ast.NotEq:
        return solver._solve(fx, arg, ast.Gt, abs(v))
    return solver._solve(fx, arg, op, v)


def _solve_extreme(solver: Solver, fx: Fixture, node: ast.Call, op: type, v: Any) -> None:
    """``min``/``max``: all arguments must pass (min with >, max with <), else one is enough."""
    every = (call_name(node) == "min") == (op in (ast.Gt, ast.GtE))
    args = list(node.args)
    if op in (ast.Eq, ast.NotEq):
        raise _unsolvable(f"{X.describe(node)} compared with == or !=; compare with <, <=, > or >=")
    if every:
        for a in args:
            if not solver.holds(fx, ast.Compare(left=a, ops=[op()], comparators=[ast.Constant(v)])):
                solver._solve(fx, a, op, v)
        return
    solver.rng.shuffle(args)
    for a in args:
        try:
            solver._solve(fx, a, op, v)
            return
        except _TRY_NEXT:  # an Unsolvable, or arithmetic on a value of another kind: try the next argument
            continue
    raise _unsolvable(f"no argument of {X.describe(node)} can be made {op.__name__} {v!r}")


def _solve_lookup(solver: Solver, fx: Fixture, node: ast.Call, op: type, v: Any) -> None:
    table = solver.bp.tables[node.args[0].value]  # type: ignore[attr-defined]
    entries = [(keys, val) for keys, val in leaves(table) if _holds(op, val, v)]
    if not entries:
        raise _unsolvable(f"no entry of table {node.args[0].value!r} is {op.__name__} {v!r}")  # type: ignore[attr-defined]
    solver.rng.shuffle(entries)
    for keys, _ in entries:
        try:
            for arg, key in zip(node.args[1:], keys, strict=True):
                current = solver.value(fx, arg)
                if F.table_key(current) != key:
                    solver._solve(fx, arg, ast.Eq, _unkey(key, current))
            return
        except _TRY_NEXT:  # an Unsolvable, or a key that does not fit the argument: try the next entry
            continue
    raise _unsolvable(f"no entry of table {node.args[0].value!r} fitting {op.__name__} {v!r} can be reached from its key arguments")  # type: ignore[attr-defined]


def _holds(op: type, a: Any, b: Any) -> bool:
    from envsynth.testing.choose import compare

    return compare(op, a, b)


def _unkey(key: str, like: Any) -> Any:
    """A table key (text) as a value of the kind of ``like`` (bool, int, float or text)."""
    if isinstance(like, bool):
        return key == "true"
    if isinstance(like, int | float):
        try:
            return int(key)
        except ValueError:
            return float(key)
    return key


def fit_stamp(out: Any, kind: str | None, op: type) -> Any:
    """A date or datetime chosen for a comparison, written in the format of the field or parameter it goes into."""
    if not isinstance(out, str) or kind not in ("date", "datetime") or len(out) < 10:
        return out
    if kind == "date" and len(out) > 10:
        day = dt.date.fromisoformat(out[:10])
        if op in (ast.Gt, ast.GtE) and out[11:].strip("0:") != "":
            day += dt.timedelta(days=1)
        return day.isoformat()
    if kind == "datetime" and len(out) == 10:
        return out + ("T00:00:00" if op is not ast.Gt else "T00:00:01")
    return out


def field_kind(f: FieldDef | None, semantic: str | None) -> str | None:
    """``date``/``datetime`` of a field or parameter, else None."""
    if f is not None:
        return f.type
    return semantic


def solve_scaled(solver: Solver, fx: Fixture, node: ast.BinOp, op: type, v: Any) -> None:
    """``e * k op v`` / ``e / k op v`` / ``k * e op v``: solve ``e`` for ``v / k`` (``v * k``), the order flipped when ``k < 0``."""
    div = isinstance(node.op, ast.Div)
    if solver._assignable(node.left):
        inner, k = node.left, solver.value(fx, node.right)
    elif not div and solver._assignable(node.right):
        inner, k = node.right, solver.value(fx, node.left)
    else:
        raise _unsolvable(f"{X.describe(node)} has no parameter or field of a bound row to change")
    if isinstance(k, bool) or not isinstance(k, int | float | dt.timedelta) or not k:
        raise _unsolvable(f"{X.describe(node)} scales by {k!r}")
    if k < k * 0:
        op = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}.get(op, op)
    solver._solve(fx, inner, op, v * k if div else v / k)
