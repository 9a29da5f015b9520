"""Negative cases for the state machines guarding custom code in the database (see :mod:`envsynth.runtime.guard`).

A custom tool that declares a ``state`` field in ``writes`` is called on a positive fixture;
for each such field it moved, the same call is made again with the row first put in a
state from which the machine forbids that move. The call must be rejected (by the guard,
``state:<entity>.<field>``, or by the tool's own checks) and leave the state unchanged; a
call that succeeds instead must have made only moves the machine allows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envsynth.runtime.episode import FAILURE, REJECTION, SUCCESS
from envsynth.runtime.state import diff_rows

if TYPE_CHECKING:
    from envsynth.blueprint.models import FieldDef
    from envsynth.testing.procedural import ToolTester


ATTEMPTS = 12
"""Positive fixtures tried until a call moves a state field it declares (a row already in the target moves nothing)."""


def state_guard_cases(t: ToolTester) -> None:
    """Add a ``violate:state:<entity>.<field>`` verdict per state field a custom tool declares and moved."""
    spec = t.spec
    if spec.code is None or spec.name not in t.app.state_writers:
        return
    declared = [(table, t.bp.entity(table).field(n)) for table, names in spec.writes.items() for n in names]
    declared = [(table, f) for table, f in declared if f.type == "state"]
    for attempt in range(ATTEMPTS):
        fx = t.solver.base("all", attempt)
        if not t.solver.satisfy(fx, spec.pre) or not t._materializes(fx):
            continue
        args = fx.call_args()
        res, before, after = t.execute(fx, args)
        if res.outcome != SUCCESS:
            continue  # the positive case reports it
        diff = diff_rows(t.bp, before, after)
        moves = [(table, f, _moved(diff.get(table), f.name)) for table, f in declared]
        if any(m for _, _, m in moves):
            for table, f, m in moves:
                if m:
                    _break(t, fx, args, table, f, *m)
            return


def _moved(d: Any, name: str) -> tuple[Any, Any] | None:
    """(row key, new state) of the first row whose field ``name`` changed, if any."""
    for key, cols in d.changed.items() if d else ():
        if name in cols and cols[name][0] != cols[name][1]:
            return key, cols[name][1]
    return None


def _break(t: ToolTester, fx: Any, args: dict[str, Any], table: str, f: FieldDef, key: Any, new: Any) -> None:
    case = f"violate:state:{table}.{f.name}"
    bad = [s for s in f.states or [] if s != new and new not in (f.transitions or {}).get(s, [])]
    if not bad:
        return  # every state may move there: nothing to break
    broken = fx.clone()
    id_field = t.bp.entity(table).id_field
    row = next(r for r in broken.rows[table] if r[id_field] == key)
    row[f.name] = bad[0]
    if broken.builder is not None:
        broken.builder.rederive(t.bp.entity(table), row, f.name)
    if not t._materializes(broken):
        return
    res, before, after = t.execute(broken, args)
    problems = []
    expected = REJECTION
    if res.outcome == FAILURE:
        problems.append(res.content[-800:])
    elif res.outcome == REJECTION and diff_rows(t.bp, before, after):
        problems.append("state changed")
    elif res.outcome == SUCCESS:
        expected = SUCCESS  # the code did something else; it may, if every move it made is allowed
        problems += _illegal_moves(t, before, after, table, f)
    t.record(case, "negative", expected, res.outcome, problems, args)
    v = t.verdicts[-1]
    v.detail = "; ".join(
        x for x in (v.detail, f"{table}.{f.name} set to {bad[0]!r} first; {res.code or res.outcome}: {res.content[:200]}") if x
    )


def _illegal_moves(t: ToolTester, before: Any, after: Any, table: str, f: FieldDef) -> list[str]:
    d = diff_rows(t.bp, before, after).get(table)
    out = []
    for key, cols in d.changed.items() if d else ():
        if f.name in cols:
            old, new = cols[f.name]
            if old != new and new not in (f.transitions or {}).get(old, []):
                out.append(f"{table} {key}: {f.name} moved {old!r} -> {new!r}, which the state machine forbids")
    return out
