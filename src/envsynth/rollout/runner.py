"""The runner of one rollout: start a TaskEpisode, let the policy converse (function calling or code acting), score it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from envsynth.agents.base import Policy
from envsynth.agents.loop import converse
from envsynth.rollout.trajectory import Trajectory
from envsynth.tasks.model import Task

if TYPE_CHECKING:
    from envsynth.agents.user import UserSimulator
    from envsynth.corpus.load import Corpus
    from envsynth.sandbox import CodeSandbox


async def run_episode(
    corpus: Corpus,
    task: Task | str,
    policy: Policy,
    seed: int = 0,
    attempt: int = 0,
    sandbox: CodeSandbox | None = None,
    user: UserSimulator | None = None,
) -> Trajectory:
    """Run ``policy`` on one fresh episode of ``task`` and score it.

    The episode is always finished (scored and its state released), also when the model
    failed: the reward is then that of the state as the agent left it, and ``error`` says
    what failed. Only the episode's own state changes.

    Args:
        corpus: the loaded corpus.
        task: a task or its id.
        policy: the policy (one episode at a time).
        seed: the episode seed (ids and clock inside tools).
        attempt: recorded on the trajectory.
        sandbox: code-acting mode: the policy writes Python blocks, run on this sandbox's
            workers (:func:`~envsynth.agents.codeloop.converse_code`); None: function calling.
        user: a user simulator for this episode (it opens the conversation and answers the
            agent's plain messages); None: the instruction is the first user message.
    """
    t = corpus.task(task) if isinstance(task, str) else task
    t0 = time.perf_counter()
    ep = corpus.start(t, seed=seed)
    if sandbox is not None:
        from envsynth.agents.codeloop import converse_code

        code_ep = sandbox.episode(ep)
        try:
            conv = await converse_code(code_ep, policy, user)
        except BaseException:
            code_ep.close()
            if not ep.finished:
                ep.finish()  # give the pooled state back
            raise
        t1 = time.perf_counter()
        reward = code_ep.finish(answer=conv.answer)  # the complete_task reward, or scored now
    else:
        try:
            conv = await converse(ep, policy, user)
        except BaseException:
            ep.finish()  # give the pooled state back
            raise
        t1 = time.perf_counter()
        reward = ep.finish(answer=conv.answer)
    t2 = time.perf_counter()
    return Trajectory(
        task_id=t.id,
        task_hash=t.hash,
        app=t.app,
        kind=t.kind,
        attempt=attempt,
        seed=seed,
        agent=str(getattr(policy, "name", type(policy).__name__)),
        model=str(getattr(policy, "model", "")),
        messages=conv.messages,
        answer=conv.answer,
        stop_reason=conv.stop_reason,
        turns=conv.turns,
        tool_calls=conv.tool_calls,
        reward=reward.to_dict(),
        usage=conv.usage.to_dict(),
        timings={"model": round(conv.model_s, 6), "tools": round(conv.tools_s, 6), "finish": round(t2 - t1, 6), "total": round(t2 - t0, 6)},
        tainted=ep.tainted,
        error=conv.error,
        user_turns=conv.user_turns,
        user_usage=None if conv.user_usage is None else conv.user_usage.to_dict(),
    )
