"""The request of a conditional goal (:mod:`envsynth.tasks.building.conditional`): the action, the state it depends on,
and what to tell otherwise: "cancel my order placed on March 3 if it is still pending; otherwise, just tell me where
it stands"."""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.models import Blueprint

_ELSE = ("otherwise, just tell me where it stands", "if not, tell me what state it is in now", "otherwise, let me know where it stands")
"""The other branch, said as a person asks for a row's state (never a column's name: "its status" reads the schema out)."""


def conditional_clause(bp: Blueprint, cond: Any, clause: str, pick: int) -> str:
    """``clause`` (the write, said of the row) with its condition and the other branch (``pick`` chooses the words)."""
    value = str(cond.value).replace("_", " ")
    return f"{clause} if it is still {value}; {_ELSE[pick % len(_ELSE)]}"
