"""Replaying a list of oracle-style calls in a fresh episode of a task, on the real runtime."""

from __future__ import annotations

import json
from typing import Any

from envsynth.corpus import Corpus
from envsynth.tasks.admission.policy import resolved
from envsynth.tasks.model import Call, Task


def play(corpus: Corpus, task: Task, calls: list[Call]) -> float:
    """Make ``calls`` (refs to earlier results resolved) in a fresh episode of ``task``, finish with the
    answer the task's answer step gives (if any), and return the score. Every call must succeed. A must-ask
    task's user is asked first, as the oracle agent asks (tasks/admission/clarify.py)."""
    ep = corpus.start(task.id)
    if task.clarify:
        ep.call("ask_user", {"question": "What does your request leave out?"})
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
