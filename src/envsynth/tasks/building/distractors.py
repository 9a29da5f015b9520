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

from envsynth.blueprint.correlate import depends_on, timed_matches
from envsynth.blueprint.models import Blueprint
from envsynth.runtime.state import Rows, StateBuilder, ValuePool, distinct_values, id_fields, ref_fields

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
    unsaid: tuple[tuple[str, ...], ...] = (),
) -> tuple[Rows, dict[str, int]]:
    """Distractor rows for ``targets`` ((table, key) of rows the task names), by level.

    ``guarded`` tables are ones whose rows the task's pre-conditions count (``not
    exists(...)``): a decoy there could block the chain instead of distracting. So
    depth-4 decoys go to the other related tables, and a distractor of levels 1-3 in a
    guarded table may not refer to a ``bound`` row (one the chain acts on): another
    pending order of the customer whose account the task closes is left out.

    A distractor must differ from its target in a value a description can say: never only
    in fields of the entity's ``never_describe`` (a counter, free text) or, per target, in
    the fields of ``unsaid`` (aligned with ``targets``: the answer a question asks for).

    Returns:
        (the new rows by table, rows added per level as ``{"d1": n, ...}``).
    """
    if depth <= 0 or not targets:
        return {}, {}
    rng = random.Random(seed)
    b = _builder(bp, order, core, seed, pool)
    before = {k: len(v) for k, v in b.rows.items()}
    counts: dict[str, int] = {}
    found = _targets(bp, b.rows, targets, guarded, unsaid)
    watched = [tg.ent for tg in found if tg.ent.name in guarded and bound]  # target tables the chain's checks count
    for level in range(1, min(depth, 4) + 1):
        n0 = sum(map(len, b.rows.values()))
        start = {tg.ent.name: len(b.rows[tg.ent.name]) for tg in found}
        for tg in found:
            for _ in range(PER_LEVEL):
                _add(b, rng, level, tg)
        _drop_untellable(b, found, start)
        _drop_guarded(b, watched, start, bound)
        counts[f"d{level}"] = sum(map(len, b.rows.values())) - n0
    added = {k: v[before.get(k, 0) :] for k, v in b.rows.items() if len(v) > before.get(k, 0)}
    return added, counts


def _drop_untellable(b: StateBuilder, found: list[_Target], start: dict[str, int]) -> None:
    """Drop the new rows (past ``start``) that have every value their target has.

    Such a row (its own fields and its references) could never be told apart from the
    target: the instruction can only name the target by values it has.
    """
    for tg in found:
        table_rows = b.rows[tg.ent.name]
        first = start[tg.ent.name]
        if len(table_rows) == first:
            continue
        new = [r for r in table_rows[first:] if not tg.values.items() <= r.items()]
        if len(new) < len(table_rows) - first:
            b.rows[tg.ent.name] = table_rows[:first] + new


def _drop_guarded(b: StateBuilder, watched: list[Any], start: dict[str, int], bound: frozenset[tuple[str, Any]]) -> None:
    """Drop the new rows (past ``start``) of ``watched`` tables that refer to a ``bound`` row (one the chain acts on)."""
    for ent in watched:
        table_rows = b.rows[ent.name]
        first = start[ent.name]
        refs = ref_fields(ent)
        new = [r for r in table_rows[first:] if not any((ref, r.get(name)) in bound for name, ref in refs)]
        if len(new) < len(table_rows) - first:
            b.rows[ent.name] = table_rows[:first] + new


def _targets(
    bp: Blueprint, rows: Rows, targets: list[tuple[str, Any]], guarded: frozenset[str], unsaid: tuple[tuple[str, ...], ...]
) -> list[_Target]:
    """The targets found in ``rows``, each with what its distractors take from it."""
    ids = id_fields(bp)
    indexes: dict[str, dict[Any, dict[str, Any]]] = {}  # table -> key -> row, for the targets' tables
    found = []
    for i, (t, k) in enumerate(targets):
        if t not in ids:
            continue
        index = indexes.get(t)
        if index is None:
            key = ids[t]
            index = indexes[t] = {r[key]: r for r in rows[t]}
        if k in index:
            found.append(_target(bp, bp.entity(t), index[k], guarded, unsaid[i] if i < len(unsaid) else ()))
    return found


class _Target(NamedTuple):
    """A target row and what its distractors take from it (worked out once per call)."""

    ent: Any
    row: dict[str, Any]
    values: dict[str, Any]  # its non-null values (all but the id): a distractor must differ in one
    named: dict[str, Any] | None  # level 2: the label it shares (None: the entity has no label)
    changeable: list[str]  # level 3: the facts a near-duplicate may change (those the target has)
    like: dict[str, Any]  # level 3: the facts and references a near-duplicate copies (but the changed one)
    children: list[tuple[Any, Any]]  # level 4: (entity, ref field) of the related tables


def _target(bp: Blueprint, ent: Any, row: dict[str, Any], guarded: frozenset[str], unsaid: tuple[str, ...] = ()) -> _Target:
    fx = _fields(ent)
    facts = [f for f in fx.facts if f not in unsaid]
    return _Target(
        ent=ent,
        row=row,
        values={n: v for n in fx.plain if n not in unsaid and (v := row.get(n)) is not None},
        named=_fixed(ent, row, keep={ent.label}) if ent.label else None,
        changeable=[f for f in facts if row.get(f) is not None] or facts,
        like=_fixed(ent, row, keep=set(fx.facts) | fx.refs),
        children=_children(bp, ent.name, guarded),
    )


def _add(b: StateBuilder, rng: random.Random, level: int, tg: _Target) -> None:
    """Add one distractor of ``level`` for target ``tg`` (levels 2-4 add none when it has nothing to vary)."""
    ent = tg.ent
    if level == 1:
        b.add(ent)
    elif level == 2 and tg.named is not None:
        b.add(ent, tg.named)
    elif level == 3 and tg.changeable:
        # change a value the target has, so that the target's own value tells them apart
        change = rng.choice(tg.changeable)
        fixed = {n: v for n, v in tg.like.items() if n != change}
        other = _other_value(b, rng, ent, change, tg.row.get(change))
        if other is not None:
            fixed[change] = other
        if _second_of_one(b, ent, fixed):
            return  # a second active membership of the member: a near-duplicate may not break an at_most_one rule
        b.add(ent, _key_open(ent, _untimed(ent, fixed, change), change))
    elif level == 4 and tg.children:
        child, f = rng.choice(tg.children)
        b.add(child, {f.name: tg.row[ent.fields[0].name]})


def _untimed(ent: Any, fixed: dict[str, Any], change: str) -> dict[str, Any]:
    """``fixed`` without the dates whose ``past_when``/``future_when`` name the ``change``d field, nor the fields drawn
    from them: a copy of a scheduled flight changed to landed draws a past departure (and its times) of its own."""
    dropped = {
        f.name
        for f in ent.fields
        if f.gen is not None and change in {**(f.gen.past_when or {}), **(f.gen.future_when or {})} and f.name in fixed
    }
    grew = bool(dropped)
    while grew:
        more = {f.name for f in ent.fields if f.name in fixed and f.name not in dropped and set(depends_on(f)) & dropped}
        dropped |= more
        grew = bool(more)
    return {n: v for n, v in fixed.items() if n not in dropped} if dropped else fixed


def _second_of_one(b: StateBuilder, ent: Any, row: dict[str, Any]) -> bool:
    """Whether ``row`` (the values given so far) would be a second match of one of ``ent``'s ``at_most_one`` rules for
    an owner that already has a matching row in the state."""
    for rule in ent.at_most_one:
        owner = tuple(row.get(p) for p in rule.per)
        if None in owner or not timed_matches(rule.where, row):
            continue
        if any(timed_matches(rule.where, r) and tuple(r.get(p) for p in rule.per) == owner for r in b.rows.get(ent.name, ())):
            return True
    return False


def _key_open(ent: Any, fixed: dict[str, Any], change: str) -> dict[str, Any]:
    """``fixed`` with one field of every composite unique key it fixes whole left out (one other than ``change``,
    a plain field before a reference), so the row builder draws it and the copy never repeats a key."""
    for key in ent.unique:
        if all(k in fixed for k in key):
            free = sorted((k for k in key if k != change), key=lambda k: ent.field(k).type == "ref")
            fixed = {n: v for n, v in fixed.items() if n != free[0]}
    return fixed


def _other_value(b: StateBuilder, rng: random.Random, ent: Any, name: str, value: Any) -> Any:
    """A value of ``ent.name`` other than ``value`` (None: none found, let the row builder draw it).

    Taken from the pre-drawn pool rows when they have one, else from the field's choices.
    """
    if value is None:
        return None
    pool = (b.pool or {}).get(ent.name)
    if pool:
        values, position = b.pool.distinct(ent.name, name) if isinstance(b.pool, ValuePool) else distinct_values(pool, name)
        at = position.get(value)
        n = len(values) - (at is not None)
        if n > 0:
            i = rng._randbelow(n)  # what rng.choice over the other values draws
            return values[i + 1 if at is not None and i >= at else i]
    options = [c for c in ent.field(name).choices or () if c != value]
    return rng.choice(options) if options else None


def _fixed(ent: Any, target: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """Field values a distractor copies from its target (unique fields are never copied)."""
    return {name: target[name] for name in _fields(ent).copyable if name in keep and target.get(name) is not None}


def _children(bp: Blueprint, table: str, guarded: frozenset[str]) -> list[tuple[Any, Any]]:
    """(entity, ref field) pairs that refer to ``table``, outside ``guarded`` tables (kept on the blueprint's index)."""
    return bp.index.of(_find_children, bp, table, guarded)


def _find_children(bp: Blueprint, table: str, guarded: frozenset[str]) -> list[tuple[Any, Any]]:
    return [(o, f) for o in bp.entities if o.name not in guarded for f in o.fields if f.type == "ref" and f.ref == table]


class _Fields(NamedTuple):
    """Field names of an entity as the distractor levels use them."""

    plain: list[str]  # every field but the id and those that never describe a row
    copyable: list[str]  # every field but the id that is not unique (a copy may take them from its target)
    facts: list[str]  # identifying facts: plain, non-unique, not a ref or free text
    refs: set[str]  # ref fields


def _fields(ent: Any) -> _Fields:
    """:class:`_Fields` of ``ent`` (kept on the entity's index)."""
    return ent.index.of(_build_fields, ent)  # type: ignore[no-any-return]


def _build_fields(ent: Any) -> _Fields:
    never = set(ent.never_describe)  # a counter or free text: a copy that differs only there names the same row
    return _Fields(
        plain=[f.name for f in ent.fields[1:] if f.name not in never],
        copyable=[f.name for f in ent.fields[1:] if not f.unique],
        facts=[f.name for f in ent.fields[1:] if f.type not in ("ref", "text") and not f.unique and f.name not in never],
        refs={f.name for f in ent.fields if f.type == "ref"},
    )
