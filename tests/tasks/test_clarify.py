"""Clarification tasks: the request leaves out a value the user tells when asked; writing before asking fails."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.grading import asked_before_writing
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, TaskEpisode, state_bytes, synthesize
from envsynth.tasks.planning.refs import resolve

APP = "tempo_music"


@cache
def _app() -> App:
    return compile_app(catalog.load(APP), 0)


@cache
def _tasks() -> list[list[Task]]:
    app = _app()
    graph = build_graph(app)
    made = [synthesize(app, graph, app_index=catalog.names().index(APP), task_index=t, states=2, depth=4) for t in range(16)]
    return [m for m in made if not isinstance(m, Rejection)]


def _must_ask() -> list[Task]:
    found = [t for states in _tasks() for t in states if t.clarify]
    assert found, "no must-ask task among the first 16 task indices"
    return found


def _value(fact: str) -> str:
    """The value a fact states ("the new name is "Workout Vibes"" -> '"Workout Vibes"')."""
    return re.split(r" (?:is|are) ", fact, maxsplit=1)[1]


def _episode(task: Task) -> TaskEpisode:
    return TaskEpisode(_app(), task, state_bytes(_app(), task))


def _oracle_calls(ep: TaskEpisode, task: Task) -> None:
    results: list = []
    for c in task.oracle:
        out = ep.call(c.tool, {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}})
        results.append(out.data)


def test_the_request_leaves_the_value_out_and_the_scenario_knows_it() -> None:
    for task in _must_ask():
        (fact,) = task.clarify
        assert _value(fact) not in task.instruction and "when you ask" in task.instruction
        assert fact in task.scenario.knows and task.scenario.request == task.instruction
        assert task.user.knows[0] == task.instruction
        assert "clarification" in task.constructs and task.kind != "info"
        assert any(_value(fact).strip('"$') in json.dumps(c.args) for c in task.oracle)  # the oracle still passes it
    for states in _tasks():
        assert len({t.instruction for t in states}) == 1 and len({tuple(t.clarify) for t in states}) == 1


def test_ask_user_answers_with_the_fact() -> None:
    task = _must_ask()[0]
    ep = _episode(task)
    assert "ask_user" in [t["function"]["name"] for t in ep.tools]
    res = ep.call("ask_user", {"question": "What should the new value be?"})
    assert res.ok and _value(task.clarify[0]) in res.content
    assert not ep.call("ask_user", "[1]").ok and ep.call("ask_user", "{oops").code == "invalid_arguments"
    ep.finish()


def test_asking_then_writing_scores_1_and_writing_first_scores_0() -> None:
    for task in _must_ask():
        ep = _episode(task)
        ep.call("ask_user", {"question": "What is the new value?"})
        _oracle_calls(ep, task)
        reward = ep.finish()
        assert reward.score == 1.0 and reward.part("clarification").passed, task.id
        for late in (False, True):  # the right value, but written before asking (or never asking)
            ep = _episode(task)
            _oracle_calls(ep, task)
            if late:
                ep.call("ask_user", {"question": "Was that right?"})
            reward = ep.finish()
            assert reward.score == 0.0 and reward.part("state").passed, task.id
            assert not reward.part("clarification").passed and "not_clarified" in [m.kind for m in reward.breakdown]


def test_a_message_to_a_simulated_user_counts_as_asking() -> None:
    task = _must_ask()[0]
    ep = _episode(task)
    ep.note_user_message()
    _oracle_calls(ep, task)
    assert ep.finish().score == 1.0
    app = _app()
    write = next(c.tool for c in task.oracle if app.spec_by_name[c.tool].mode == "write")
    read = next(c.tool for c in task.oracle if app.spec_by_name[c.tool].mode == "read")
    calls = [{"tool": read, "outcome": "success", "turn": 1}, {"tool": write, "outcome": "success", "turn": 3}]
    assert not asked_before_writing(app, calls)
    assert asked_before_writing(app, calls, plain_turns=[2]) and not asked_before_writing(app, calls, plain_turns=[4])
    assert asked_before_writing(app, [{"tool": "ask_user", "outcome": "success", "turn": 1}, *calls])


def test_the_trainer_view_steps_through_ask_user() -> None:
    task = _must_ask()[0]
    ep = _episode(task)
    assert ep.reset().observation == task.instruction
    step = ep.step({"name": "ask_user", "arguments": json.dumps({"question": "What is it?"})})
    assert step.outcome == "success" and not step.done and _value(task.clarify[0]) in step.observation
    ep.finish()


def test_other_tasks_have_no_clarify_key_nor_ask_user() -> None:
    others = [t for states in _tasks() for t in states if not t.clarify]
    assert others
    for task in others:
        assert "clarify" not in json.loads(task.model_dump_json()) and "clarification" not in task.constructs
        ep = _episode(task)
        assert "ask_user" not in [t["function"]["name"] for t in ep.tools]
        assert ep.call("ask_user", {"question": "?"}).code == "unknown_tool"
        ep.finish()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=900)


def test_the_oracle_agent_scores_1_on_every_task_of_a_built_corpus(tmp_path: Path) -> None:
    corpus, out = tmp_path / "corpus", tmp_path / "run"
    res = _cli("build", str(corpus), "--domain", APP, "--tasks-per-app", "12", "--states", "2", "--distractors", "4")
    assert res.returncode == 0, res.stderr
    res = _cli("run", str(corpus), "--agent", "oracle", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["pass@1"] == 1.0
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    asked = [r for r in records if "clarification" in r["reward"]["parts"]]
    assert asked and all(r["tool_calls"][0]["tool"] == "ask_user" and r["reward"]["score"] == 1.0 for r in asked)
