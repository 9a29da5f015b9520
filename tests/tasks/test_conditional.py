"""Conditional goals: one request, an action in one state and an answer in another, decided by the row's state."""

from __future__ import annotations

import pytest

from envsynth.runtime.app import App
from envsynth.tasks import Task, TaskEpisode, state_bytes
from envsynth.tasks.building.conditional import Conditional, telling_state
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged
from task_samples import compiled, synthesized

APPS = ("juniper_goods", "tempo_music")


def _conditional(name: str) -> list[list[Task]]:
    return [made for made in synthesized(name, states=3) if "conditional" in made[0].stats]


def _play(app: App, task: Task, calls: list) -> tuple[list, TaskEpisode]:
    ep = TaskEpisode(app, task, state_bytes(app, task))
    results: list = []
    for c in calls:
        out = ep.call(c.tool, {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}})
        results.append(out.data if out.outcome == "success" else out)
    return results, ep


@pytest.mark.parametrize("name", APPS)
def test_states_alternate_between_acting_and_telling(name: str) -> None:
    app = compiled(name)
    found = _conditional(name)
    assert found, name
    for states in found:
        assert len({t.instruction for t in states}) == 1 and len(states) == 3
        act, tell, again = states
        assert [t.stats["conditional"] for t in states] == ["act", "tell", "act"] and "conditional" in act.constructs
        assert " if it is still " in act.instruction
        writes = [c for c in act.oracle if app.spec_by_name[c.tool].mode == "write"]
        assert len(writes) == 1 and act.expected_answer is None and act.expected_effects and act.kind == "action"
        assert tell.kind == "info" and tell.expected_answer is not None and not tell.expected_effects
        assert all(app.spec_by_name[c.tool].mode == "read" for c in tell.oracle)
        assert again.oracle[-1].tool == act.oracle[-1].tool and again.expected_effects
        for task in states:  # the oracle of each state scores 1 there
            results, ep = _play(app, task, task.oracle)
            answer = results[task.answer_step][task.answer_field] if task.answer_step is not None else None
            assert ep.finish(answer=answer).score == 1.0, task.id


@pytest.mark.parametrize("name", APPS)
def test_acting_in_the_telling_state_is_refused_and_telling_in_the_acting_state_does_nothing(name: str) -> None:
    app = compiled(name)
    for states in _conditional(name):
        act, tell = states[0], states[1]
        write = next(c for c in act.oracle if app.spec_by_name[c.tool].mode == "write")
        reads = [c for c in act.oracle if c is not write]
        # the write, said of the telling state's row (its lookups and read first): the app refuses it
        results, ep = _play(app, tell, [*tell.oracle, write.model_copy(update={"refs": {p: r for p, r in write.refs.items()}})])
        assert not isinstance(results[-1], (dict, list)) or results[-1] is None or getattr(results[-1], "outcome", "") != "success"
        assert ep.finish(answer=None).score == 0.0  # no answer: the user asked for the state
        results, ep = _play(app, act, reads)  # only looking in the acting state: nothing done
        assert ep.finish(answer=str(tell.expected_answer)).score == 0.0


def test_no_description_of_the_row_says_its_state() -> None:
    for states in _conditional("tempo_music") + _conditional("juniper_goods"):
        told = str(states[1].expected_answer).replace("_", " ")
        assert f"is still {told}" not in states[0].instruction
        # (the row's words are state 0's and still name it in the telling state, whose row has another state: a
        # description that used the state could not, and the state would be rejected as description_ambiguous_in_state)


def test_telling_state_changes_only_the_row() -> None:
    cond = Conditional("customer_order", "ord_1", "status", "pending", "shipped")
    rows = {"customer_order": [{"order_id": "ord_1", "status": "pending"}, {"order_id": "ord_2", "status": "pending"}], "x": [{}]}
    out = telling_state(cond, rows, "ord_1", "order_id")
    assert [r["status"] for r in out["customer_order"]] == ["shipped", "pending"] and rows["customer_order"][0]["status"] == "pending"
    assert out["x"] is rows["x"] and cond.acts(0) and not cond.acts(1) and cond.acts(2)
    assert merged(out, {}) == out
