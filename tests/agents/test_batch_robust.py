"""One agent cannot abort a rollout: hostile tool calls are answered, a crashed episode is recorded (issue 13, item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import first_write, oracle_plan, run

from envsynth.agents import ChatAgent, OracleAgent
from envsynth.corpus import Corpus
from envsynth.llm import ScriptedProvider, tool_reply
from envsynth.llm.types import Message
from envsynth.rollout import read_trajectories, run_batch, summarize
from envsynth.tasks.model import Task

DEEP = 5000


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture(scope="module")
def action_task(corpus: Corpus) -> Task:
    return next(t for t in corpus.tasks if t.kind in ("action", "mixed") and first_write(corpus, t) is not None)


def test_deeply_nested_or_huge_arguments_are_answered_then_recovery(corpus: Corpus, action_task: Task) -> None:
    tool = action_task.oracle[0].tool
    hostile = ["[" * DEEP, '{"a":' * DEEP, '{"a": ' + "[" * DEEP + "]" * DEEP + "}", '{"a": ' + "1" * 5000 + "}"]
    traj = run(corpus, action_task, [tool_reply(*((tool, h) for h in hostile)), *oracle_plan(action_task)])
    assert traj.passed and traj.error is None
    assert [c["outcome"] for c in traj.tool_calls[: len(hostile)]] == ["malformed"] * len(hostile)
    answers = [m["content"] for m in traj.messages[3 : 3 + len(hostile)]]
    assert all(m.startswith(f"Error: the arguments of {tool} are ") for m in answers)
    assert "nested too deeply" in answers[0] and "nested too deeply" in answers[1] and "too many digits" in answers[3]


class _Scripted:
    """A policy replying with fixed messages (anything, not only what a chat model could send), then the oracle."""

    name = "scripted"
    model = "scripted"
    system_prompt = ""

    def __init__(self, task: Task, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.oracle = OracleAgent(task)
        self.max_turns = len(replies) + len(task.oracle) + 1

    async def next_message(self, messages: list[Message], tools: list[Message]) -> Any:
        return self.replies.pop(0) if self.replies else self.oracle.reply(messages)


def _raw_call(name: Any, arguments: Any) -> Message:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x1", "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def test_malformed_replies_of_a_policy_are_answered(corpus: Corpus, action_task: Task) -> None:
    tool = action_task.oracle[0].tool
    replies = [
        _raw_call(tool, {"a": _deep_list(DEEP)}),  # arguments as a deep Python value
        _raw_call(["not", "a", "name"], {}),
        {"role": "assistant", "content": None, "tool_calls": ["not a call"]},
    ]
    traj = run_one(corpus, action_task, _Scripted(action_task, replies))
    assert traj.passed and traj.error is None
    assert [c["outcome"] for c in traj.tool_calls[:3]] == ["malformed", "anticipated_rejection", "anticipated_rejection"]
    json.dumps(traj.to_dict())  # the trajectory can be written


def test_a_reply_that_is_not_a_message_is_an_agent_error(corpus: Corpus, action_task: Task) -> None:
    traj = run_one(corpus, action_task, _Scripted(action_task, [None]))
    assert traj.stop_reason == "agent_error" and traj.error is not None and "not a message" in traj.error["message"]


def run_one(corpus: Corpus, task: Task, policy: Any) -> Any:
    import asyncio

    from envsynth.rollout import run_episode

    return asyncio.run(run_episode(corpus, task, policy, seed=0))


def test_one_crashing_episode_does_not_abort_the_batch(corpus: Corpus, tmp_path: Path) -> None:
    tasks = corpus.tasks
    crash, surrogate = tasks[0], tasks[1]

    def factory(task: Task, attempt: int) -> Any:
        if task.id == crash.id:
            raise RecursionError("maximum recursion depth exceeded")
        if task.id == surrogate.id:  # a model whose text holds a lone surrogate (valid in JSON, not in UTF-8)
            return ChatAgent(
                ScriptedProvider(lambda messages, tools, i: {**OracleAgent(task).reply(messages), "content": "thinking \ud800"})
            )
        return OracleAgent(task)

    res = run_batch(corpus, factory, attempts=1, concurrency=3, out=tmp_path / "run")
    assert res.written == len(tasks) and res.errors == 1
    recs = {r["task_id"]: r for r in read_trajectories(tmp_path / "run")}
    assert set(recs) == {t.id for t in tasks}
    bad = recs[crash.id]
    assert bad["stop_reason"] == "episode_error" and bad["reward"]["score"] == 0.0
    assert bad["error"]["type"] == "RecursionError" and bad["error"]["kind"] == "crash" and "RecursionError" in bad["error"]["trace"]
    assert all(r["reward"]["passed"] for tid, r in recs.items() if tid != crash.id)
    assert recs[surrogate.id]["messages"][2]["content"] == "thinking \ufffd"
    s = summarize(tmp_path / "run").to_dict()
    assert s["errors"]["episodes"] == 1 and s["episodes"] == len(tasks)
    again = run_batch(corpus, lambda t, a: OracleAgent(t), attempts=1, out=tmp_path / "run", rerun_errors=True)
    assert again.written == 1 and again.errors == 0  # the crashed pair is run again
