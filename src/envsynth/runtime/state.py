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
from typing import Any

from envsynth.blueprint.models import Blueprint, Entity

Rows = dict[str, list[dict[str, Any]]]
STATEMENT_CACHE = 1024  # prepared statements kept per connection (tools, deltas, reads: well over the default 128)


def empty_db(schema: str, factory: type[sqlite3.Connection] = sqlite3.Connection, page_size: int | None = None) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, cached_statements=STATEMENT_CACHE, factory=factory)
    if page_size is not None:  # before the first table: fixed from then on
        conn.execute(f"PRAGMA page_size = {int(page_size)}")
    conn.executescript(schema)
    return conn


class ScratchConnection(sqlite3.Connection):
    """A connection of :func:`scratch_connection`; ``guard`` is the state guard its users keep on it
    between uses (see :func:`envsynth.runtime.guard.stand`), None until one does."""

    __slots__ = ("guard",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard: Any = None


_SCRATCH = threading.local()
SCRATCH_CONNECTIONS = 32  # (schema, purpose) connections kept per thread, the least recently used let go first


def scratch_connection(schema: str, purpose: str = "bytes", page_size: int | None = None) -> ScratchConnection:
    """A reusable connection for ``schema``, empty at rest, one per thread and ``purpose``.

    Reusing one connection keeps SQLite's parsed schema and prepared statements warm.
    Callers must leave it empty (delete or roll back what they add); it is never reset
    with ``deserialize``, which is not safe under cached prepared statements. Different
    purposes get different connections so that their transactions never interleave.
    A thread keeps the :data:`SCRATCH_CONNECTIONS` most recently used ones (a process that
    builds many apps does not keep a connection per app forever); one let go closes when
    its last user drops it. ``page_size``: the database's page size, when the connection is made
    (SQLite's default else; a purpose should always ask for the same one).
    """
    cache: OrderedDict[tuple[str, str], ScratchConnection] | None = getattr(_SCRATCH, "conns", None)
    if cache is None:
        cache = _SCRATCH.conns = OrderedDict()
    key = (schema, purpose)
    conn = cache.get(key)
    if conn is None:
        conn = cache[key] = empty_db(schema, ScratchConnection, page_size)  # type: ignore[assignment]
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
    forward = _forward_refs(order)
    for ent in order:
        table = rows.get(ent.name)
        if not table:
            continue
        sql, cols, values = _insert_sql(ent)
        later = forward.get(ent.name)
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


# the sample-data builder has its own module; its names stay importable from here
from envsynth.runtime.sampledata import (  # noqa: E402, F401
    EXHAUSTED,
    StateBuilder,
    TakenIds,
    ValuePool,
    distinct_values,
    entity_ids,
)
