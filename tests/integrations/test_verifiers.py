"""The verifiers integration: real rollouts through verifiers' own API, a scripted model behind a local chat server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import verifiers as vf
from openai import AsyncOpenAI

import envsynth
from chat_server import chat_server, completion
from envsynth import catalog
from envsynth.agents.base import SYSTEM_PROMPT, with_app_policy
from envsynth.agents.oracle import OracleAgent
from envsynth.blueprint.policy import policy_text
from envsynth.corpus import build_corpus
from envsynth.integrations import verifiers_env
from envsynth.integrations.verifiers_env import load_environment, task_rows

MODULE = "envsynth.integrations.verifiers_env"
Policy = Callable[[Any, list[dict[str, Any]]], dict[str, Any]]
"""``(task, messages) -> the assistant message`` a scripted model sends."""


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One app, two tasks (a question and an action), built offline."""
    out = tmp_path_factory.mktemp("verifiers") / "corpus"
    build_corpus(out, blueprints=[catalog.load("tempo_music")], tasks_per_app=2, states=1, seed=0)
    return out


def _oracle(task: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The task's oracle calls as tool calls, one per turn, then ``complete_task`` with its answer."""
    return OracleAgent(task).reply(messages)


def _complete_at_once(task: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Do nothing: ``complete_task`` with no answer on the first turn."""
    call = {"id": "c0", "type": "function", "function": {"name": "complete_task", "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def _evaluate(corpus_dir: Path, policy: Policy, rollouts: int = 1, **filters: Any) -> list[dict[str, Any]]:
    """Every row of the environment played ``rollouts`` times by ``policy`` (served over HTTP); the outputs."""
    corpus = envsynth.load_corpus(corpus_dir)
    by_instruction = {t.instruction: t for t in corpus.tasks}

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")
        message = policy(by_instruction[user], body["messages"])
        return 200, completion(body["model"], message, finish="tool_calls" if message.get("tool_calls") else "stop")

    env = load_environment(corpus_dir, **filters)
    with chat_server(reply) as url:
        out = env.evaluate_sync(client=AsyncOpenAI(base_url=url, api_key="test"), model="scripted", rollouts_per_example=rollouts)
    return out["outputs"]


def _last_call(output: dict[str, Any]) -> dict[str, Any]:
    """The last tool call of a rollout's output (verifiers writes each call of an output as JSON text)."""
    call = output["completion"][-2]["tool_calls"][-1]
    return json.loads(call) if isinstance(call, str) else call


def _tools(corpus_dir: Path, task_id: str) -> list[dict[str, Any]]:
    """The tools an episode of the task offers."""
    ep = envsynth.load_corpus(corpus_dir).start(task_id)
    ep.finish()
    return ep.tools


def test_rows_are_the_tasks_prompts_and_tools(corpus_dir):
    corpus = envsynth.load_corpus(corpus_dir)
    rows = task_rows(corpus)
    assert len(rows) == len(corpus.tasks) == 2
    for row, task in zip(rows, corpus.tasks):
        info = json.loads(row["info"])
        system = with_app_policy(SYSTEM_PROMPT, policy_text(corpus.apps[task.app].blueprint))  # the prompt, the app's policy
        assert row["prompt"] == [{"role": "system", "content": system}, {"role": "user", "content": task.instruction}]
        ep = corpus.start(task)
        assert json.loads(row["tools"]) == ep.tools  # the visible tools and complete_task
        ep.finish()
        assert info["task_id"] == task.id and info["tier"] == task.tier and info["difficulty"] == task.difficulty
        assert not {"oracle", "expected_effects", "expected_answer", "answer"} & set(info) and "answer" not in row


def test_filters_choose_the_rows(corpus_dir):
    corpus = envsynth.load_corpus(corpus_dir)
    kinds = {t.kind for t in corpus.tasks}
    assert kinds == {"info", "action"}
    for kind in kinds:
        rows = task_rows(corpus, kind=kind)
        assert [json.loads(r["info"])["kind"] for r in rows] == [kind]
    tier = corpus.tasks[0].tier
    assert {json.loads(r["info"])["tier"] for r in task_rows(corpus, tier=[tier])} == {tier}
    assert len(task_rows(corpus, app="tempo_music", limit=1)) == 1
    assert task_rows(corpus, app="no_such_app") == []
    with pytest.raises(ValueError, match="no task"):
        load_environment(corpus_dir, app="no_such_app")
    with pytest.raises(ValueError, match="unknown tier"):
        task_rows(corpus, tier="impossible")


def test_oracle_rollouts_score_one(corpus_dir):
    outputs = _evaluate(corpus_dir, _oracle)
    assert len(outputs) == 2
    for o in outputs:
        assert o["reward"] == 1.0, o["completion"]
        assert o["oai_tools"] == _tools(corpus_dir, o["info"]["task_id"])  # what the model was offered
        assert o["metrics"]["envsynth_completed"] == 1.0
        assert o["stop_condition"] == "has_final_env_response"
        assert _last_call(o)["function"]["name"] == "complete_task"
        assert (o["completion"][-1]["role"], o["completion"][-1]["content"]) == ("tool", "Task completed.")
    question = next(o for o in outputs if o["info"]["kind"] == "info")
    task = envsynth.load_corpus(corpus_dir).task(question["info"]["task_id"])
    assert json.loads(_last_call(question)["function"]["arguments"]) == {
        "answer": task.expected_answer
    }  # the answer went through complete_task


def test_doing_nothing_scores_zero(corpus_dir):
    outputs = _evaluate(corpus_dir, _complete_at_once)
    assert [o["reward"] for o in outputs] == [0.0, 0.0]
    assert all(o["metrics"]["envsynth_completed"] == 1.0 for o in outputs)


def test_stopping_without_complete_task_scores_the_state_as_it_stands(corpus_dir):
    def talk(task: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": "I cannot help with that."}

    outputs = _evaluate(corpus_dir, talk)
    assert [(o["reward"], o["metrics"]["envsynth_completed"], o["stop_condition"]) for o in outputs] == [(0.0, 0.0, "no_tool_calls")] * 2


def test_a_wrong_answer_scores_zero(corpus_dir):
    def wrong(task: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        msg = OracleAgent(task).reply(messages)
        call = msg["tool_calls"][0]["function"]
        if call["name"] == "complete_task" and task.expected_answer is not None:
            call["arguments"] = json.dumps({"answer": "certainly not this"})
        return msg

    outputs = _evaluate(corpus_dir, wrong, kind="info")
    assert [o["reward"] for o in outputs] == [0.0]


def test_rejected_calls_come_back_as_tool_messages_and_the_rollout_goes_on(corpus_dir):
    def fumble_first(task: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if not any(m["role"] == "tool" for m in messages):
            calls = [
                {"id": "bad-0", "type": "function", "function": {"name": "drop_all_tables", "arguments": "{}"}},
                {"id": "bad-1", "type": "function", "function": {"name": task.oracle[0].tool, "arguments": "{not json"}},
            ]
            return {"role": "assistant", "content": None, "tool_calls": calls}
        return OracleAgent(task).reply(messages)

    outputs = _evaluate(corpus_dir, fumble_first)
    assert [o["reward"] for o in outputs] == [1.0, 1.0]
    rejected = outputs[0]["completion"][1:3]
    assert [m["role"] for m in rejected] == ["tool", "tool"] and "Unknown tool" in rejected[0]["content"]


def test_max_turns_ends_the_rollout_unfinished(corpus_dir):
    outputs = _evaluate(corpus_dir, _oracle, max_turns=1)
    assert [(o["reward"], o["metrics"]["envsynth_completed"], o["stop_condition"]) for o in outputs] == [
        (0.0, 0.0, "max_turns_reached")
    ] * 2


def test_rollouts_of_one_task_play_isolated_episodes(corpus_dir):
    # three concurrent rollouts of the action task each write the same rows to their own copy of s0
    outputs = _evaluate(corpus_dir, _oracle, rollouts=3, kind="action")
    assert [o["reward"] for o in outputs] == [1.0, 1.0, 1.0]


def test_verifiers_finds_the_module_by_name(corpus_dir):
    env = vf.load_environment(MODULE, corpus=str(corpus_dir), limit=1)
    assert isinstance(env, vf.MultiTurnEnv)
    assert len(env.get_dataset()) == 1 and env.env_args == {"corpus": str(corpus_dir), "limit": 1}
    # vf-eval's env server loads the environment again by its env_id: it must name this module
    assert env.env_id == load_environment(corpus_dir, limit=1).env_id == MODULE


def test_importing_the_module_imports_no_verifiers():
    code = f"import sys, {MODULE}\nassert 'verifiers' not in sys.modules and 'datasets' not in sys.modules"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def test_a_missing_verifiers_says_which_extra(monkeypatch, corpus_dir):
    monkeypatch.setitem(sys.modules, "verifiers", None)
    with pytest.raises(ImportError, match=r"pip install 'envsynth\[verifiers\]'"):
        verifiers_env.load_environment(corpus_dir)
