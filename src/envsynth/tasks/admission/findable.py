"""A requester the agent can find: someone whose name no other person of their kind shares, or who says what tells them apart.

A state where the requester's name is carried by several rows of one table (three inspectors named
Michael Smith), and the request states nothing that only one of them has (an email, a phone, a
badge number), leaves the agent to guess who is asking: such a task is refused at admission
(``requester_not_findable``). The report's quality linter counts the same thing on stored records
(``namesake``, :mod:`envsynth.report.quality`) with its own code.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.models import Blueprint
from envsynth.runtime.state import Rows
from envsynth.tasks.model import Task

MIN_MARK = 4
"""The shortest value that counts as telling a row apart when the request states it (shorter ones match by chance)."""


def requester_findable(blueprint: Blueprint, task: Task, s0: Rows) -> bool:
    """Whether every table of ``s0`` either has at most one person named as the requester, or the request tells them apart."""
    name = task.user.name
    if not name:
        return True
    text = task.instruction.lower()
    for table, fields in _name_fields(blueprint).items():
        same = [row for row in s0.get(table, ()) if any(row.get(f) == name for f in fields)]
        if len(same) >= 2 and not any(_told_apart(row, same, text, name) for row in same):
            return False
    return True


def _told_apart(row: dict[str, Any], same: list[dict[str, Any]], text: str, name: str) -> bool:
    """Whether the request states a value of ``row`` that none of its namesakes has."""
    for key, value in row.items():
        if isinstance(value, str) and len(value) >= MIN_MARK and value != name and value.lower() in text:
            if all(other is row or other.get(key) != value for other in same):
                return True
    return False


def _name_fields(blueprint: Blueprint) -> dict[str, tuple[str, ...]]:
    """Per table, the fields that hold a person's name (type ``name``); tables without one are left out."""
    out: dict[str, tuple[str, ...]] = {}
    for entity in blueprint.entities:
        fields = tuple(f.name for f in entity.fields if f.type == "name")
        if fields:
            out[entity.name] = fields
    return out
