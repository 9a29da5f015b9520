"""Where a task's answer sits in the result of its answer step: a field, or the value of one group.

``answer_field`` is a field of the result (``"total"``, ``"status"``), or, for an aggregate
grouped by a field, ``groups[FIELD=KEY].value``: the value of the group whose FIELD is
KEY ("how many of my orders are pending?" read from ``count_orders_by_status``).
"""

from __future__ import annotations

import re
from typing import Any

_GROUP = re.compile(r"^groups\[(\w+)=(.*)\]\.value$", re.DOTALL)


def group_field(by: str, key: str) -> str:
    """The answer field of the value of the group whose ``by`` is ``key``."""
    return f"groups[{by}={key}].value"


def group_of(field: str) -> tuple[str, str] | None:
    """(the grouping field, the key) of a group's answer field, or None for a plain field."""
    m = _GROUP.match(field)
    return (m.group(1), m.group(2)) if m else None


def answer_in(result: Any, field: str) -> Any:
    """The answer ``field`` names in a tool's result (None when the result lacks it)."""
    if not isinstance(result, dict):
        return None
    group = group_of(field)
    if group is None:
        return result.get(field)
    by, key = group
    groups = result.get("groups")
    found = [g.get("value") for g in groups if isinstance(g, dict) and g.get(by) == key] if isinstance(groups, list) else []
    return found[0] if found else None


def has_answer(result: Any, field: str) -> bool:
    """Whether the result holds what ``field`` names (a plain field present, or the group present)."""
    if not isinstance(result, dict):
        return False
    group = group_of(field)
    if group is None:
        return field in result
    groups = result.get("groups")
    return isinstance(groups, list) and any(isinstance(g, dict) and g.get(group[0]) == group[1] for g in groups)


def answer_expr(var: str, field: str) -> str:
    """Python source reading the answer from the result variable ``var``."""
    group = group_of(field)
    if group is None:
        return f"{var}[{field!r}]"
    by, key = group
    return f"next(g['value'] for g in {var}['groups'] if g[{by!r}] == {key!r})"
