"""Checks of the language-v2 effect keys made before pydantic sees an action or a parameter.

They turn what would be a bare pydantic complaint ("Extra inputs are not permitted", a path
into a union) into one plain sentence: which actions take ``also``/``for_each``, what a list
parameter needs. They also read YAML ``null`` in ``set``/``also`` maps as the expression
``None`` (setting a field to NULL).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import Field

ItemTypeName = Literal[
    "string",
    "text",
    "name",
    "email",
    "phone",
    "url",
    "address",
    "company",
    "money",
    "int",
    "quantity",
    "float",
    "integer",
    "number",
    "bool",
    "boolean",
    "date",
    "datetime",
]
"""The type names a field of a list item may have (``items: {dob: date, amount: money}``)."""

_COPY = r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$"
ItemType = ItemTypeName | Annotated[str, Field(pattern=_COPY)]
"""An item field's type: a type name, or ``entity.field`` to copy that field's type and limits (an id or ref: the row must exist)."""

WRITE_KINDS = ("create", "update", "delete", "transition", "transfer", "book")
"""The archetypes that take ``also`` and ``for_each``."""

_READ_ONLY = {"get": "reads one row", "search": "lists rows", "aggregate": "computes a value", "custom": "is hand-written code"}


def null_values(value: Any) -> Any:
    """A ``{field: expression}`` map with YAML ``null`` read as the expression ``None``."""
    if isinstance(value, dict):
        return {k: "None" if v is None else v for k, v in value.items()}
    return value


def effect_keys_allowed(data: Any) -> Any:
    """Refuse ``also``/``for_each`` on actions that write nothing, saying where they belong; read nulls as ``None``.

    Raises:
        ValueError: ``also`` or ``for_each`` on a get, search, aggregate or custom action.
    """
    if not isinstance(data, dict):
        return data
    kind = data.get("kind")
    for key in ("also", "for_each"):
        if key in data and kind in _READ_ONLY:
            extra = " (custom code declares its writes in 'writes', 'creates' and 'deletes')" if kind == "custom" else ""
            raise ValueError(
                f"'{key}' is only for actions that write ({', '.join(WRITE_KINDS)}); a {kind} action {_READ_ONLY[kind]}{extra}"
            )
    out = dict(data)
    for key in ("set", "log_set"):
        if key in out:
            out[key] = null_values(out[key])
    if isinstance(out.get("also"), dict):
        out["also"] = {alias: null_values(upd) for alias, upd in out["also"].items()}
    return out


def list_param_problems(data: Any) -> Any:
    """Plain errors for a ``type: list`` parameter, all of them at once.

    Raises:
        ValueError: every problem of the list parameter, joined with ``;``.
    """
    if not isinstance(data, dict):
        return data
    problems = []
    is_list = data.get("type") == "list"
    for key in ("items", "min_items", "max_items"):
        if key in data and not is_list:
            problems.append(f"'{key}' is only for list parameters (type: list)")
    if is_list:
        has_ref, has_items = data.get("ref") is not None, data.get("items") is not None
        if has_ref == has_items:
            problems.append(
                "a list parameter has either 'ref: <entity>' (a list of ids, each loading a row) "
                "or 'items: {field: type, ...}' (a list of small objects), exactly one"
            )
        if has_items and not (isinstance(data["items"], dict) and data["items"]):
            problems.append("'items' maps each field of an item to its type, e.g. {first_name: name, dob: date}")
        elif has_items:
            problems += _item_type_problems(data["items"])
        for key in ("field", "values", "min", "max"):
            if data.get(key) is not None:
                problems.append(f"'{key}' does not apply to a list parameter; bound its length with min_items/max_items")
        lo, hi = data.get("min_items"), data.get("max_items")
        if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
            problems.append(f"min_items ({lo}) is greater than max_items ({hi})")
    if problems:
        raise ValueError("; ".join(problems))
    return data


def _item_type_problems(items: dict[Any, Any]) -> list[str]:
    names = get_args(ItemTypeName)
    out = []
    for name, ftype in items.items():
        if not (isinstance(ftype, str) and (ftype in names or re.match(_COPY, ftype))):
            out.append(f"items.{name}: {ftype!r} is not an item type; use one of {', '.join(names)} or 'entity.field' to copy a field")
    return out
