"""Counts that spread: more rows that meet a counting question's criteria, so its answer is not always 1 or 2.

A chain's world has two rows per table (:data:`~envsynth.tasks.building.world.WORLD_ROWS`), so a
question that counts rows ("how many of my orders are pending?") used to answer 1 or 2, and an
agent that guessed "1" scored on one task in seven. Here, before the states are drawn, the core of
a task whose answer is a count gets more rows that meet every criterion of the counting call: each
a fresh row of the table (drawn like any other) that takes the criteria's values from a row that
meets them. The number of rows to reach is drawn from :data:`COUNTS` on the task's stream, so the
answers spread; the answer itself is still read off the run on the final state.

A criterion whose value comes from an earlier step's result (a ref) is not known yet, so such a
question keeps its count; so does one none of whose rows meet the criteria.
"""

from __future__ import annotations

import random
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.sampledata import StateBuilder
from envsynth.runtime.state import Rows
from envsynth.tasks.building.core import Core
from envsynth.tasks.building.world import Instance, value_pool
from envsynth.tasks.planning.answer import Question

COUNTS: tuple[int, ...] = tuple(range(3, 26))
"""The counts a counting question is made to reach, drawn uniformly (0 and 1 are guesses admission refuses; 2 is
left to the counts no rows were added to, so that no one count is the answer a guesser would give)."""
MAX_ADDED = 24


def spread_count(inst: Instance, core: Core, question: Question) -> bool:
    """Add rows that meet the counting question's criteria to ``core.rows`` (True when any were added).

    The core is then no longer derived in the instance's workspace (``core.derived``): that workspace holds the
    core as it was, so it is closed and the states are loaded anew.
    """
    app = inst.plan.app
    if question.step is None:
        return False
    call = inst.calls[question.step]
    spec = app.spec_by_name[call.tool]
    if not _is_count(spec, question.field) or spec.query is None or call.refs:
        return False
    query = spec.query
    filters = [(f.field, f.op, call.args[f.param]) for f in query.filters if call.args.get(f.param) is not None]
    if not filters or any(op == "contains" for _, op, _ in filters):
        return False  # text criteria ("with 'lee' in the name") would need names made to measure: left as they are
    rows = core.rows.get(query.entity, [])
    meeting = [r for r in rows if all(_meets(r.get(field), op, value) for field, op, value in filters)]
    if not meeting:
        return False
    rng = random.Random(inst.plan.base * 7919 + question.step)
    want = min(rng.choice(COUNTS), len(meeting) + MAX_ADDED)
    if want <= len(meeting):
        return False
    added = _add_rows(app, core.rows, query.entity, {field for field, _, _ in filters}, meeting, want - len(meeting), rng)
    if added and core.derived:
        inst.ws0.close()  # it holds the core as it was (and the connection fresh workspaces use)
        core.derived = False
    return added > 0


def _is_count(spec: Any, field: str | None) -> bool:
    query = spec.query
    if query is None or query.group_by is not None:
        return False
    return (query.op == "search" and field == "total") or (query.op == "aggregate" and query.agg == "count" and field == "value")


def _meets(have: Any, op: str, want: Any) -> bool:
    if op == "eq":
        return have == want
    if op == "in":
        return isinstance(want, list) and have in want
    if have is None:
        return False
    try:
        return have >= want if op == "gte" else have <= want
    except TypeError:
        return False


def _add_rows(app: App, rows: Rows, table: str, fields: set[str], meeting: list[dict[str, Any]], n: int, rng: random.Random) -> int:
    """Add ``n`` rows of ``table`` to ``rows``, each taking the criteria's ``fields`` from a row of ``meeting``."""
    ent = app.blueprint.entity(table)
    if ent.id_field in fields or any(f.unique and f.name in fields for f in ent.fields) or any(set(k) <= fields for k in ent.unique):
        return 0  # a copy would repeat a unique value
    if any(ent.one_only({f: m[f] for f in fields}) for m in meeting):
        return 0  # copies would be a second active plan of one owner (at_most_one)
    builder = StateBuilder(app.blueprint, rng.randrange(1 << 30), app.order, rows).use_pool(value_pool(app))
    added = 0
    for i in range(n):
        source = meeting[i % len(meeting)]
        if builder.add(ent, {f: source[f] for f in fields}) is not None:
            added += 1
    return added
