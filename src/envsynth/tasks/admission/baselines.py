"""Guessing baselines: agents that do not do the task, which must score 0 on every admitted task.

A task that one of them solves teaches nothing (a policy learns to guess), so admission refuses
it with reason ``guessable``. The baselines:

- **do-nothing**: no call, no answer (the verifier must fail on s0: ``verifier_passes_on_s0``);
- **constant answers**: no call, then :data:`CONSTANT_ANSWERS` as the answer, one at a time;
- **first candidate**: the oracle's calls, except that wherever the oracle picks a row out of a
  search result listing several rows, it takes the first one listed. It scores as the oracle does
  when each row the oracle picks out of several is the first listed, so such a task is refused (a
  row found by a search that lists only that row is found, not guessed).

:mod:`envsynth.corpus.baselines` runs the same agents on a built corpus for ``envsynth inspect``
and the report, and adds the corpus's most common answer, which admission cannot know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from envsynth.runtime.reward import Effects

if TYPE_CHECKING:
    from envsynth.runtime.app import App
    from envsynth.tasks.model import Call, Task

CONSTANT_ANSWERS: tuple[str, ...] = ("1", "0", "yes", "no")
"""The answers a constant-answer baseline gives without a single call."""

NO_EFFECTS = Effects.from_dict({})


def constant_guess(app: App, task: Task) -> str | None:
    """The first of :data:`CONSTANT_ANSWERS` that scores 1.0 on ``task`` with no call made, else None."""
    from envsynth.grading.grade import grade_task

    if task.expected_answer is None or task.expected_effects:
        return None  # doing nothing leaves an expected effect undone: every constant answer scores 0
    for guess in CONSTANT_ANSWERS:
        if grade_task(app, task, NO_EFFECTS, answer=guess, expected=NO_EFFECTS).score == 1.0:
            return guess
    return None


def first_candidate_wins(oracle: list[Call], result_of: Callable[[int], Any]) -> bool:
    """Whether the first-candidate baseline makes the oracle's calls: every row the oracle picks out of a search result
    listing several rows is its first (``result_of(step)``: that step's result, None when unknown; a pick out of an
    unknown result counts as not first). False when no pick is out of several rows.
    """
    out_of_several = False
    for call in oracle:
        for ref in call.refs.values():
            if ref.item is None:
                continue
            items = _items(result_of(ref.step))
            if items is None:
                return False  # a pick out of a result not known here: not shown to be the first candidate's
            if len(items) < 2:
                continue
            if ref.item != 0:
                return False
            out_of_several = True
    return out_of_several


def guessed_by(app: App, task: Task, result_of: Callable[[int], Any]) -> str | None:
    """The guessing baseline that scores 1.0 on ``task`` (``result_of``: the oracle's results by step), else None."""
    guess = constant_guess(app, task)
    if guess is not None:
        return f"constant answer {guess!r}"
    return "first candidate" if first_candidate_wins(task.oracle, result_of) else None


def _items(result: Any) -> list[Any] | None:
    items = result.get("items") if isinstance(result, dict) else None
    return items if isinstance(items, list) else None
