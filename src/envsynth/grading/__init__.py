"""Grading: answers read as a person reads them, a reward of separate parts, an optional LLM judge, regrading.

- :mod:`envsynth.grading.answers`: the deterministic answer matcher (:func:`match_answer`);
- :mod:`envsynth.grading.spec`: what kind of value a task's answer is (:func:`answer_spec`);
- :mod:`envsynth.grading.parts`: the reward's parts and the score rule (:class:`ScoreRule`);
- :mod:`envsynth.grading.grade`: the rule-based grader of a finished episode (:func:`grade_task`).
"""

from __future__ import annotations

from typing import Any

from envsynth.grading.answers import AnswerSpec, AnswerVerdict, match_answer, mentions, spec_for
from envsynth.grading.parts import ALL, Part, ScoreRule

__all__ = [
    "ALL",
    "AnswerSpec",
    "AnswerVerdict",
    "Part",
    "ScoreRule",
    "add_communication",
    "answer_spec",
    "grade_task",
    "match_answer",
    "mentions",
    "spec_for",
]


def __getattr__(name: str) -> Any:  # the modules that need the task model load on first use
    if name == "answer_spec":
        from envsynth.grading.spec import answer_spec

        return answer_spec
    if name in ("grade_task", "add_communication"):
        from envsynth.grading import grade

        return getattr(grade, name)
    raise AttributeError(name)
