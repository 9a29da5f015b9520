"""The oracle agent solves every task of a real corpus through the same loop a model uses."""

from __future__ import annotations

import asyncio
from pathlib import Path

from envsynth.agents import OracleAgent
from envsynth.corpus import Corpus
from envsynth.rollout import read_trajectories, run_batch, run_episode, summarize


def test_oracle_passes_every_task(corpus: Corpus, tmp_path: Path) -> None:
    res = run_batch(corpus, lambda task, attempt: OracleAgent(task), attempts=2, concurrency=4, out=tmp_path / "run")
    assert res.written == 2 * len(corpus.tasks) and res.skipped == 0 and res.errors == 0
    s = summarize(tmp_path / "run").to_dict()
    assert s["tasks"] == len(corpus.tasks) and s["episodes"] == 2 * len(corpus.tasks)
    assert s["pass@1"] == 1.0 and s["pass@2"] == 1.0 and s["mean_score"] == 1.0
    assert set(s["tool_calls"]) == {"success"} and s["stop_reasons"] == {"complete_task": 2 * len(corpus.tasks)}
    assert s["unexpected_failures"]["calls"] == 0 and s["errors"]["episodes"] == 0
    assert {r["kind"] for r in read_trajectories(tmp_path / "run")} >= {"action", "mixed"}


def test_oracle_trajectory_is_an_openai_conversation(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if any(c.refs for c in t.oracle) and not t.clarify)
    traj = asyncio.run(run_episode(corpus, task, OracleAgent(task), seed=3, attempt=1))
    assert traj.passed and traj.seed == 3 and traj.attempt == 1 and traj.task_hash == task.hash
    msgs = traj.messages
    if msgs[0]["role"] == "system":  # the app's policy, which the agent must follow
        assert "Policy" in msgs[0]["content"]
        msgs = msgs[1:]
    assert msgs[0] == {"role": "user", "content": task.instruction}
    assert traj.turns == len(task.oracle) + 1 == sum(m["role"] == "assistant" for m in msgs)
    for a, t in zip(msgs[1::2], msgs[2::2], strict=True):
        (call,) = a["tool_calls"]
        assert t == {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": t["content"]}
    assert msgs[-2]["tool_calls"][0]["function"]["name"] == "complete_task"
