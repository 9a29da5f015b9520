"""request._stated_in: the answer-in-the-request test without a regular expression per answer, as the pattern finds."""

from __future__ import annotations

import random
import re

from envsynth.tasks.wording.request import _stated_in, says_answer


def test_stated_in_finds_what_the_pattern_finds() -> None:
    chars = [*"ab1_.,- 9:", "é", "\u0663", "\u00b2", "\u216b", "\u00a0", "\n"]  # an Arabic-Indic digit, a superscript, a numeral
    rng = random.Random(5)
    for _ in range(20000):
        form = "".join(rng.choice(chars) for _ in range(rng.randint(1, 3)))
        text = "".join(rng.choice(chars) for _ in range(rng.randint(0, 12)))
        if rng.random() < 0.5:
            k = rng.randint(0, len(text))
            text = text[:k] + form + text[k:]
        expected = re.search(rf"(?<![\w.,]){re.escape(form)}(?![\w]|[.,]\d)", text) is not None
        assert _stated_in(text, form) == expected, (text, form)


def test_says_answer() -> None:
    assert says_answer("How many orders are pending? I think 12.", 12)
    assert not says_answer("Order 123 please", 12)
    assert not says_answer("It cost 12.50", 12)
    assert says_answer("Is it shipped?", "shipped")
    assert says_answer("Due on March 5, 2026?", "2026-03-05")
