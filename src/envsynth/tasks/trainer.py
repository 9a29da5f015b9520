"""The trainer's view of a task episode: ``reset``, ``step``, ``state`` (as in OpenEnv).

A :class:`~envsynth.tasks.episode.TaskEpisode` has two views of one attempt at a task:

- the agent's: ``tools``, ``instruction``, ``call(name, arguments)`` and ``finish(answer)``;
- the trainer's: ``reset()`` (the first observation; a used episode starts again from s0),
  ``step(action)`` (one tool call, or ``complete_task`` that ends and scores the episode)
  and ``state()`` (task, seed, calls made, done, reward).

Both run the same calls on the same state and end in the same reward: ``step`` is ``call``
for a tool and ``finish`` for ``complete_task``. This module holds the trainer's types and
the steps themselves; the methods on ``TaskEpisode`` call them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envsynth.runtime.episode import REJECTION, SUCCESS, Outcome, parse_arguments
from envsynth.runtime.reward import Reward

if TYPE_CHECKING:
    from envsynth.tasks.episode import TaskEpisode

COMPLETE = "complete_task"
"""The action that ends an episode (its one argument: ``answer``)."""
COMPLETED = "Task completed."
"""The observation of a ``complete_task`` step."""


@dataclass(frozen=True)
class Action:
    """One action of the agent: a tool call, or ``complete_task`` with ``{"answer": ...}``.

    Attributes:
        name: the tool's name (``complete_task`` to finish).
        arguments: a dict, its JSON text (as OpenAI sends it), or None for no arguments.
    """

    name: str
    arguments: dict[str, Any] | str | None = None


@dataclass(frozen=True)
class StepResult:
    """What the trainer gets back from :meth:`TaskEpisode.reset` and :meth:`TaskEpisode.step`.

    Attributes:
        observation: what the agent sees: the instruction (reset), the tool's JSON result or
            its error message, or ``"Task completed."``.
        outcome: the call's outcome class (``success``, ``anticipated_rejection``,
            ``unexpected_failure``); None after reset.
        code: which check rejected the call (see :class:`~envsynth.runtime.episode.CallResult`).
        reward: the score once the episode is done, else None.
        done: the episode has ended (``complete_task`` or :meth:`TaskEpisode.finish`).
    """

    observation: str
    outcome: Outcome | None = None
    code: str | None = None
    reward: float | None = None
    done: bool = False


@dataclass(frozen=True)
class EpisodeState:
    """Where an episode stands (:meth:`TaskEpisode.state`); never the ground truth.

    Attributes:
        task_id: the task.
        seed: the episode seed (ids and the clock inside tools).
        calls: tool calls made since the episode (re)started.
        done: the episode has ended.
        answer: the answer it ended with (None before).
        tainted: a call hit an environment bug (Unexpected Failure).
        reward: the verifier's reward once done, else None.
    """

    task_id: str
    seed: int
    calls: int
    done: bool
    answer: Any
    tainted: bool
    reward: Reward | None


def as_action(action: Action | Mapping[str, Any]) -> Action:
    """An :class:`Action`, or a mapping with ``name`` and ``arguments`` (an OpenAI function call), as an Action."""
    if isinstance(action, Action):
        return action
    return Action(action.get("name"), action.get("arguments"))  # type: ignore[arg-type]


def step(episode: TaskEpisode, action: Action | Mapping[str, Any]) -> StepResult:
    """One action on ``episode``: a tool call (:meth:`TaskEpisode.call`) or ``complete_task`` (:meth:`TaskEpisode.finish`).

    ``complete_task`` arguments other than ``answer`` (or that are not a JSON object) are
    an Anticipated Rejection (code ``invalid_arguments``) and the episode goes on. Once
    the episode is done every step is the episode's ``episode_finished`` rejection, with
    ``done`` true and the reward.
    """
    act = as_action(action)
    if act.name == COMPLETE and not episode.finished:
        arguments, problem = _complete_arguments(act.arguments)
        if problem is not None:
            return StepResult(problem, REJECTION, "invalid_arguments")
        reward = episode.finish(arguments.get("answer"))
        return StepResult(COMPLETED, SUCCESS, None, reward.score, True)
    res = episode.call(act.name, act.arguments)
    score = episode.state().reward
    return StepResult(res.content, res.outcome, res.code, None if score is None else score.score, episode.finished)


def _complete_arguments(raw: dict[str, Any] | str | None) -> tuple[dict[str, Any], str | None]:
    """``complete_task``'s arguments as a dict, or a message saying what is wrong with them."""
    value: Any = raw
    if isinstance(raw, str):
        value, problem = parse_arguments(raw)
        if problem is not None:
            return {}, f"Arguments of {COMPLETE} are {problem}."
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"Arguments of {COMPLETE} must be a JSON object."
    extra = set(value) - {"answer"}
    if extra:
        names = ", ".join(sorted(map(repr, extra)))  # an agent's key may be of any size: cut, never echoed whole
        return {}, f"{COMPLETE} takes only 'answer', not {names if len(names) <= 64 else f'{names[:64]}... ({len(names)} characters)'}."
    return value, None
