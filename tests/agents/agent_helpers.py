"""Scripted models that follow the oracle with planned mistakes in between."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from envsynth.agents import ChatAgent, OracleAgent
from envsynth.corpus import Corpus
from envsynth.llm import ScriptedProvider
from envsynth.llm.types import Message
from envsynth.rollout import Trajectory, run_episode
from envsynth.tasks.model import Task

ORACLE = "oracle"
"""A plan entry: the oracle's next step (its calls resolve refs from earlier results)."""


def oracle_plan(task: Task) -> list[Any]:
    """Every oracle step, then complete_task with the answer."""
    return [ORACLE] * (len(task.oracle) + 1)


def planned(task: Task, plan: list[Any]) -> ScriptedProvider:
    """A provider replaying ``plan``: explicit entries as they are, ``ORACLE`` as the oracle's next step."""
    oracle = OracleAgent(task)

    def script(messages: list[Message], tools: list[Message] | None, i: int) -> Any:
        if i >= len(plan):
            return "I have nothing more to do."
        entry = plan[i]
        return oracle.reply(messages) if entry == ORACLE else entry

    return ScriptedProvider(script)


def run(corpus: Corpus, task: Task, plan: list[Any], **agent: Any) -> Trajectory:
    """One episode of ``task`` by a ChatAgent over a planned provider."""
    return asyncio.run(run_episode(corpus, task, ChatAgent(planned(task, plan), **agent), seed=0))


def kinds(traj: Trajectory) -> list[str]:
    """The mismatch kinds of the reward breakdown."""
    return sorted(m["kind"] for m in traj.reward["breakdown"])


def first_write(corpus: Corpus, task: Task) -> int | None:
    """Index of the first oracle call without refs that changes the state (None if none)."""
    app = corpus.apps[task.app]
    for i, c in enumerate(task.oracle):
        spec = app.spec_by_name[c.tool]
        if not c.refs and (spec.writes or spec.creates or spec.deletes):
            return i
    return None


def args_of(task: Task, i: int) -> str:
    return json.dumps(task.oracle[i].args)
