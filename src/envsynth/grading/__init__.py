"""Grading: answers read as a person reads them, a reward of separate parts, an optional LLM judge, regrading.

- :mod:`envsynth.runtime.answers`: the deterministic answer matcher (:func:`match_answer`), kept in
  the runtime so that a :class:`~envsynth.runtime.reward.Reward` can explain its answer part;
- :mod:`envsynth.runtime.parts`: the reward's parts and the score rule (:class:`ScoreRule`);
- :mod:`envsynth.grading.spec`: what kind of value a task's answer is (:func:`answer_spec`);
- :mod:`envsynth.grading.grade`: the rule-based grader of a finished episode (:func:`grade_task`);
- :mod:`envsynth.grading.judge`: the optional LLM judge (:class:`~envsynth.grading.judge.Judge`);
- :mod:`envsynth.grading.userfail`: episodes a simulated user broke (``user_failure``).

Regrading a finished run is :func:`envsynth.rollout.regrade` (docs/grading.md).
"""

from __future__ import annotations

from envsynth.grading.grade import ASK_USER, add_communication, asked_before_writing, communication_part, grade_task
from envsynth.grading.spec import answer_spec
from envsynth.runtime.answers import AnswerSpec, AnswerVerdict, match_answer, mentions, spec_for
from envsynth.runtime.parts import ALL, Part, ScoreRule

__all__ = [
    "ALL",
    "ASK_USER",
    "AnswerSpec",
    "AnswerVerdict",
    "Part",
    "ScoreRule",
    "add_communication",
    "answer_spec",
    "asked_before_writing",
    "communication_part",
    "grade_task",
    "match_answer",
    "mentions",
    "spec_for",
]
