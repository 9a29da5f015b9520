"""Difficulty: every admitted task carries a score from what makes it hard, its tier and its constructs."""

from __future__ import annotations

from functools import cache

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.admission.difficulty import BONUS, HARD, MEDIUM, TIERS, constructs, factors, rated, score, tier_of

APPS = ("harbor_market", "northwind_bank", "taskboard")


@cache
def _app(name: str) -> App:
    return compile_app(catalog.load(name), 0)


@cache
def _tasks(name: str) -> tuple[Task, ...]:
    app = _app(name)
    graph = build_graph(app)
    out: list[Task] = []
    for t in range(30):
        made = synthesize(app, graph, app_index=catalog.names().index(name), task_index=t, states=2, depth=4)
        if not isinstance(made, Rejection):
            out += made
    return tuple(out)


def test_tiers_cut_the_score_at_fixed_points() -> None:
    assert [tier_of(x) for x in (0, MEDIUM - 0.01, MEDIUM, HARD - 0.01, HARD, 40)] == ["easy", "easy", "medium", "medium", "hard", "hard"]


@pytest.mark.parametrize("name", APPS)
def test_every_task_carries_its_rating_and_the_rating_is_what_its_parts_say(name: str) -> None:
    app = _app(name)
    tasks = _tasks(name)
    assert len(tasks) >= 20
    for task in tasks:
        parts = factors(app, task)
        assert task.difficulty == score(app, task) == round(sum(parts.values()), 2)
        assert task.tier == tier_of(task.difficulty)
        assert task.constructs == constructs(app, task)
        assert parts["calls"] == len(task.oracle)
        assert task.hash == task.content_hash()  # rated before it was sealed
        assert rated(app, task).model_copy(update={"hash": task.hash}) == task


def test_the_catalogue_sample_has_every_tier_and_harder_tasks_do_more() -> None:
    tasks = [t for name in APPS for t in _tasks(name) if t.coordinates.state == 0]
    by_tier = {tier: [t for t in tasks if t.tier == tier] for tier in TIERS}
    assert all(len(v) >= 0.1 * len(tasks) for v in by_tier.values()), {k: len(v) for k, v in by_tier.items()}
    mean_calls = {k: sum(len(t.oracle) for t in v) / len(v) for k, v in by_tier.items()}
    assert mean_calls["easy"] < mean_calls["medium"] < mean_calls["hard"]


def test_constructs_are_named_for_what_the_task_does() -> None:
    tasks = [t for name in APPS for t in _tasks(name)]
    used = {c for t in tasks for c in t.constructs}
    assert {"lookup", "count", "multi_write", "question_and_action", "distractors"} <= used
    for t in tasks:
        assert ("question_and_action" in t.constructs) == (t.kind == "mixed")
        assert ("policy" in t.constructs) == (t.policy is not None)
        assert ("refusal" in t.constructs) == (t.policy is not None and t.policy.refusal)
        assert ("distractors" in t.constructs) == bool(t.state.distractors)
        assert ("lookup" in t.constructs) == any(r.item is not None for c in t.oracle for r in c.refs.values())
        assert ("clarification" in t.constructs) == bool(t.clarify)
        assert ("multi_goal" in t.constructs) == (t.stats.get("goals", 1) > 1)
    assert set(BONUS) <= {
        "computed", "count", "question_and_action", "multi_row", "for_each", "conditional", "comparison", "policy", "refusal",
        "clarification", "multi_goal",
    }  # fmt: skip
