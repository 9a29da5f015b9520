"""States: rows of an app as Python data, as SQLite bytes, and the diff of two states.

A state is stored as the bytes of a serialized SQLite database (``Connection.serialize``);
an episode starts by deserializing them into its own in-memory connection, which is a
single memory copy.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from typing import Any, NamedTuple

from envsynth.blueprint.correlate import depends_on, derive, derived_order, few_values, holds
from envsynth.blueprint.models import Blueprint, Entity, FieldDef
from envsynth.blueprint.values import ValueMaker

Rows = dict[str, list[dict[str, Any]]]
STATEMENT_CACHE = 1024  # prepared statements kept per connection (tools, deltas, reads: well over the default 128)


def empty_db(schema: str) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, cached_statements=STATEMENT_CACHE)
    conn.executescript(schema)
    return conn


_SCRATCH = threading.local()
SCRATCH_CONNECTIONS = 32  # (schema, purpose) connections kept per thread, the least recently used let go first


def scratch_connection(schema: str, purpose: str = "bytes") -> sqlite3.Connection:
    """A reusable connection for ``schema``, empty at rest, one per thread and ``purpose``.

    Reusing one connection keeps SQLite's parsed schema and prepared statements warm.
    Callers must leave it empty (delete or roll back what they add); it is never reset
    with ``deserialize``, which is not safe under cached prepared statements. Different
    purposes get different connections so that their transactions never interleave.
    A thread keeps the :data:`SCRATCH_CONNECTIONS` most recently used ones (a process that
    builds many apps does not keep a connection per app forever); one let go closes when
    its last user drops it.
    """
    cache: OrderedDict[tuple[str, str], sqlite3.Connection] | None = getattr(_SCRATCH, "conns", None)
    if cache is None:
        cache = _SCRATCH.conns = OrderedDict()
    key = (schema, purpose)
    conn = cache.get(key)
    if conn is None:
        conn = cache[key] = empty_db(schema)
        conn.execute("PRAGMA foreign_keys = ON")
        if len(cache) > SCRATCH_CONNECTIONS:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return conn


def _insert_sql(ent: Entity) -> tuple[str, tuple[str, ...], itemgetter[Any]]:
    """The INSERT statement of an entity, its columns and a getter of a row's values as a tuple
    in column order (kept on the entity's index)."""
    return ent.index.of(_build_insert, ent)


def _build_insert(ent: Entity) -> tuple[str, tuple[str, ...], itemgetter[Any]]:
    cols = tuple(f.name for f in ent.fields)  # at least two: an entity has an id and one more field
    sql = f'INSERT INTO "{ent.name}" ({", ".join(chr(34) + c + chr(34) for c in cols)}) VALUES ({", ".join("?" for _ in cols)})'
    return sql, cols, itemgetter(*cols)


def insert_rows(conn: sqlite3.Connection, order: list[Entity], rows: Rows) -> None:
    """Insert rows table by table in creation order (inside the caller's transaction).

    A column missing from a row is inserted as NULL. A nullable reference to a row that is
    not inserted yet (a table later in the order, in a ``ref`` cycle, or a later row of the
    same table) is inserted as NULL and set once every row is in, so foreign keys hold at
    every statement.
    """
    held: list[tuple[Entity, str, list[tuple[Any, Any]]]] = []
    for ent in order:
        table = rows.get(ent.name)
        if not table:
            continue
        sql, cols, values = _insert_sql(ent)
        later = _forward_refs(order).get(ent.name)
        if later:
            table = _hold_forward_refs(ent, table, later, held)
        try:
            params = list(map(values, table))
        except KeyError:  # a row without some column
            params = [tuple(map(r.get, cols)) for r in table]
        conn.executemany(sql, params)
    for ent, name, pairs in held:
        conn.executemany(f'UPDATE "{ent.name}" SET "{name}" = ? WHERE "{ent.id_field}" = ?', pairs)


def _hold_forward_refs(
    ent: Entity, table: list[dict[str, Any]], later: tuple[tuple[str, bool], ...], held: list[tuple[Entity, str, list[tuple[Any, Any]]]]
) -> list[dict[str, Any]]:
    """``table`` with the references in ``later`` that point at rows not inserted yet set to NULL;
    their values are added to ``held`` as (entity, field, [(value, id)])."""
    key = ent.id_field
    out = table
    for name, same_table in later:
        seen: set[Any] = set()
        pairs: list[tuple[Any, Any]] = []
        rows_out: list[dict[str, Any]] = []
        for r in out:
            if same_table:
                seen.add(r[key])  # a row may refer to itself or to an earlier row of its table
            value = r.get(name)
            if value is not None and not (same_table and value in seen):
                pairs.append((value, r[key]))
                r = {**r, name: None}
            rows_out.append(r)
        if pairs:
            held.append((ent, name, pairs))
            out = rows_out
    return out


def _forward_refs(order: list[Entity]) -> dict[str, tuple[tuple[str, bool], ...]]:
    """Entity -> its nullable references to the same or a later table of ``order``, as
    (field, same table); kept on the first entity's index for this ``order`` list."""
    if not order:
        return {}
    return order[0].index.paired(_build_forward_refs, order[0], order)


def _build_forward_refs(_first: Entity, order: list[Entity]) -> dict[str, tuple[tuple[str, bool], ...]]:
    place = {e.name: i for i, e in enumerate(order)}
    out: dict[str, tuple[tuple[str, bool], ...]] = {}
    for i, ent in enumerate(order):
        later = tuple((f.name, f.ref == ent.name) for f in ent.fields if f.type == "ref" and f.ref in place and place[f.ref] >= i)
        if later:
            out[ent.name] = later
    return out


def _empty_tables(conn: sqlite3.Connection, order: list[Entity]) -> None:
    """Delete every row, children first; references into later tables are cleared first."""
    for ent in order:
        for name, same_table in _forward_refs(order).get(ent.name, ()):
            if not same_table:
                conn.execute(f'UPDATE "{ent.name}" SET "{name}" = NULL WHERE "{name}" IS NOT NULL')
    for ent in reversed(order):
        conn.execute(f'DELETE FROM "{ent.name}"')


def rows_to_bytes(schema: str, order: list[Entity], rows: Rows) -> bytes:
    """Materialize rows into a fresh database and serialize it: the same rows, the same bytes.

    Raises:
        sqlite3.IntegrityError: when rows break a key or CHECK constraint.
    """
    conn = empty_db(schema)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("BEGIN")
    insert_rows(conn, order, rows)
    conn.execute("COMMIT")
    problems = conn.execute("PRAGMA foreign_key_check").fetchall()
    if problems:
        raise sqlite3.IntegrityError(f"foreign key violations: {problems[:3]}")
    data = conn.serialize()
    conn.close()
    return data


def rows_to_bytes_fast(schema: str, order: list[Entity], rows: Rows) -> bytes:
    """Like :func:`rows_to_bytes` on a reused connection: several times faster, but the
    bytes (page layout, change counter) depend on what the connection did before, so
    use it for transient states only (episodes, fixtures), never for stored artifacts.

    Raises:
        sqlite3.IntegrityError: when rows break a key or CHECK constraint.
    """
    conn = scratch_connection(schema)
    conn.execute("BEGIN")
    try:
        insert_rows(conn, order, rows)
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise sqlite3.IntegrityError(f"foreign key violations: {problems[:3]}")
        conn.execute("COMMIT")
        data = conn.serialize()
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("BEGIN")
    _empty_tables(conn, order)
    conn.execute("COMMIT")
    return data


def open_state(data: bytes) -> sqlite3.Connection:
    """An in-memory connection holding its own copy of ``data``."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.deserialize(data)
    conn.execute("PRAGMA foreign_keys = ON")
    return conn


def read_rows(conn: sqlite3.Connection, bp: Blueprint, tables: Iterable[str] | None = None) -> Rows:
    """Every row of every table (or of ``tables``) as dicts (bools as bools), ordered by primary key."""
    out: Rows = {}
    wanted = None if tables is None else set(tables)
    for name, sql, _, bools in _reads(bp):
        if wanted is not None and name not in wanted:
            continue
        cur = conn.execute(sql)
        out[name] = _as_dicts(cur, bools)
    return out


def _as_dicts(cur: sqlite3.Cursor, bools: tuple[str, ...]) -> list[dict[str, Any]]:
    """The rows of an executed query as dicts by column name, with the ``bools`` columns as bools."""
    cols = [c[0] for c in cur.description]
    table = list(map(dict, map(zip, repeat(cols), cur.fetchall())))  # [dict(zip(cols, r)) for r in ...] without a Python loop
    for b in bools:
        for d in table:
            v = d[b]
            if v is not None:
                d[b] = bool(v)
    return table


def _select_sql(ent: Entity) -> tuple[str, tuple[str, ...]]:
    """The SELECT of all rows of an entity by primary key, and its bool columns (kept on the entity's index)."""
    return ent.index.of(_build_select, ent)


def _build_select(ent: Entity) -> tuple[str, tuple[str, ...]]:
    return f'SELECT * FROM "{ent.name}" ORDER BY "{ent.id_field}"', tuple(f.name for f in ent.fields if f.type == "bool")


def _reads(bp: Blueprint) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """Per entity: (table, :func:`_select_sql`'s SELECT, id field, bool columns) (kept on the blueprint's index)."""
    return bp.index.of(_build_reads, bp)


def _build_reads(bp: Blueprint) -> list[tuple[str, str, str, tuple[str, ...]]]:
    reads = []
    for e in bp.entities:
        sql, bools = _select_sql(e)
        reads.append((e.name, sql, e.id_field, bools))
    return reads


def id_fields(bp: Blueprint) -> dict[str, str]:
    """Table -> its id field, in blueprint order (kept on the blueprint's index; do not change it)."""
    return bp.index.of(_build_id_fields, bp)


def _build_id_fields(bp: Blueprint) -> dict[str, str]:
    return {e.name: e.id_field for e in bp.entities}


def ref_fields(ent: Entity) -> list[tuple[str, str]]:
    """(field, referenced table) of an entity's ref fields (kept on the entity's index; do not change it)."""
    return ent.index.of(_build_ref_fields, ent)


def _build_ref_fields(ent: Entity) -> list[tuple[str, str]]:
    return [(f.name, f.ref) for f in ent.fields if f.type == "ref" and f.ref is not None]


@dataclass
class TableDiff:
    """Changes to one table between two states, keyed by primary key."""

    added: dict[str, dict[str, Any]] = field(default_factory=dict)
    removed: dict[str, dict[str, Any]] = field(default_factory=dict)
    changed: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def diff_rows(bp: Blueprint, before: Rows, after: Rows) -> dict[str, TableDiff]:
    """Per-table differences (only tables that changed appear)."""
    out: dict[str, TableDiff] = {}
    for name, _, key, _ in _reads(bp):
        old, new = before.get(name), after.get(name)
        if old is new:  # the same list (a table nothing could write): no change
            continue
        a = {r[key]: r for r in old or ()}
        b = {r[key]: r for r in new or ()}
        added, removed, changed = {}, {}, {}
        ka, kb = a.keys(), b.keys()
        for k in kb - ka:
            added[k] = b[k]
        for k in ka - kb:
            removed[k] = a[k]
        for k in ka & kb:
            ra, rb = a[k], b[k]
            if ra != rb:
                changed[k] = {c: (ra.get(c), rb.get(c)) for c in rb if ra.get(c) != rb.get(c)}
        if added or removed or changed:
            out[name] = TableDiff(added, removed, changed)
    return out


class TakenIds(dict[str, set[str]]):
    """The ids taken per table, collected from ``rows`` when a table is first asked for."""

    def __init__(self, rows: Rows, ids: dict[str, str]) -> None:
        super().__init__()
        self._rows = rows
        self._ids = ids

    def __missing__(self, table: str) -> set[str]:
        key = self._ids[table]
        taken = self[table] = {r[key] for r in self._rows.get(table, ())}
        return taken


def distinct_values(rows: list[dict[str, Any]], name: str) -> tuple[list[Any], dict[Any, int]]:
    """The distinct non-null values of field ``name`` in ``rows`` in a fixed order, and each one's position."""
    values = sorted({v for r in rows if (v := r.get(name)) is not None}, key=repr)
    return values, {v: i for i, v in enumerate(values)}


class ValuePool(dict[str, list[dict[str, Any]]]):
    """Pre-drawn rows per table whose plain values seed other states (see :meth:`StateBuilder.use_pool`).

    It also keeps, per (table, field), the field's :func:`distinct_values` once asked for.
    """

    def __init__(self, rows: Rows) -> None:
        super().__init__(rows)
        self._distinct: dict[tuple[str, str], tuple[list[Any], dict[Any, int]]] = {}

    def distinct(self, table: str, name: str) -> tuple[list[Any], dict[Any, int]]:
        """:func:`distinct_values` of field ``name`` in this pool's ``table`` rows (worked out once)."""
        key = (table, name)
        hit = self._distinct.get(key)
        if hit is None:
            hit = self._distinct[key] = distinct_values(self.get(table, []), name)
        return hit


class StateBuilder:
    """Draws rows for a blueprint's entities from one seed, respecting references.

    Used for the sample state of an app, for test fixtures and for task states.
    """

    def __init__(self, bp: Blueprint, seed: int, order: list[Entity], rows: Rows | None = None) -> None:
        """``rows``: existing rows to add to (this dict is used and extended, its row lists too)."""
        self.bp = bp
        self.values = ValueMaker(bp, seed)
        self.rng = self.values.rng
        self.order = order
        tables, self._invariants = _builder_facts(bp)
        self._plans = _plans(bp)
        self.taken_ids: dict[str, set[str]]
        if rows is None:
            self.rows: Rows = {t: [] for t in tables}
            self.taken_ids = {t: set() for t in tables}
        else:
            for t in tables:
                rows.setdefault(t, [])
            self.rows = rows
            self.taken_ids = TakenIds(rows, id_fields(bp))
        self.unique_seen: dict[tuple[str, str], set[Any]] = {}
        self.pool: Rows | None = None

    def use_pool(self, pool: Rows) -> StateBuilder:
        """Draw plain values from ``pool`` rows (pre-drawn, e.g. an app's sample state) instead of Faker.

        Ids and references are still drawn fresh; a unique value already taken is drawn anew.
        Much faster when many small states are made (task synthesis).
        """
        self.pool = pool
        return self

    def donor(self, table: str) -> dict[str, Any]:
        """One pool row of ``table``, the same for this builder's life: parameters that stand for fields of a
        table with correlated fields take their values from it together (an arrival after its departure)."""
        donors = self.__dict__.setdefault("_donors", {})
        row = donors.get(table)
        if row is None:
            rows = (self.pool or {}).get(table) or [{}]
            row = donors[table] = rows[self.rng._randbelow(len(rows))]
        return row

    def fill(self, counts: dict[str, int] | None = None) -> Rows:
        """Add ``counts[entity]`` rows (default: the entity's ``rows``) to every table."""
        add = self.add
        for ent in self.order:
            n = ent.rows if counts is None else counts.get(ent.name, 0)
            for _ in range(n):
                add(ent)
        return self.rows

    def add(self, ent: Entity, fixed: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Draw one row of ``ent`` (fields in ``fixed`` are taken as given); None if a ref has no target."""
        plan = self._plans.get(ent.name)
        if plan is None or plan.entity is not ent:  # an entity object of another blueprint (not kept)
            plan = _build_plan(ent, self.bp)
        table = plan.table
        fixed = fixed or _NOTHING
        rng = self.rng
        below = rng._randbelow  # what rng.choice draws with, without its extra call
        rows = self.rows
        source = None
        if self.pool:
            candidates = self.pool.get(table)
            if candidates:
                source = candidates[below(len(candidates))]
        id_name = plan.id_name
        row: dict[str, Any] = {}
        if id_name in fixed:
            row[id_name] = fixed[id_name]
        else:
            row[id_name] = self.values.new_key(plan.prefix, self.taken_ids[table])
        for name, null_rate, unique, f, ref, ref_key in plan.steps:
            if name in fixed:
                row[name] = fixed[name]
            elif ref:
                targets = rows.get(ref)
                if null_rate is not None and (not targets or rng.random() < null_rate):
                    row[name] = None
                elif not targets:
                    return None
                else:
                    row[name] = targets[below(len(targets))][ref_key]
            elif null_rate and rng.random() < null_rate:
                row[name] = None
            elif source is not None and (not unique or self._free(table, name, source[name])):
                row[name] = source[name]
            elif unique:
                row[name] = self._unique(ent, f, row)
                if row[name] is EXHAUSTED:  # every value of the field is taken: the table is full
                    return None
            else:
                row[name] = self.values.value(f, row)
        if (plan.derived or plan.keys) and not self._correlate(plan, row, fixed):
            return None
        if id_name in fixed:
            self.taken_ids[table].add(fixed[id_name])
        caps = self._invariants.get(table)
        if caps:
            for used, cap in caps:
                if row.get(used) is not None and row.get(cap) is not None and row[used] > row[cap]:
                    row[used] = row[cap]
        rows[table].append(row)
        return row

    def _seen(self, table: str, name: str) -> set[Any]:
        """The values of a unique field taken in this state (collected on first use, then kept up to date)."""
        seen = self.unique_seen.get((table, name))
        if seen is None:
            seen = self.unique_seen[(table, name)] = {r[name] for r in self.rows[table]}
        return seen

    def _free(self, table: str, name: str, value: Any) -> bool:
        """Whether a unique field's value is still unused in this state (and claim it if so)."""
        seen = self.unique_seen.get((table, name)) or self._seen(table, name)
        if value in seen:
            return False
        seen.add(value)
        return True

    def _unique(self, ent: Entity, f: Any, row: dict[str, Any]) -> Any:
        """A value of unique field ``f`` no row has yet: random draws, then (after 20) one of the values
        still free when the generator has few (never a made-up suffix in text people read)."""
        seen = self._seen(ent.name, f.name)
        values = few_values(f)
        if values is not None and len(seen) >= len(values) and not set(values) - seen:
            return EXHAUSTED  # a full table: no draw
        for attempt in range(50):
            v = self.values.value(f, row)
            if attempt > 20:
                if f.type == "email":  # an address with more digits is still an address
                    v = v.replace("@", f"{self.rng.randint(100, 999)}@")
                elif values is not None:
                    return self._unused(ent, f, seen, values)
            if v not in seen:
                seen.add(v)
                return v
        return EXHAUSTED  # 50 draws all taken (a generator of many values, nearly all used): the table is full

    def _unused(self, ent: Entity, f: FieldDef, seen: set[Any], values: list[Any]) -> Any:
        """One of ``values`` (every value ``f``'s generator draws) that no row has, drawn from the stream;
        :data:`EXHAUSTED` when every one is taken (no row is added: a sample state's ``rows`` fit, which
        loading checks; bigger states drawn for tasks hold as many rows as there are values)."""
        free = [v for v in values if v not in seen]
        if not free:
            return EXHAUSTED
        v = free[self.rng._randbelow(len(free))]
        seen.add(v)
        return v

    def _correlate(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> bool:
        """Draw the row's derived fields from its other fields, then keep its composite keys unique
        (False: a key has no free values left, the row is not added)."""
        for f in plan.derived:
            if f.name in fixed:  # given (a distractor copying its target): taken as is, as plain fields are
                row[f.name] = fixed[f.name]
            else:
                row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
        return all(self._unique_key(plan, key, row, fixed) for key in plan.keys)

    def _ref_draw(self, f: FieldDef) -> Any:
        rows = self.rows.get(f.ref or "") or []
        key = self.bp.entity(f.ref or "").id_field
        return lambda: rows[self.rng._randbelow(len(rows))][key] if rows else None

    def _unique_key(self, plan: _Plan, key: tuple[str, ...], row: dict[str, Any], fixed: dict[str, Any]) -> bool:
        """Redraw the fields of composite key ``key`` that are not fixed until no other row has the same values;
        False when 50 redraws all collide (the key's values are all, or nearly all, taken) or the caller
        fixed the whole key to values another row has."""
        label = "+".join(key)
        seen = self.unique_seen.get((plan.table, label))
        if seen is None:
            seen = self.unique_seen[(plan.table, label)] = {
                t for r in self.rows[plan.table] if None not in (t := tuple(r.get(k) for k in key))
            }
        free = [plan.entity.field(k) for k in key if k not in fixed]
        for _ in range(50):
            values = tuple(row.get(k) for k in key)
            if None in values or values not in seen:
                if None not in values:
                    seen.add(values)
                return True
            if not free:
                return False  # the caller fixed the whole key, and it is taken: the database would refuse the row
            f = free[self.rng._randbelow(len(free))]
            if f in plan.derived:
                row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
            else:
                row[f.name] = self._ref_draw(f)() if f.type == "ref" else self.values.value(f, row)
            self._follow(plan, row, f.name, fixed)
        return False

    def rederive(self, ent: Entity, row: dict[str, Any], changed: str) -> None:
        """Redraw the derived fields of ``row`` that depend on field ``changed`` and no longer honour their generator
        (the fixture solver calls it after changing a field)."""
        plan = self._plans.get(ent.name)
        if plan is not None and plan.derived:
            self._follow(plan, row, changed, _NOTHING, only_broken=True)

    def _follow(self, plan: _Plan, row: dict[str, Any], changed: str, fixed: dict[str, Any], only_broken: bool = False) -> None:
        """Redraw the derived fields that depend on ``changed``, directly or through one another (``only_broken``:
        only those that no longer honour their generator)."""
        touched = {changed}
        for f in plan.derived:
            if f.name in fixed or not set(depends_on(f)) & touched or (only_broken and holds(f, row)):
                continue
            row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
            touched.add(f.name)


_NOTHING: dict[str, Any] = {}
EXHAUSTED = object()
"""What :meth:`StateBuilder._unique` returns when every value of a unique field is taken."""


class _Plan(NamedTuple):
    """How :meth:`StateBuilder.add` draws a row of one entity, as plain values."""

    entity: Entity
    table: str
    id_name: str
    prefix: str
    # per field after the id: (name, null rate (None: not nullable), unique, field, referenced table or "", its id field)
    steps: tuple[tuple[str, float | None, bool, FieldDef, str, str], ...]
    # fields drawn from other fields of the row, in dependency order (see blueprint.correlate), and composite unique keys
    derived: tuple[FieldDef, ...] = ()
    keys: tuple[tuple[str, ...], ...] = ()


def _plans(bp: Blueprint) -> dict[str, _Plan]:
    """Table -> how :meth:`StateBuilder.add` draws its rows (kept on the blueprint's index)."""
    return bp.index.of(_build_plans, bp)


def _build_plans(bp: Blueprint) -> dict[str, _Plan]:
    return {e.name: _build_plan(e, bp) for e in reversed(bp.entities)}


def _build_plan(e: Entity, bp: Blueprint) -> _Plan:
    """How rows of ``e`` are drawn, its refs read in ``bp``."""
    steps = []
    derived = derived_order(e)
    for f in e.fields[1:]:
        null_rate = f.null_rate if f.nullable else None
        if f in derived and f.type != "ref":  # drawn after the row's other fields (a ref is drawn first, then checked)
            continue
        if f.type == "ref":  # a ref field names its table (FieldDef checks it)
            steps.append((f.name, null_rate, f.unique, f, f.ref or "", bp.entity(f.ref or "").id_field))
        else:
            steps.append((f.name, null_rate, f.unique, f, "", ""))
    return _Plan(e, e.name, e.id_field, e.prefix, tuple(steps), tuple(derived), tuple(tuple(k) for k in e.unique))


def _builder_facts(bp: Blueprint) -> tuple[tuple[str, ...], dict[str, list[tuple[str, str]]]]:
    """The tables of a blueprint, and per table the ``used <= capacity`` pairs implied by booking
    actions, kept true in drawn rows (kept on the blueprint's index)."""
    return bp.index.of(_build_builder_facts, bp)


def _build_builder_facts(bp: Blueprint) -> tuple[tuple[str, ...], dict[str, list[tuple[str, str]]]]:
    return tuple(e.name for e in bp.entities), _find_capacity_invariants(bp)


def _find_capacity_invariants(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for a in bp.actions:
        if a.kind == "book":
            res = bp.entity(bp.entity(a.entity).field(a.resource).ref or "")
            pair = (a.used, a.capacity)
            if pair not in out.setdefault(res.name, []):
                out[res.name].append(pair)
    return out


def entity_ids(rows: Rows, ent: Entity) -> Iterable[str]:
    return (r[ent.id_field] for r in rows.get(ent.name, []))
