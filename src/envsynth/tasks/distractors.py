"""Distractor rows by depth D (SynthAPI): rows ever closer to the task's targets.

- depth 1: other rows of the same tables as the targets (same type, random values);
- depth 2: rows that share the target's name or title (its label) but differ elsewhere;
- depth 3: near-duplicates: a copy of a target with exactly one identifying value (one
  the target has) changed;
- depth 4: decoys in related tables: rows of tables that refer to a target (other orders
  of the same customer, other bookings of the same class).

Depth D adds the levels 1..D. The instruction is written after the distractors are in,
naming each target by facts that no distractor shares, so it stays unambiguous; the
ground truth is computed on the final state.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from envsynth.blueprint.models import Blueprint
from envsynth.memo import per_object
from envsynth.runtime.state import Rows, StateBuilder, id_fields

PER_LEVEL = 2


def _builder(bp: Blueprint, order: list[Any], rows: Rows, seed: int, pool: Rows | None) -> StateBuilder:
    b = StateBuilder(bp, seed, order, {k: list(v) for k, v in rows.items()})  # rows are only appended, never changed
    if pool is not None:
        b.use_pool(pool)
    return b


def add_distractors(
    bp: Blueprint,
    order: list[Any],
    core: Rows,
    targets: list[tuple[str, Any]],
    depth: int,
    seed: int,
    pool: Rows | None = None,
    guarded: frozenset[str] = frozenset(),
    bound: frozenset[tuple[str, Any]] = frozenset(),
) -> tuple[Rows, dict[str, int]]:
    """Distractor rows for ``targets`` ((table, key) of rows the task names), by level.

    ``guarded`` tables are ones whose rows the task's pre-conditions count (``not
    exists(...)``): a decoy there could block the chain instead of distracting. So
    depth-4 decoys go to the other related tables, and a distractor of levels 1-3 in a
    guarded table may not refer to a ``bound`` row (one the chain acts on): another
    pending order of the customer whose account the task closes is left out.

    Returns:
        (the new rows by table, rows added per level as ``{"d1": n, ...}``).
    """
    if depth <= 0 or not targets:
        return {}, {}
    rng = random.Random(seed)
    b = _builder(bp, order, core, seed, pool)
    before = {k: len(v) for k, v in b.rows.items()}
    counts: dict[str, int] = {}
    ids = id_fields(bp)
    indexes: dict[str, dict[Any, dict[str, Any]]] = {}  # table -> key -> row, for the targets' tables
    rows = []
    for t, k in targets:
        if t not in ids:
            continue
        index = indexes.get(t)
        if index is None:
            key = ids[t]
            index = indexes[t] = {r[key]: r for r in b.rows[t]}
        if k in index:
            rows.append((bp.entity(t), index[k]))
    watched = [ent for ent, _ in rows if ent.name in guarded and bound]  # target tables the chain's checks count
    for level in range(1, min(depth, 4) + 1):
        n0 = sum(map(len, b.rows.values()))
        start = {ent.name: len(b.rows[ent.name]) for ent, _ in rows}
        for ent, target in rows:
            for _ in range(PER_LEVEL):
                if level == 1:
                    b.add(ent)
                elif level == 2 and ent.label:
                    b.add(ent, _fixed(ent, target, keep={ent.label}))
                elif level == 3:
                    fx = _fields(ent)
                    facts, refs = fx.facts, fx.refs
                    if facts:  # change a value the target has, so that the target's own value tells them apart
                        change = rng.choice([f for f in facts if target.get(f) is not None] or facts)
                        fixed = _fixed(ent, target, keep=set(facts) - {change} | refs)
                        other = _other_value(b, rng, ent, change, target.get(change))
                        if other is not None:
                            fixed[change] = other
                        b.add(ent, fixed)
                elif level == 4:
                    children = _children(bp, ent.name, guarded)
                    if children:
                        child, f = rng.choice(children)
                        b.add(child, {f.name: target[ent.fields[0].name]})
        for ent, target in rows:
            # a new row that has every value the target has (its own fields and its references) could
            # never be told apart from it: the instruction can only name the target by values it has
            table_rows = b.rows[ent.name]
            first = start[ent.name]
            if len(table_rows) == first:
                continue
            values = [(n, v) for n in _fields(ent).plain if (v := target.get(n)) is not None]
            new = [r for r in table_rows[first:] if any(r.get(n) != v for n, v in values)]
            if len(new) < len(table_rows) - first:
                b.rows[ent.name] = table_rows[:first] + new
        for ent in watched:
            table_rows = b.rows[ent.name]
            first = start[ent.name]
            refs = _fields(ent).ref_pairs
            new = [r for r in table_rows[first:] if not any((ref, r.get(name)) in bound for name, ref in refs)]
            if len(new) < len(table_rows) - first:
                b.rows[ent.name] = table_rows[:first] + new
        counts[f"d{level}"] = sum(map(len, b.rows.values())) - n0
    added = {k: v[before.get(k, 0) :] for k, v in b.rows.items() if len(v) > before.get(k, 0)}
    return added, counts


def _other_value(b: StateBuilder, rng: random.Random, ent: Any, name: str, value: Any) -> Any:
    """A value of ``ent.name`` other than ``value`` (None: none found, let the row builder draw it).

    Taken from the pre-drawn pool rows when they have one, else from the field's choices.
    """
    if value is None:
        return None
    pool = (b.pool or {}).get(ent.name)
    if pool:
        values, position = _pool_values(pool, name)
        at = position.get(value)
        n = len(values) - (at is not None)
        if n > 0:
            i = rng._randbelow(n)  # what rng.choice over the other values draws
            return values[i + 1 if at is not None and i >= at else i]
    options = [c for c in ent.field(name).choices or () if c != value]
    return rng.choice(options) if options else None


_POOL_VALUES: dict[tuple[int, str], tuple[list[dict[str, Any]], tuple[list[Any], dict[Any, int]]]] = {}


def _pool_values(pool: list[dict[str, Any]], name: str) -> tuple[list[Any], dict[Any, int]]:
    """The distinct non-null values of field ``name`` in ``pool`` rows in a fixed order, and each one's
    position (memoised per pool list)."""
    key = (id(pool), name)
    hit = _POOL_VALUES.get(key)
    if hit is None or hit[0] is not pool:
        values = sorted({v for r in pool if (v := r.get(name)) is not None}, key=repr)
        hit = _POOL_VALUES[key] = (pool, (values, {v: i for i, v in enumerate(values)}))
    return hit[1]


def _fixed(ent: Any, target: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """Field values a distractor copies from its target (unique fields are never copied)."""
    return {name: target[name] for name in _fields(ent).copyable if name in keep and target.get(name) is not None}


_CHILDREN: dict[tuple[int, str, frozenset[str]], tuple[Blueprint, list[tuple[Any, Any]]]] = {}


def _children(bp: Blueprint, table: str, guarded: frozenset[str]) -> list[tuple[Any, Any]]:
    """(entity, ref field) pairs that refer to ``table``, outside ``guarded`` tables (memoised)."""
    key = (id(bp), table, guarded)
    hit = _CHILDREN.get(key)
    if hit is None or hit[0] is not bp:
        found = [(o, f) for o in bp.entities if o.name not in guarded for f in o.fields if f.type == "ref" and f.ref == table]
        hit = _CHILDREN[key] = (bp, found)
    return hit[1]


class _Fields(NamedTuple):
    """Field names of an entity as the distractor levels use them."""

    plain: list[str]  # every field but the id
    copyable: list[str]  # those that are not unique (a copy may take them from its target)
    facts: list[str]  # identifying facts: plain, non-unique, not a ref or free text
    refs: set[str]  # ref fields
    ref_pairs: list[tuple[str, str]]  # (ref field, the table it refers to)


_FIELDS: dict[int, tuple[Any, Any]] = {}


def _fields(ent: Any) -> _Fields:
    """:class:`_Fields` of ``ent`` (memoised per entity object)."""
    return per_object(_FIELDS, ent, _build_fields)


def _build_fields(ent: Any) -> _Fields:
    return _Fields(
        plain=[f.name for f in ent.fields[1:]],
        copyable=[f.name for f in ent.fields[1:] if not f.unique],
        facts=[f.name for f in ent.fields[1:] if f.type not in ("ref", "text") and not f.unique],
        refs={f.name for f in ent.fields if f.type == "ref"},
        ref_pairs=[(f.name, f.ref) for f in ent.fields if f.type == "ref" and f.ref],
    )
