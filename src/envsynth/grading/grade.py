"""The rule-based grader of a finished episode: its effects, answer, calls and words, against the task's ground truth.

:func:`grade_task` is what :meth:`TaskEpisode.finish <envsynth.tasks.episode.TaskEpisode.finish>`
computes, as a pure function of what an episode leaves behind, so that a finished run can be
graded again (``envsynth regrade``) without running its agent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from envsynth.grading.spec import answer_spec
from envsynth.runtime.answers import mentions
from envsynth.runtime.parts import ALL, Part, ScoreRule, clarification_part, policy_part
from envsynth.runtime.reward import Effects, Reward, compare

if TYPE_CHECKING:
    from envsynth.runtime.app import App
    from envsynth.tasks.model import Task


def grade_task(
    app: App,
    task: Task,
    actual: Effects,
    answer: Any = None,
    calls: Iterable[tuple[str, Any]] = (),
    transcript: list[str] | None = None,
    rule: ScoreRule = ALL,
    expected: Effects | None = None,
    asked: bool = False,
) -> Reward:
    """The reward of an episode of ``task`` that made ``actual`` effects and gave ``answer``.

    Args:
        app: the task's app.
        task: the task (its expected effects and answer, policy rule, request).
        actual: the episode's effects on s0.
        answer: the ``complete_task`` answer.
        calls: the episode's successful tool calls as ``(tool, arguments)``, for the policy part.
        transcript: the agent's plain messages to the user when a user simulator played the
            user (adds the communication part); None without one.
        rule: how the parts make the score.
        expected: the task's expected effects as :class:`Effects`, when the caller has them.
        asked: whether the agent asked the user before its first write (``ask_user``, or a message to a
            simulated user), for the clarification part of a must-ask task (``task.clarify``).
    """
    extra: list[Part] = []
    if task.policy is not None and task.policy.forbidden:
        extra.append(policy_part(task.policy.rule, task.policy.forbidden, calls))
    if transcript is not None and task.expected_answer is not None:
        extra.append(communication_part(app, task, transcript))
    if task.clarify:
        extra.append(clarification_part(task.clarify, asked))
    return compare(
        expected if expected is not None else Effects.from_dict(task.expected_effects),
        actual,
        expected_answer=task.expected_answer,
        answer=answer,
        spec=answer_spec(app, task) if task.expected_answer is not None else None,
        extra=tuple(extra),
        rule=rule,
    )


def communication_part(app: App, task: Task, transcript: list[str]) -> Part:
    """Whether the answer reached the user: one of the agent's messages to them states it."""
    spec = answer_spec(app, task)
    for i, text in enumerate(transcript):
        if isinstance(text, str) and mentions(task.expected_answer, text, spec):
            return Part("communication", True, f"the agent told the user the answer (message {i + 1} of {len(transcript)})")
    said = "none of the agent's messages" if transcript else "the agent wrote nothing to the user, so it"
    return Part("communication", False, f"{said} states the answer {task.expected_answer!r} to the user")


def add_communication(reward: Reward, app: App, task: Task, transcript: list[str], rule: ScoreRule | None = None) -> Reward:
    """``reward`` with the communication part added (a run with a user simulator), scored again under ``rule``.

    A task that asks no question has no communication part: ``reward`` comes back rescored only.
    """
    rule = rule or reward.rule
    if task.expected_answer is None or reward.part("communication") is not None:
        return reward.rescored(rule)
    return reward.rescored(rule, (communication_part(app, task, transcript),))


ASK_USER = "ask_user"
"""The meta-tool a must-ask task's episode offers: the user answers with what the request left out."""


def asked_before_writing(app: App, tool_calls: Iterable[dict[str, Any]], plain_turns: Iterable[int] = ()) -> bool:
    """Whether a recorded episode asked the user before its first successful write.

    ``tool_calls``: the run record's calls in order (``tool``, ``outcome``, ``turn``); ``plain_turns``: the turns of
    the agent's messages to a simulated user (each of them asks). A call of ``ask_user`` counts when it comes before
    the first write, a message when its turn comes before the first write's.
    """
    first_message = min(plain_turns, default=None)
    for call in tool_calls:
        if call.get("outcome") != "success":
            continue
        if call.get("tool") == ASK_USER:
            return True
        spec = app.spec_by_name.get(str(call.get("tool")))
        if spec is not None and spec.mode == "write":
            turn = call.get("turn")
            return first_message is not None and isinstance(turn, int) and first_message < turn
    return first_message is not None
