"""Guessing baselines: admission refuses a task that an agent doing no work (or guessing) would solve."""

from __future__ import annotations

from collections import Counter
from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.admission.baselines import CONSTANT_ANSWERS, constant_guess, first_candidate_wins
from envsynth.tasks.model import Call, Ref

NAME = "taskboard"


@cache
def _app() -> App:
    return compile_app(catalog.load(NAME), 0)


@cache
def _outcomes() -> tuple[list[Task], list[Rejection]]:
    app = _app()
    graph = build_graph(app)
    tasks, rejected = [], []
    for t in range(60):
        made = synthesize(app, graph, app_index=catalog.names().index(NAME), task_index=t, states=2, depth=4)
        if isinstance(made, Rejection):
            rejected.append(made)
        else:
            tasks += made
    return tasks, rejected


def test_no_admitted_task_is_solved_by_a_constant_answer() -> None:
    app = _app()
    tasks, rejected = _outcomes()
    info = [t for t in tasks if not t.expected_effects]
    assert info, "the sample has information tasks"
    assert all(constant_guess(app, t) is None for t in tasks)
    assert all(str(t.expected_answer).lower() not in CONSTANT_ANSWERS for t in info)
    assert any(r.reason == "guessable" for r in rejected)  # the rule is live


def test_a_constant_answer_that_matches_is_found() -> None:
    app = _app()
    task = next(t for t in _outcomes()[0] if not t.expected_effects and isinstance(t.expected_answer, int))
    assert constant_guess(app, task.model_copy(update={"expected_answer": 1})) == "1"
    assert constant_guess(app, task.model_copy(update={"expected_answer": 0})) == "0"
    assert constant_guess(app, task) is None


def test_count_answers_spread_past_one_and_two() -> None:
    counts = [t.expected_answer for t in _outcomes()[0] if t.answer_field == "total"]
    assert len(counts) >= 4
    assert max(counts) > 3
    most = Counter(counts).most_common(1)[0][1]
    assert most <= len(counts) / 2


def _search(items: int) -> dict:
    return {"items": [{"task_id": f"t{i}"} for i in range(items)], "total": items}


def test_the_first_candidate_wins_only_by_picking_the_first_of_several() -> None:
    pick = [Call(tool="search", args={}), Call(tool="close", args={}, refs={"task_id": Ref(step=0, field="task_id", item=0)})]
    assert first_candidate_wins(pick, {0: _search(3)}.get)  # the oracle itself takes the first of three
    assert not first_candidate_wins(pick, {0: _search(1)}.get)  # the only row listed: found, not guessed
    assert not first_candidate_wins(pick, {}.get)  # a result not known
    later = [pick[0], Call(tool="close", args={}, refs={"task_id": Ref(step=0, field="task_id", item=2)})]
    assert not first_candidate_wins(later, {0: _search(3)}.get)  # the third of three: taking the first is wrong
    assert not first_candidate_wins([Call(tool="search", args={})], {0: _search(5)}.get)  # no pick at all
    # a lookup's first of several, then a pick out of a result not known here (a for-each goal's search): not shown
    both = [*pick, Call(tool="search", args={}), Call(tool="close", args={}, refs={"task_id": Ref(step=2, field="task_id", item=1)})]
    assert not first_candidate_wins(both, {0: _search(3)}.get)
