"""For-each goals: "cancel all my pending orders" acts on every row that meets the criteria, and on no other."""

from __future__ import annotations

import pytest

from envsynth.runtime.app import App
from envsynth.tasks import Task, TaskEpisode, state_bytes
from envsynth.tasks.building.foreach import ForEach, meets
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged
from envsynth.tasks.wording.foreach import rows_of, said_of_many
from task_samples import compiled, synthesized

APPS = ("juniper_goods", "peak_fitness", "relay_chat")


def _for_each_tasks(name: str) -> list[list[Task]]:
    """The for-each tasks (every state) of the first 40 task indexes of an app."""
    return [made for made in synthesized(name, states=2) if "for_each" in made[0].constructs]


def _search_and_writes(task: Task) -> tuple[int, list[int]]:
    """The step of the search whose items the writes act on, and the steps of those writes."""
    writes = [i for i, c in enumerate(task.oracle) if any(r.item is not None for r in c.refs.values()) and len(c.refs) >= 1]
    steps = {r.step for i in writes for r in task.oracle[i].refs.values() if r.item is not None}
    return min(steps), [i for i in writes if task.oracle[i].tool == task.oracle[writes[-1]].tool]


def _changed(app: App, task: Task) -> set:
    """The keys of the rows of the writes' table the task's expected effects update or delete."""
    _, writes = _search_and_writes(task)
    effects = task.expected_effects[app.spec_by_name[task.oracle[writes[0]].tool].entity]
    return set(effects["updated"]) | set(effects["deleted"])


def _run(app: App, task: Task, calls: int | None = None) -> tuple[list, float]:
    """The oracle's results on the task's state (its first ``calls`` calls only, when given), and the score."""
    ep = TaskEpisode(app, task, state_bytes(app, task))
    if task.clarify:  # a must-ask task: the user is asked first (tasks/admission/clarify.py)
        ep.call("ask_user", {"question": "What should I set?"})
    results: list = []
    for c in task.oracle[:calls]:
        args = {**c.args, **{p: resolve(ref, results) for p, ref in c.refs.items()}}
        out = ep.call(c.tool, args)
        assert out.outcome == "success", (c.tool, out)
        results.append(out.data)
    return results, ep.finish(answer=None).score


@pytest.mark.parametrize("name", APPS)
def test_for_each_requests_say_all_and_the_oracle_writes_every_row_the_search_lists(name: str) -> None:
    app = compiled(name)
    found = _for_each_tasks(name)
    assert len(found) >= 2, name
    for states in found:
        assert len({t.instruction for t in states}) == 1
        for task in states:
            assert " all my " in task.instruction, task.instruction
            search, writes = _search_and_writes(task)
            results, score = _run(app, task)
            listed = results[search]
            assert 2 <= len(writes) == listed["total"] == len(listed["items"]), (task.id, listed["total"], len(writes))
            assert score == 1.0 and "multi_row" in task.constructs
            assert len(_changed(app, task)) == len(writes)


@pytest.mark.parametrize("name", APPS)
def test_one_row_of_all_is_not_enough_and_look_alikes_stay_untouched(name: str) -> None:
    app = compiled(name)
    for states in _for_each_tasks(name):
        task = states[0]
        search, writes = _search_and_writes(task)
        _, score = _run(app, task, calls=writes[0] + 1)  # the search, then only the first row
        assert score == 0.0, task.id
        table = app.spec_by_name[task.oracle[writes[0]].tool].entity
        ent = app.blueprint.entity(table)
        rows = merged(task.state.core, task.state.distractors)[table]
        results, _ = _run(app, task)
        written = {item[ent.id_field] for item in results[search]["items"]}
        assert _changed(app, task) == written  # the effects are on exactly the rows the search lists
        owner = (
            next(v for k, v in task.oracle[search].args.items() if k.endswith("_id"))
            if any(k.endswith("_id") for k in task.oracle[search].args)
            else results[0][next(iter(task.oracle[search].refs.values())).field]
        )
        mine = [r for r in rows if owner in r.values()]
        assert len(mine) > len(written), task.id  # a row of the requester's that does not meet the criteria, left as it is


def test_no_distractor_meets_the_criteria() -> None:
    app = compiled("juniper_goods")
    fe = ForEach("customer_order", "customer_id", "customer", "cus_1", "status", "pending")
    assert meets(fe, {"customer_id": "cus_1", "status": "pending"}, "cus_1")
    assert not meets(fe, {"customer_id": "cus_2", "status": "pending"}, "cus_1")
    assert not meets(fe, {"customer_id": "cus_1", "status": "shipped"}, "cus_1")
    for states in _for_each_tasks("juniper_goods"):
        for task in states:
            search, writes = _search_and_writes(task)
            table = app.spec_by_name[task.oracle[writes[0]].tool].entity
            results, _ = _run(app, task)
            listed = {i[app.blueprint.entity(table).id_field] for i in results[search]["items"]}
            for row in task.state.distractors.get(table, []):
                assert row[app.blueprint.entity(table).id_field] not in listed


def test_the_words_of_many_rows() -> None:
    assert rows_of("my pending order") == "my pending orders"
    assert rows_of("my booking that is booked") == "my bookings that are booked"
    assert rows_of("my active subscription") == "my active subscriptions"
    assert said_of_many("I double-booked myself.") and said_of_many("Money is tight this month.")
    assert not said_of_many("I'd like to stop it before it ships.") and not said_of_many("I haven't been using it.")


def test_no_for_each_goal_is_over_rows_the_app_allows_one_of() -> None:
    """tempo_music allows one active subscription a listener (at_most_one): "cancel all my active subscriptions" would
    need several."""
    app = compiled("tempo_music")
    ent = app.blueprint.entity("subscription")
    assert ent.one_only({"listener_id": "lis_1", "status": "active"}) and not ent.one_only({"listener_id": "lis_1", "status": "cancelled"})
    for states in _for_each_tasks("tempo_music"):
        for task in states:
            assert "active subscriptions" not in task.instruction, task.instruction
