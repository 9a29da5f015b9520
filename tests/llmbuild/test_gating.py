"""The gating policy's metrics and expansion, and the task stage that applies it with the task writer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import networkx as nx
import pytest
from llmbuild_helpers import find_tasks, is_write_then_get, rewrites

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import ToolGraph, build_graph
from envsynth.llm import ScriptedProvider
from envsynth.llmbuild.client import BudgetExceeded, BuilderClient
from envsynth.llmbuild.gating import complexity, feasibility, gate_visible_tools, remaining
from envsynth.llmbuild.taskstage import TaskStage
from envsynth.runtime.app import App
from envsynth.tasks import Task, admit
from envsynth.tasks.state import merged


@pytest.fixture(scope="module")
def harbor() -> tuple[App, ToolGraph]:
    app = compile_app(catalog.load("harbor_market"), 0)
    return app, build_graph(app)


@pytest.fixture(scope="module")
def write_tasks(harbor: tuple[App, ToolGraph]) -> list[Task]:
    """The two states of a task index: change an order named by its date and time with a chosen value, then ask about it."""
    app, graph = harbor
    return find_tasks(app, graph, lambda t: is_write_then_get(app, t))


def small_graph() -> ToolGraph:
    g = nx.MultiDiGraph()
    g.add_nodes_from("abcd")
    g.add_edge("a", "b", key="data:x", kind="data")
    g.add_edge("a", "b", key="logic:y", kind="logic")  # parallel: one dependency pair
    g.add_edge("b", "c", key="state:t", kind="state")
    g.add_edge("c", "a", key="data:z", kind="data")
    g.add_edge("d", "d", key="data:w", kind="data")  # self-loops do not count
    return ToolGraph(g, "small")


def test_structural_complexity_and_remaining_tools() -> None:
    g = small_graph()
    assert complexity(g, ["a", "b"]) == pytest.approx(2 + 0.5 * 1 / 50)
    assert complexity(g, ["a", "b", "c"]) == pytest.approx(3 + 0.5 * 3 / 50)
    assert complexity(g, ["a", "b", "c", "d"]) == pytest.approx(4.03)
    assert complexity(g, []) == 0
    assert remaining(g, ["b", "d"]) == ["a", "c"]


def test_feasibility_is_deterministic_per_seed(harbor: tuple[App, ToolGraph], write_tasks: list[Task]) -> None:
    app, graph = harbor
    rest = remaining(graph, write_tasks[0].visible_tools)
    one, again = feasibility(app, graph, rest, k=4, seed=3), feasibility(app, graph, rest, k=4, seed=3)
    assert one.found == again.found and one.k == 4 and 0 < one.score <= 1
    assert all(set(chain) <= set(rest) for chain in one.found)
    assert all(any(app.spec_by_name[t].mode == "write" for t in chain) for chain in one.found)
    reads = [t for t in rest if app.spec_by_name[t].mode == "read"]
    assert feasibility(app, graph, reads, k=4).score == 0.0  # no write: nothing to find
    assert feasibility(app, graph, [], k=4).score == 0.0


def replies(gating: list[float], rewrite: dict[str, Any] | None = None):
    """A scripted model: the task writer answers ``rewrite``, the gating policy ``gating`` in turn."""
    ps = iter(gating)

    def reply(messages: list[dict[str, Any]], tools: Any, i: int) -> str:
        text = messages[-1]["content"]
        if "gating policy" in text:
            p = next(ps)
            why = "D still holds executable order and return flows." if p >= 0.5 else "H is rich enough for this task."
            return json.dumps({"p": p, "reason": why})
        if any("task writer" in str(m["content"]) for m in messages) and rewrite is not None:
            return json.dumps(rewrite)
        return "I am not sure what you want."

    return reply


def test_gating_expands_once_then_stops(harbor: tuple[App, ToolGraph], write_tasks: list[Task]) -> None:
    app, graph = harbor
    task = write_tasks[0]
    llm = ScriptedProvider(replies([0.8, 0.3]))
    result = asyncio.run(gate_visible_tools(BuilderClient(llm), app, graph, task))
    first, second = result.decisions
    assert (first["p"], second["p"]) == (0.8, 0.3) and result.rounds == 2 and len(llm.requests) == 2
    assert first["added"] and second["added"] == [] and set(first["chain"]) <= set(remaining(graph, task.visible_tools))
    assert result.visible_tools[: len(task.visible_tools)] == task.visible_tools
    assert len(result.visible_tools) == len(task.visible_tools) + len(first["added"])
    assert second["d"] == first["d"] - len(first["added"]) and second["c"] > first["c"]
    asked = llm.requests[0][-1]["content"]
    assert f"g(D) = {first['g']:.2f}" in asked and f"c(H) = |V_H| + 0.5 * |E_H| / 50 = {first['c']:.3f}" in asked


def test_the_task_stage_rewrites_and_expands_and_tasks_stay_admitted(harbor: tuple[App, ToolGraph], write_tasks: list[Task]) -> None:
    app, graph = harbor
    first = write_tasks[0]
    text = rewrites(app, first)["good"]
    rewrite = {"instruction": text, "name": first.user.name, "role": "shop assistant", "email": None, "phone": None, "preferences": {}}
    stage = TaskStage(BuilderClient(ScriptedProvider(replies([0.9, 0.1], rewrite))), asyncio.run)
    out = stage(app, graph, write_tasks)

    assert len(out) == 2
    for old, new in zip(write_tasks, out):
        assert new.instruction == text and new.user.knows == [text] and new.user.role == "shop assistant"
        for same in ("id", "coordinates", "oracle", "state", "expected_effects", "expected_answer", "kind"):
            assert getattr(new, same) == getattr(old, same)
        assert new.visible_tools[: len(old.visible_tools)] == old.visible_tools and len(new.visible_tools) > len(old.visible_tools)
        assert new.hash == new.content_hash() != old.hash
        assert admit(app, new, merged(new.state.core, new.state.distractors)) is None
    assert out[0].visible_tools == out[1].visible_tools
    m = stage.metrics()
    assert m["instructions_rewritten"] == 1 and m["instructions_fallback"] == 0
    assert m["gating_rounds"] == 2 and m["expansions"] == 1 and m["p_values"] == [0.9, 0.1]
    assert m["tools_added"] == len(out[0].visible_tools) - len(first.visible_tools)


def test_invalid_replies_fall_back_and_a_spent_budget_propagates(harbor: tuple[App, ToolGraph], write_tasks: list[Task]) -> None:
    app, graph = harbor
    stage = TaskStage(BuilderClient(ScriptedProvider(replies([0.2]))), asyncio.run)  # the writer never answers JSON
    out = stage(app, graph, write_tasks)
    assert [t.instruction for t in out] == [t.instruction for t in write_tasks]
    assert [t.visible_tools for t in out] == [t.visible_tools for t in write_tasks]
    assert all(admit(app, t, merged(t.state.core, t.state.distractors)) is None for t in out)
    m = stage.metrics()
    assert m["instructions_fallback"] == 1 and m["fallback_reasons"] == {"no valid reply": 1} and m["p_values"] == [0.2]
    assert out[0].stats["llm"]["instruction"]["status"] == "fallback"

    broke = TaskStage(BuilderClient(ScriptedProvider(replies([0.9])), max_tokens_total=0), asyncio.run)
    with pytest.raises(BudgetExceeded):
        broke(app, graph, write_tasks)
