"""The runner of one rollout: start a TaskEpisode, let the policy converse (function calling or code acting), score it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from envsynth.agents.base import Policy
from envsynth.agents.loop import converse
from envsynth.grading import add_communication, answer_spec
from envsynth.grading.userfail import internal_ids, user_failure
from envsynth.llm.types import message_text
from envsynth.rollout.trajectory import Trajectory
from envsynth.runtime.parts import ALL, ScoreRule
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
    score_rule: ScoreRule = ALL,
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
            With one, the reward gains the ``communication`` part (the answer reached the
            user) and an episode the simulated user broke is labelled ``user_failure``.
        score_rule: how the reward's parts make its score (default: every part must pass).
    """
    t = corpus.task(task) if isinstance(task, str) else task
    t0 = time.perf_counter()
    ep = corpus.start(t, seed=seed, score_rule=score_rule)
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
        answer = given_answer(t, conv, code=True)
        reward = code_ep.finish(answer=answer)  # the complete_task reward, or scored now
    else:
        try:
            conv = await converse(ep, policy, user)
        except BaseException:
            ep.finish()  # give the pooled state back
            raise
        t1 = time.perf_counter()
        answer = given_answer(t, conv)
        reward = ep.finish(answer=answer)
    label, why = None, None
    if user is not None:
        app = corpus.apps[t.app]
        reward = add_communication(reward, app, t, plain_texts(conv.messages, code=sandbox is not None), score_rule)
        spec = answer_spec(app, t) if t.expected_answer is not None else None
        why = user_failure(t, conv.messages, conv.stop_reason, spec, internal_ids(app, t))
        label = None if why is None else "user_failure"
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
        answer=answer,
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
        effects=_effects(ep),
        label=label,
        label_detail=why,
    )


ENDED_IN_WORDS = ("final_message", "user_stop", "user_turns")
"""Stop reasons of a conversation that ended on the agent's words, not on ``complete_task``."""


def given_answer(task: Task, conv: Any, code: bool = False) -> Any:
    """The answer an episode gave: its ``complete_task`` answer; for a question the agent answered in
    words instead (the conversation ended on a plain message), its last plain message."""
    if conv.answer is not None or task.expected_answer is None or conv.stop_reason not in ENDED_IN_WORDS:
        return conv.answer
    said = [t for t in plain_texts(conv.messages, code=code) if t.strip()]
    return said[-1] if said else None


def plain_texts(messages: list[dict[str, Any]], code: bool = False) -> list[str]:
    """The agent's plain messages to the user, in order: assistant text without tool calls (in code
    mode: without a code block, which goes to the sandbox, not to the user)."""
    texts = [message_text(m.get("content")) for m in messages if m.get("role") == "assistant" and not m.get("tool_calls")]
    if code:
        from envsynth.agents.codeloop import extract_code

        texts = [t for t in texts if extract_code(t) is None]
    return texts


def _effects(ep: Any) -> dict[str, Any] | None:
    """The finished episode's effects on s0 as JSON data (None when finishing failed)."""
    try:
        return ep.effects().to_dict()
    except RuntimeError:
        return None
