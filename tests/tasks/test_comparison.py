"""Selection by criteria: a row named as the most recent or oldest of its owner's, which the agent must compare to find."""

from __future__ import annotations

import random

import pytest

from envsynth import catalog
from envsynth.runtime.app import App
from envsynth.tasks import Task, TaskEpisode, state_bytes
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged
from envsynth.tasks.wording.describe import Description, describe, render
from task_samples import compiled, synthesized

APPS = ("juniper_goods", "northstar_air")


def _compared(name: str) -> list[list[Task]]:
    return [made for made in synthesized(name, states=2) if "comparison" in made[0].constructs]


def _picked(app: App, task: Task) -> list[tuple[str, dict]]:
    """(table, row) of each row the oracle picks out of a search's items listing several rows, on the task's state."""
    ep = TaskEpisode(app, task, state_bytes(app, task))
    results: list = []
    rows = merged(task.state.core, task.state.distractors)
    out = []
    for c in task.oracle:
        for ref in c.refs.values():
            if ref.item is not None and len(results[ref.step]["items"]) >= 2:
                table = app.spec_by_name[task.oracle[ref.step].tool].query.entity
                idf = app.blueprint.entity(table).id_field
                out.append((table, next(r for r in rows[table] if r[idf] == resolve(ref, results))))
        results.append(ep.call(c.tool, {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}}).data)
    return out


@pytest.mark.parametrize("name", APPS)
def test_the_named_row_is_the_extreme_of_its_owners_rows_in_every_state(name: str) -> None:
    app = compiled(name)
    found = _compared(name)
    assert len(found) >= 2, name
    for states in found:
        how = states[0].stats["comparison"]
        word = "most recent" if how == "max" else "oldest"
        for task in states:
            assert word in task.instruction and task.stats["comparison"] == how
            picked = _picked(app, task)
            assert picked, task.id
            assert any(_is_extreme(app, task, table, row, how) for table, row in picked), (task.id, task.instruction)


def _is_extreme(app: App, task: Task, table: str, row: dict, how: str) -> bool:
    """Whether ``row`` is the one extreme, by some date, of some parent's rows of ``table`` in the task's state."""
    ent = app.blueprint.entity(table)
    rows = merged(task.state.core, task.state.distractors)[table]
    dates = [f.name for f in ent.fields if f.type in ("date", "datetime") and row.get(f.name)]
    refs = [f.name for f in ent.fields if f.type == "ref" and row.get(f.name)]
    return any(_extreme(rows, row, parent, date, how) for parent in refs for date in dates)


def _extreme(rows: list[dict], row: dict, parent: str, date: str, how: str) -> bool:
    mine = [r for r in rows if r.get(parent) == row[parent] and r.get(date) is not None]
    if len(mine) < 2:
        return False
    best = max(r[date] for r in mine) if how == "max" else min(r[date] for r in mine)
    return row[date] == best and sum(r[date] == best for r in mine) == 1


def test_a_description_by_comparison_matches_only_the_extreme() -> None:
    bp = catalog.load("juniper_goods")
    rows = {
        "customer": [{"customer_id": "cus_1", "first_name": "Ann", "last_name": "Lee", "email": "ann@example.com"}],
        "customer_order": [
            {"order_id": "ord_1", "customer_id": "cus_1", "placed_at": "2026-01-02T10:00:00", "status": "pending"},
            {"order_id": "ord_2", "customer_id": "cus_1", "placed_at": "2026-02-02T10:00:00", "status": "pending"},
            {"order_id": "ord_3", "customer_id": "cus_2", "placed_at": "2026-03-02T10:00:00", "status": "pending"},
        ],
    }
    owner = Description("customer", {"email": "ann@example.com"})
    latest = Description("customer_order", parent=("customer_id", owner), most=("placed_at", "max"))
    oldest = Description("customer_order", parent=("customer_id", owner), most=("placed_at", "min"))
    assert [r["order_id"] for r in latest.matching(bp, rows)] == ["ord_2"]  # ord_3 is another customer's
    assert [r["order_id"] for r in oldest.matching(bp, rows)] == ["ord_1"]
    assert latest.matches(bp, rows, rows["customer_order"][1]) and not latest.matches(bp, rows, rows["customer_order"][0])
    tie = {**rows, "customer_order": [*rows["customer_order"], {**rows["customer_order"][1], "order_id": "ord_4"}]}
    assert latest.matching(bp, tie) == []  # two share the extreme: it names no row
    assert render(bp, latest, "my").startswith("my most recent order") and " oldest " in f" {render(bp, oldest)} "
    d = describe(bp, rows, "customer_order", rows["customer_order"][0], random.Random(0), most_first=True)
    assert d is not None and d.most == ("placed_at", "min")
