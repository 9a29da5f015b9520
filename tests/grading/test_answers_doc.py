"""The examples of docs/tasks.md ("How answers are graded") hold, verdict by verdict."""

from __future__ import annotations

from typing import Any

import pytest

from envsynth.grading import AnswerSpec, match_answer

_ENUM = AnswerSpec("enum", choices=("active", "on_hold", "archived"))
_BOOL = AnswerSpec("bool", labels={"true": ("renews automatically",), "false": ("does not renew automatically",)})
_NAME = AnswerSpec("text", pool=("Wool Sweater", "Cotton Shirt", "Linen Pants"))

CASES: list[tuple[Any, AnswerSpec, list[Any], list[Any]]] = [
    (
        1,
        AnswerSpec("count"),
        [1, "one", "There is 1 gold member.", "Your order TRK8022887261 has 1 item."],
        ["2", "either 1 or 2", "1, or maybe 2", "It isn't 1", "1, 2, 3, 4, 5"],
    ),
    (0, AnswerSpec("count"), [0, "zero", "none", "There are no pending orders.", "You don't have any."], ["1", "I don't know", ""]),
    (2157.7, AnswerSpec("money"), ["$2,157.70", "2157.7", "The total comes to 2,157.70 USD."], ["$2,158.70", "$21,577.00", "$215.77"]),
    ("2026-03-05", AnswerSpec("date"), ["2026-03-05", "March 5, 2026", "5 Mar 2026", "03/05/2026"], ["March 6, 2026", "not March 5, 2026"]),
    (
        "2026-02-12T20:45:00",
        AnswerSpec("datetime"),
        ["February 12, 2026 at 8:45 PM", "2026-02-12 20:45", "February 12, 2026"],
        ["February 12, 2026 at 9:45 PM"],
    ),
    ("on_hold", _ENUM, ["on hold", "On-Hold", "The project is on hold."], ["active", "It is not on hold.", "on hold or active"]),
    (True, _BOOL, ["Yes, it is.", "yes", "It renews automatically."], ["No, it isn't.", "yes and no", "It does not renew automatically."]),
    (16.0, AnswerSpec("number", unit="hours"), ["16", "16 hours", "It is estimated at 16.0 hours."], ["17 hours", "160"]),
    (
        "Wool Sweater",
        _NAME,
        ["wool sweater", "The product is the Wool Sweater."],
        ["Cotton Shirt", "Wool Sweater or Cotton Shirt", "Wool Sweater, Cotton Shirt, Linen Pants"],
    ),
    (["a", "b"], AnswerSpec("list", item=AnswerSpec("text")), ["b and a", "a, b", ["b", "a"]], ["a", "a, b, c"]),
]


@pytest.mark.parametrize(("expected", "spec", "right", "wrong"), CASES, ids=[repr(c[0]) for c in CASES])
def test_the_documented_verdicts(expected: Any, spec: AnswerSpec, right: list[Any], wrong: list[Any]) -> None:
    for answer in right:
        v = match_answer(expected, answer, spec)
        assert v.matched, (answer, v.reason)
    for answer in wrong:
        v = match_answer(expected, answer, spec)
        assert not v.matched, (answer, v.reason)


def test_a_verdict_says_what_it_read_and_why() -> None:
    v = match_answer(3, "either 3 or 4", AnswerSpec("count"))
    assert not v.matched and v.extracted == (3, 4) and "more than one value" in v.reason
    v = match_answer(3, "It isn't 3, it's 4.", AnswerSpec("count"))
    assert not v.matched and v.extracted == (4,) and "not 3" in v.reason
    v = match_answer("archived", "The project is archived.", AnswerSpec("enum", choices=("active", "archived")))
    assert v.matched and v.extracted == ("archived",)
    assert match_answer(3, "It's not 4 but 3.", AnswerSpec("count")).matched


def test_the_request_may_be_echoed() -> None:
    spec = AnswerSpec("count", request="How many orders over $50 did I place in the last 30 days?")
    assert match_answer(2, "You placed 2 orders over $50 in the last 30 days.", spec).matched
    assert not match_answer(2, "You placed 2 or 3 orders.", spec).matched
    enum = AnswerSpec("enum", choices=("open", "closed", "frozen"), request="What is the state of my open account's card?")
    assert match_answer("frozen", "The card of your open account is frozen.", enum).matched
