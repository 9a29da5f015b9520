"""Test data for list parameters (language v2): valid lists for fixtures, broken ones for invalid:<param> cases."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from envsynth.blueprint.effects import item_field_def
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ParamSpec
from envsynth.runtime.state import StateBuilder


def rows_of(table: list[dict[str, Any]], key: str, ids: Any, item: str | None = None) -> list[dict[str, Any]] | None:
    """The rows of ``ids`` in order (``[]`` for no list), or None when one id has no row; ``item``: ids are that field of each item."""
    if ids is None:
        return []
    if not isinstance(ids, list):
        return None
    if item is not None:
        ids = [i.get(item) if isinstance(i, dict) else None for i in ids]
    by_key = {r[key]: r for r in table}
    out = [by_key.get(i) for i in ids]
    return None if any(r is None for r in out) else out  # type: ignore[return-value]


def _length(p: ParamSpec, rng: random.Random, available: int | None = None) -> int:
    lo = max(p.min_items or 1, 1)
    hi = min(p.max_items if p.max_items is not None else 3, lo + 2)
    if available is not None:
        hi = min(hi, available)
    return rng.randint(lo, hi) if hi >= lo else lo


def draw_list(p: ParamSpec, rng: random.Random, builder: StateBuilder, bp: Blueprint) -> list[Any]:
    """A valid list for ``p``: distinct ids of existing rows, or objects with a valid value per field."""
    if p.item_fields is None:
        ent = bp.entity(p.ref or "")
        ids = [r[ent.id_field] for r in builder.rows.get(ent.name, [])]
        return rng.sample(ids, k=min(_length(p, rng, len(ids)), len(ids)))
    return [{f.name: item_value(f, rng, builder, bp) for f in p.item_fields} for _ in range(_length(p, rng))]


def item_value(f: ParamSpec, rng: random.Random, builder: StateBuilder, bp: Blueprint) -> Any:
    """A valid value of one field of a list item (an id or ref copy: the id of an existing row)."""
    if f.ref is not None:
        ent = bp.entity(f.ref)
        ids = [r[ent.id_field] for r in builder.rows.get(ent.name, [])]
        return rng.choice(ids) if ids else f"{ent.prefix}_000000"
    if f.field is not None:
        ent_name, fname = f.field.split(".")
        return builder.values.value(bp.entity(ent_name).field(fname))
    if f.enum:
        return rng.choice(f.enum)
    if f.type == "integer":
        return rng.randint(int(f.minimum or 0) + 1, int(f.minimum or 0) + 9)
    if f.type == "number":
        return round(rng.uniform((f.minimum or 0) + 1, (f.minimum or 0) + 99), 2)
    if f.type == "boolean":
        return rng.random() < 0.5
    return builder.values.value(item_field_def(f))


Breaker = Callable[[Any], Any]


def bad_lists(p: ParamSpec) -> list[tuple[str, Breaker]]:
    """Ways to break a valid list of ``p`` (each must be refused with invalid_arguments): case name -> valid list -> bad value."""
    out: list[tuple[str, Breaker]] = [("type", lambda v: "x"), ("item_type", lambda v: [12345])]
    if p.min_items:
        out.append(("min_items", lambda v: []))
    if p.max_items is not None and p.max_items < 1000:
        out.append(("max_items", lambda v: (list(v) * (p.max_items + 1))[: p.max_items + 1]))  # type: ignore[operator]
    if p.unique_items:
        out.append(("unique_items", lambda v: [v[0], *v]))
    for f in p.item_fields or []:
        wrong = {"string": 12345, "integer": "three", "number": "3.5", "boolean": "yes"}[f.type]
        out.append((f"missing_field:{f.name}", _edit(lambda item, n=f.name: {k: x for k, x in item.items() if k != n})))
        out.append((f"item_type:{f.name}", _edit(lambda item, n=f.name, w=wrong: {**item, n: w})))
        if f.pattern is not None:
            out.append((f"item_pattern:{f.name}", _edit(lambda item, n=f.name: {**item, n: "not-a-date"})))
    if p.item_fields:
        out.append(("unknown_item_field", _edit(lambda item: {**item, "not_a_field": 1})))
    return out


def _edit(change: Callable[[dict[str, Any]], dict[str, Any]]) -> Breaker:
    """A breaker changing the last item of the list (the others stay valid)."""
    return lambda v: [*v[:-1], change(v[-1])]


def with_missing(valid: list[Any], missing: Any, item: str | None) -> list[Any]:
    """A valid list with one key no row has: appended (a list of ids), or put in the last item's ``item`` field."""
    if item is None:
        return [*valid, missing]
    return [*valid[:-1], {**valid[-1], item: missing}]
