"""Refer to rows the way a person would: by name, title, date or amount, never by id.

A description is a set of ``field = value`` facts (plus, when needed, the description
of a referenced parent row) that matches exactly one row of the state it is made for.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

from envsynth.blueprint.models import Blueprint, Entity, FieldDef
from envsynth.runtime.state import Rows

_ORDER = (
    "string",
    "name",
    "company",
    "email",
    "date",
    "datetime",
    "money",
    "enum",
    "state",
    "quantity",
    "int",
    "float",
    "phone",
    "address",
    "url",
    "bool",
    "text",
)


def human(name: str) -> str:
    return name.replace("_", " ")


def fmt_value(f: FieldDef | None, v: Any) -> str:
    """A value as a person writes it: $12.50, March 3, 2026, 'Blue Mug'."""
    if v is None:
        return "none"
    t = f.type if f is not None else ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if t == "money":
        return f"${v:,.2f}"
    if t == "date" and isinstance(v, str):
        d = dt.date.fromisoformat(v)
        return f"{d:%B} {d.day}, {d.year}"
    if t == "datetime" and isinstance(v, str):
        d = dt.datetime.fromisoformat(v)
        hour = d.strftime("%I:%M %p").lstrip("0")
        return f"{d:%B} {d.day}, {d.year} at {hour}"
    if t in ("enum", "state"):
        return human(str(v))
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def quoted(f: FieldDef | None, v: Any) -> str:
    text = fmt_value(f, v)
    if f is not None and f.type in ("string", "company", "text") and not text.startswith('"'):
        return f'"{text}"'
    return text


@dataclass
class Description:
    """Facts that single out one row: own fields, and optionally its parent through a ref."""

    entity: str
    facts: dict[str, Any] = field(default_factory=dict)
    parent: tuple[str, Description] | None = None  # (ref field, parent description)

    def matches(self, bp: Blueprint, rows: Rows, row: dict[str, Any]) -> bool:
        if any(row.get(k) != v for k, v in self.facts.items()):
            return False
        if self.parent is not None:
            ref, pd = self.parent
            ent = bp.entity(pd.entity)
            parent = next((r for r in rows.get(pd.entity, []) if r[ent.id_field] == row.get(ref)), None)
            return parent is not None and pd.matches(bp, rows, parent)
        return True

    def count(self, bp: Blueprint, rows: Rows) -> int:
        return sum(self.matches(bp, rows, r) for r in rows.get(self.entity, []))


def _candidates(ent: Entity) -> list[FieldDef]:
    fields = [f for f in ent.fields if f.type in _ORDER]
    fields.sort(key=lambda f: (f.name != ent.label, _ORDER.index(f.type)))
    return fields


def describe(bp: Blueprint, rows: Rows, entity: str, row: dict[str, Any], rng: random.Random, depth: int = 0) -> Description | None:
    """The shortest description (greedy) that matches ``row`` and no other row, or None."""
    ent = bp.entity(entity)
    d = Description(entity)
    cands = _candidates(ent)
    label_first = [f for f in cands if f.name == ent.label]
    rest = [f for f in cands if f.name != ent.label]
    rng.shuffle(rest)
    # people and titled things are named first; other rows by their most telling fields
    rest.sort(key=lambda f: 0 if f.type in ("date", "datetime", "money", "name", "company", "string") else 1)
    matching = rows.get(entity, [])  # rows that the facts so far match (no parent yet)
    for f in [*label_first, *rest]:
        if row.get(f.name) is None:
            continue
        d.facts[f.name] = v = row[f.name]
        matching = [r for r in matching if r.get(f.name) == v]
        if len(matching) == 1:
            break
    if d.count(bp, rows) != 1 and depth < 1:
        for f in ent.fields:
            if f.type == "ref" and row.get(f.name) is not None:
                parent_ent = bp.entity(f.ref or "")
                prow = next((r for r in rows.get(parent_ent.name, []) if r[parent_ent.id_field] == row[f.name]), None)
                if prow is None:
                    continue
                pd = describe(bp, rows, parent_ent.name, prow, rng, depth + 1)
                if pd is not None:
                    d.parent = (f.name, pd)
                    if d.count(bp, rows) == 1:
                        break
                    d.parent = None
    if d.count(bp, rows) != 1:
        return None
    # drop facts that are not needed (keeps instructions short), label last
    for k in [k for k in d.facts if k != ent.label]:
        if len(d.facts) == 1:
            break
        v = d.facts.pop(k)
        if d.count(bp, rows) != 1:
            d.facts[k] = v
    return d


def render(bp: Blueprint, d: Description, possessive: str = "the") -> str:
    """``the order placed on March 3, 2026 for $54.20`` style text."""
    ent = bp.entity(d.entity)
    noun = human(ent.name)
    parts = []
    label = d.facts.get(ent.label) if ent.label else None
    if label is not None:
        lf = ent.field(ent.label)  # type: ignore[arg-type]
        head = f"{possessive} {noun} {quoted(lf, label)}" if lf.type not in ("name",) else f"{noun} {label}"
    else:
        head = f"{possessive} {noun}"
    when = []
    for k, v in d.facts.items():
        if k == ent.label:
            continue
        f = ent.field(k)
        if f.type in ("date", "datetime"):
            name = human(k).removesuffix(" date").removesuffix(" on").removesuffix(" at")
            when.append(
                f"{name} on {fmt_value(f, v)}"
                if f.type == "date"
                else f"{name} {fmt_value(f, v).replace(' at ', ' at ', 1)}".replace(f"{name} ", f"{name} on ", 1)
            )
        else:
            parts.append(f"{human(k)} {quoted(f, v)}")
    text = head + "".join(f" {w}" for w in when)
    if parts:
        text += " with " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    if d.parent is not None:
        _ref, pd = d.parent
        text += f" (the one for {render(bp, pd)})" if parts else f" of {render(bp, pd)}"
    return text
