"""Argument checks of list parameters (language v2): lists of ids and lists of small objects.

A list of ids holds each id at most once; a list of objects holds objects with exactly the
declared fields, each checked like a parameter of its type. Both keep the declared
``min_items``/``max_items`` and the runtime's cap on array length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import AfterValidator, ConfigDict, Field, create_model

from envsynth.blueprint.spec import ParamSpec

MAX_ITEMS = 1_000
MAX_STRING = 10_000


def _distinct(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    for v in values:
        if v in seen:
            raise ValueError(f"{v!r} is given twice; give each id once")
        seen.add(v)
    return values


def list_annotation(p: ParamSpec, annotation: Callable[[ParamSpec], Any]) -> Any:
    """The pydantic type of list parameter ``p``; ``annotation`` types one item field (the runtime's own)."""
    if p.item_fields is not None:
        fields = {f.name: (annotation(f), ...) for f in p.item_fields}
        item: Any = create_model(f"{p.name}_item", __config__=ConfigDict(extra="forbid", strict=True), **fields)
        item = Annotated[item, AfterValidator(lambda m: dict(m.__dict__))]
    else:
        item = Annotated[str, Field(max_length=MAX_STRING)]
    hi = MAX_ITEMS if p.max_items is None else min(p.max_items, MAX_ITEMS)
    ann: Any = Annotated[list[item], Field(min_length=p.min_items, max_length=hi, description=p.description)]
    if p.unique_items:
        ann = Annotated[ann, AfterValidator(_distinct)]
    return ann if p.required else ann | None
