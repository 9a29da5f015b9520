"""The request of a for-each goal (:mod:`envsynth.tasks.building.foreach`): the rows named by the criteria, all at once.

"cancel all my pending orders", "freeze all my savings accounts": the write's own phrase, its row slot
filled with the criteria in the plural instead of one row's description, and the values the write
gives after it, as for one row ("; the reason is ...").
"""

from __future__ import annotations

import re
from typing import Any

from envsynth.tasks.model import Call
from envsynth.tasks.wording.describe import Description, render
from envsynth.tasks.wording.instruction import Phraser
from envsynth.tasks.wording.words import plural

_EACH = "\x00each"  # the placeholder id of "the rows" while the phrase is filled (never in a request: its slot is words)


def for_each_clause(phraser: Phraser, fe: Any, calls: list[Call], descs: dict[str, Description]) -> str | None:
    """The clause of the goal's writes ("cancel all my pending orders"), or None when the write's words cannot say it.

    ``descs`` are the descriptions of the other rows the write names (a payment method it pays with).
    """
    call = calls[fe.write]
    main = next(iter(call.refs))
    one = Call(tool=call.tool, args={**call.args, main: _EACH})
    criteria = Description(fe.entity, {fe.field: fe.value})
    phraser.mine = phraser.mine | {_EACH}
    text = phraser.said(phraser.specs[call.tool], one, [one], {**descs, main: criteria})
    if text is None:
        text = phraser.clause(0, [one], {**descs, main: criteria})
    row = render(phraser.bp, criteria, possessive="my")
    if row not in text or " it " in f" {text} " or _EACH in text:
        return None
    return text.replace(row, "all " + rows_of(row), 1)


def rows_of(row: str) -> str:
    """The plural of one row's words: "my pending order" -> "my pending orders", "my booking that is booked" ->
    "my bookings that are booked"."""
    head, sep, tail = row.partition(" that is ")
    return plural(head) + (" that are " + tail if sep else "")


_ONE = re.compile(r"\b(it|its|it's|itself|this one|that one)\b", re.IGNORECASE)


def said_of_many(reason: str) -> bool:
    """Whether a reason reads as well of several rows as of one (no "it" standing for the one row)."""
    return _ONE.search(reason) is None
