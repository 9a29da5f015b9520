"""Scoring never fails on what an agent answered: a wrong answer of any shape scores 0 (issue 13, item 3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envsynth.runtime.reward import Effects, compare


def _deep(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = {
    "open_brackets": "[" * 5000,
    "open_objects": '{"a":' * 5000,
    "json_number_of_5000_digits": "[" + "1" * 5000 + "]",
    "int_beyond_float": 10**400,
    "negative_int_beyond_float": -(10**400),
    "deep_list": _deep(5000),
    "nan": float("nan"),
    "lone_surrogate": "\ud800",
}


@pytest.mark.parametrize("expected", ["Alice", 12.5, ["a", "b"], {"k": "v"}], ids=["text", "number", "list", "dict"])
@pytest.mark.parametrize("answer", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_answer_scores_zero(expected: Any, answer: Any) -> None:
    reward = compare(Effects({}), Effects({}), expected_answer=expected, answer=answer)
    assert reward.score == 0.0 and len(reward.breakdown) == 1 and reward.breakdown[0].kind in ("wrong_answer", "missing_answer")
    assert len(reward.breakdown[0].message) < 12_000
    json.dumps(reward.to_dict())  # the trajectory can hold it


def test_right_answers_still_match() -> None:
    for expected, answer in [
        ("Alice", " alice. "),
        (12.5, "$12.50"),
        (["a", "b"], "b and a"),
        ({"k": "v"}, '{"K": "V"}'),
        (1e300, 10**300),
    ]:
        assert compare(Effects({}), Effects({}), expected_answer=expected, answer=answer).score == 1.0, (expected, answer)
