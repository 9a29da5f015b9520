"""Selection by criteria: a row the request names as "my most recent order" among other rows of its owner.

For a share of the task indexes, one row the request names, of a table with a creation date and an owner who is a
person of a declared role, gets 1-3 siblings in the core: rows of the same owner made earlier (the row is then the
most recent) or later (the row is the oldest), every other value drawn as any row's. They are confusable on every
criterion but the date, so the request names the row by comparison (:func:`envsynth.tasks.wording.describe.describe`
with ``most_first``): the agent must list the owner's rows and compare their dates. The siblings are core rows, so
every state has them (under its own ids).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass
from typing import Any

from envsynth.runtime.sampledata import StateBuilder
from envsynth.tasks.building.core import Core
from envsynth.tasks.building.world import Instance, value_pool

SHARE = 0.6
"""The share of task indexes (without a for-each or conditional goal) that get siblings for one named row."""
MADE = re.compile(
    r"(created|placed|joined|booked|opened|posted|performed|issued|logged|submitted|sent|started|added|requested|reported|recorded|made)"
)
"""Names of date fields that say when a row was made (a comparison of those is "most recent" / "oldest")."""
_STEP_DAYS = (2, 5, 9, 16, 30)


def add_siblings(inst: Instance, core: Core) -> dict[tuple[str, Any], str]:
    """Add siblings for one named row when the task's draw says so; the rows to name by comparison, each with the
    reference to the owner whose rows it is compared with (empty: none)."""
    plan = inst.plan
    if inst.for_each is not None or inst.conditional is not None:
        return {}
    rng = random.Random(plan.base * 613 + 5)
    if rng.random() >= SHARE:
        return {}
    bp = plan.app.blueprint
    roles = {u.entity for u in bp.users if u.entity}
    clock = dt.date.fromisoformat(bp.reference_date)
    for table, key in core.targets:
        if table in core.guarded or table in roles:
            continue
        found = _owner_and_date(bp, core, table, key, roles)
        if found is None:
            continue
        owner_field, date_field, row = found
        later = _later(plan.app, table, date_field, rng)
        if _made(inst, core, table, row, owner_field, date_field, clock, rng, later):
            inst.comparison = Comparison(table, key, owner_field, date_field, "min" if later else "max")
            return {(table, key): owner_field}
    return {}


@dataclass(frozen=True)
class Comparison:
    """A row named by comparison: the ``how`` (``max``: most recent, ``min``: oldest) of its owner's rows by ``date``."""

    table: str
    key: Any
    owner: str
    date: str
    how: str

    def beaten(self, row: dict[str, Any], owner: Any, value: Any) -> bool:
        """Whether ``row`` (of the table) is its owner's and as recent (``max``) or as old (``min``) as ``value``."""
        if row.get(self.owner) != owner or row.get(self.date) is None or value is None:
            return False
        return row[self.date] >= value if self.how == "max" else row[self.date] <= value


def _later(app: Any, table: str, date: str, rng: random.Random) -> bool:
    """Whether the siblings are made later (the row is then the oldest of its owner's) or earlier (the most recent).

    A search of the table that sorts by that date would list the row first, where a first-candidate agent takes it:
    the row is made the one it lists last. Otherwise the draw decides.
    """
    sorted_by = [
        s.query.descending
        for s in app.specs
        if s.query is not None and s.query.op == "search" and s.query.entity == table and s.query.sort == date
    ]
    return bool(sorted_by[0]) if sorted_by else rng.random() < 0.5


def _owner_and_date(bp: Any, core: Core, table: str, key: Any, roles: set[str]) -> tuple[str, str, dict[str, Any]] | None:
    """(the reference to the row's owner, its creation date field, the row) of a named row that can have siblings."""
    ent = bp.entity(table)
    row = next((r for r in core.rows.get(table, []) if r[ent.id_field] == key), None)
    if row is None:
        return None
    owner = next((f.name for f in ent.fields if f.type == "ref" and f.ref in roles and row.get(f.name) is not None and not f.unique), None)
    date = next(
        (
            f.name
            for f in ent.fields
            if f.type in ("date", "datetime")
            and MADE.search(f.name)
            and row.get(f.name)
            and not f.unique
            and f.name not in ent.never_describe
        ),
        None,
    )
    if not owner or not date or any(set(u) <= {owner, date} for u in ent.unique):
        return None  # (a copy would repeat a key the table holds once)
    return owner, date, row


def _made(
    inst: Instance, core: Core, table: str, row: dict[str, Any], owner: str, date: str, clock: dt.date, rng: random.Random, later: bool
) -> int:
    """Add 1-3 siblings of ``row`` to the core (``later`` or earlier dates, never after the clock); how many were added."""
    app = inst.plan.app
    ent = app.blueprint.entity(table)
    rows = {t: list(rs) for t, rs in core.rows.items()}
    builder = StateBuilder(app.blueprint, rng.randrange(1 << 30), app.order, rows).use_pool(value_pool(app))
    added = 0
    floor = _floor(app.blueprint, ent, date, row, core.rows)
    for i in range(rng.choice((1, 2, 3))):
        when = _shifted(row[date], _STEP_DAYS[i] * (1 if later else -1), clock)
        if when is None or (floor is not None and when < floor) or builder.add(ent, {owner: row[owner], date: when}) is None:
            break
        added += 1
    if added:
        if core.derived:  # the instance's workspace holds the core as it was: states are loaded anew
            inst.ws0.close()
            core.derived = False
        new = rows[table][len(core.rows.get(table, [])) :]
        core.rows = rows
        inst.s0 = {**inst.s0, table: [*inst.s0.get(table, []), *new]}  # a state widened to s0 keeps them
    return added


def _floor(bp: Any, ent: Any, date: str, row: dict[str, Any], rows: Any) -> str | None:
    """The latest date the field's ``not_before`` names in the rows ``row`` refers to (an account is never opened
    before its customer joined): a sibling is never made earlier than that. None: no such bound."""
    gen = ent.field(date).gen
    dates = []
    for name in (gen.not_before or []) if gen is not None else []:
        ref, _, field = name.partition(".")
        if not field or not ent.has(ref) or row.get(ref) is None:
            continue
        target = bp.entity(ent.field(ref).ref or "")
        parent = next((r for r in rows.get(target.name, []) if r[target.id_field] == row[ref]), None)
        if parent is not None and parent.get(field):
            dates.append(str(parent[field]))
    return max(dates) if dates else None


def _shifted(value: str, days: int, clock: dt.date) -> str | None:
    """``value`` (an ISO date or datetime) ``days`` later (earlier when negative); None when that passes the clock."""
    try:
        if "T" in value:
            moved = dt.datetime.fromisoformat(value) + dt.timedelta(days=days)
            return moved.isoformat(timespec="seconds") if moved.date() < clock else None
        day = dt.date.fromisoformat(value) + dt.timedelta(days=days)
    except ValueError:
        return None
    return day.isoformat() if day < clock else None
