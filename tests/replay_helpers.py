"""Replaying a list of oracle-style calls in a fresh episode of a task, on the real runtime."""

from __future__ import annotations

import json
from typing import Any

from envsynth.corpus import Corpus
from envsynth.tasks.admission.policy import resolved
from envsynth.tasks.model import Call, Task


def play(corpus: Corpus, task: Task, calls: list[Call]) -> float:
    """Make ``calls`` (refs to earlier results resolved) in a fresh episode of ``task``, finish with the
    answer the task's answer step gives (if any), and return the score. Every call must succeed."""
    ep = corpus.start(task.id)
    results: list[Any] = []
    for c in calls:
        res = ep.call(c.tool, resolved(c, results))
        assert res.outcome == "success", (task.id, c, res.content)
        results.append(json.loads(res.content))
    answer = None
    if task.answer_step is not None and task.answer_step < len(results):
        got = results[task.answer_step]
        answer = got.get(task.answer_field) if task.answer_field else got
    return ep.finish(answer).score
