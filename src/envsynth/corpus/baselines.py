"""Guessing baselines run on a built corpus: how often an agent that does not do the task scores 1.0.

``envsynth inspect`` and the report show these rates; admission already refuses every task one of
them solves (:mod:`envsynth.tasks.admission.baselines`), so on a corpus built by this version each
rate is 0. The baselines:

- ``do-nothing``: no call, no answer;
- ``constant '1'``, ``constant '0'``, ``constant 'yes'``: no call, that answer;
- ``most common answer``: no call, the answer the corpus's tasks expect most often;
- ``first candidate``: an episode that makes the oracle's calls but takes the first row listed
  wherever the oracle picks a row out of a search result (run for real, scored by the episode).
  It counts as solving a task only when it scored 1.0 by a guess: some row it took was the first
  of several listed (where each search lists one row, it found the rows as the oracle does).

Scoring uses the rule-based grader the episodes use, so a rate here is what a trainer would see.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from envsynth.grading.grade import grade_task
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.reward import Effects
from envsynth.tasks.model import Ref
from envsynth.tasks.planning.refs import MISSING, resolve

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.tasks.model import Task

CONSTANTS: tuple[str, ...] = ("1", "0", "yes")
SAMPLE = 2000
"""Tasks the baselines are run on at most (spread evenly over the corpus)."""

_NONE = Effects.from_dict({})


def sample(tasks: Sequence[Task], limit: int = SAMPLE) -> list[Task]:
    """At most ``limit`` of ``tasks``, spread evenly (all of them when there are no more)."""
    n = len(tasks)
    if n <= limit:
        return list(tasks)
    return [tasks[i * n // limit] for i in range(limit)]


def most_common_answer(tasks: Sequence[Task]) -> str | None:
    """The expected answer the tasks share most often, as text (ties: the first seen); None when none asks one."""
    counts = Counter(_text(t.expected_answer) for t in tasks if t.expected_answer is not None)
    return counts.most_common(1)[0][0] if counts else None


def baseline_rates(corpus: Corpus, tasks: Sequence[Task] | None = None, limit: int = SAMPLE) -> dict[str, Any]:
    """Per baseline, the tasks it scores 1.0 on, of a sample of the corpus's tasks (``tasks``: them, when already read).

    Returns:
        ``{"tasks": n, "sampled": bool, "most_common_answer": str | None, "baselines": {name: {"solved": k,
        "rate": k / n}}}``.
    """
    everything = corpus.tasks if tasks is None else tasks
    tasks = sample(everything, limit)
    common = most_common_answer(tasks)
    guesses: dict[str, Any] = {"do-nothing": None, **{f"constant {c!r}": c for c in CONSTANTS}}
    if common is not None:
        guesses["most common answer"] = common
    solved = dict.fromkeys([*guesses, "first candidate"], 0)
    for task in tasks:
        app = corpus.apps[task.app]
        for name, answer in guesses.items():
            solved[name] += grade_task(app, task, _NONE, answer=answer).score == 1.0
        score, guessed = first_candidate(corpus, task)
        solved["first candidate"] += guessed and score == 1.0
    n = len(tasks)
    return {
        "tasks": n,
        "sampled": n < len(everything),
        "most_common_answer": common,
        "baselines": {k: {"solved": v, "rate": round(v / n, 4) if n else 0.0} for k, v in solved.items()},
    }


def first_candidate(corpus: Corpus, task: Task) -> tuple[float, bool]:
    """An episode of ``task`` that makes the oracle's calls, taking the first listed row at every pick.

    Returns:
        its score, and whether some row it took was the first of several a search listed (a guess).
    """
    episode = corpus.start(task)
    results: list[Any] = []
    guessed = False
    for call in task.oracle:
        guessed |= any(r.item is not None and len(_items(results[r.step])) > 1 for r in call.refs.values() if r.step < len(results))
        refs = {p: Ref(step=r.step, field=r.field, item=0) if r.item is not None else r for p, r in call.refs.items()}
        filled = {p: resolve(r, results) for p, r in refs.items()}
        if any(v is MISSING for v in filled.values()):
            break
        done = episode.call(call.tool, {**call.args, **filled})
        results.append(done.data if done.outcome == "success" else None)
    answer = None
    if task.answer_step is not None and task.answer_field is not None and task.answer_step < len(results):
        answer = answer_in(results[task.answer_step], task.answer_field)
    return episode.finish(answer).score, guessed


def _items(result: Any) -> list[Any]:
    items = result.get("items") if isinstance(result, dict) else None
    return items if isinstance(items, list) else []


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
