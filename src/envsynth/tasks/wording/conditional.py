"""The request of a conditional goal (:mod:`envsynth.tasks.building.conditional`): the action, the state it depends on,
and what to tell otherwise: "cancel my order placed on March 3 if it is still pending; otherwise, just tell me its
status"."""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.models import Blueprint
from envsynth.tasks.wording.words import field_of

_ELSE = ("otherwise, just tell me its {field}", "if not, tell me what its {field} is", "otherwise, let me know its {field}")


def conditional_clause(bp: Blueprint, cond: Any, clause: str, pick: int) -> str:
    """``clause`` (the write, said of the row) with its condition and the other branch (``pick`` chooses the words)."""
    value = str(cond.value).replace("_", " ")
    field = field_of(bp, cond.entity, cond.field)
    other = _ELSE[pick % len(_ELSE)].format(field=field)
    return f"{clause} if it is still {value}; {other}"
