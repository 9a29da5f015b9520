"""What generated ``tools.py`` modules import: the episode context, ToolError and row helpers.

Kept tiny and dependency-free: the same module is imported inside the sandboxed worker.
"""

from __future__ import annotations

import datetime as dt
import random
import sqlite3
from typing import Any


class ToolError(Exception):
    """An Anticipated Rejection: bad input or an unmet pre-condition.

    ``message`` is shown to the agent; ``code`` names the check that failed
    (``exists:order``, ``state``, ``pre[0]``) so tests can tell which one fired.
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# -- the condition language's functions ------------------------------------------
# Dates and datetimes are ISO strings (``2026-03-15``, ``2026-03-15T12:00:00``); a duration is a
# ``datetime.timedelta``. ``date_add``/``date_sub`` are ``+``/``-`` when one side is a date or a
# duration: a date plus a duration is a date string again, the difference of two dates is a duration.
# A row filter maps ``field`` or ``field__<op>`` (``ne``, ``lt``, ``lte``, ``gt``, ``gte``) to a value;
# a list value means "one of" (``ne`` with a list: "none of"). ``row_matches`` and ``where_sql`` give
# a filter the same meaning in Python and in SQLite (NULL matches only ``field=None`` and
# ``field__ne=<not None>``). They live here, not in a module of their own, because the sandboxed tool
# worker loads this file alone (by path) and custom code may call them through ``ctx``.

DURATIONS = {
    "weeks": dt.timedelta(weeks=1),
    "days": dt.timedelta(days=1),
    "hours": dt.timedelta(hours=1),
    "minutes": dt.timedelta(minutes=1),
}
LOOKUPS = ("ne", "lt", "lte", "gt", "gte")
_SQL_OPS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def duration(unit: str, n: float) -> dt.timedelta:
    """``n`` weeks, days, hours or minutes as a duration."""
    return DURATIONS[unit] * n


def weeks(n: float) -> dt.timedelta:
    """``n`` weeks."""
    return DURATIONS["weeks"] * n


def days(n: float) -> dt.timedelta:
    """``n`` days."""
    return DURATIONS["days"] * n


def hours(n: float) -> dt.timedelta:
    """``n`` hours."""
    return DURATIONS["hours"] * n


def minutes(n: float) -> dt.timedelta:
    """``n`` minutes."""
    return DURATIONS["minutes"] * n


def _moment(stamp: str) -> dt.datetime:
    """An ISO date (midnight) or datetime string as a naive datetime."""
    if len(stamp) == 10:
        return dt.datetime.combine(dt.date.fromisoformat(stamp), dt.time())
    return dt.datetime.fromisoformat(stamp)


def _shift(stamp: str, delta: dt.timedelta) -> str:
    """``stamp`` moved by ``delta``, in the same format (a date moved by a part of a day becomes a datetime)."""
    moved = _moment(stamp) + delta
    if len(stamp) == 10 and not (moved.hour or moved.minute or moved.second or moved.microsecond):
        return moved.date().isoformat()
    if len(stamp) == 16 and not (moved.second or moved.microsecond):
        return moved.isoformat(timespec="minutes")
    return moved.isoformat(timespec="seconds")


def date_add(a: Any, b: Any) -> Any:
    """``a + b`` where a date or datetime string may be moved by a duration (either order)."""
    if isinstance(a, dt.timedelta) and isinstance(b, str):
        a, b = b, a
    if isinstance(a, str) and isinstance(b, dt.timedelta):
        return _shift(a, b)
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError(f"cannot add {b!r} to {a!r}: a date takes a duration such as days(n) or hours(n)")
    return a + b


def date_sub(a: Any, b: Any) -> Any:
    """``a - b``: a date moved back by a duration, or the duration between two dates."""
    if isinstance(a, str) and isinstance(b, dt.timedelta):
        return _shift(a, -b)
    if isinstance(a, str) and isinstance(b, str):
        return _moment(a) - _moment(b)
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError(f"cannot subtract {b!r} from {a!r}: a date takes a duration such as days(n) or hours(n)")
    return a - b


def table_key(k: Any) -> str:
    """How a lookup-table key is stored and looked up: text, ``true``/``false`` for booleans."""
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


def lookup(table: dict[str, Any], *keys: Any) -> Any:
    """The entry of a nested lookup table at ``keys`` (None when there is none)."""
    node: Any = table
    for k in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(table_key(k))
    return node


def split_key(key: str) -> tuple[str, str]:
    """``'price__gt'`` -> ``('price', 'gt')``; a plain field is ``(field, 'eq')``."""
    name, sep, op = key.rpartition("__")
    if sep and op in LOOKUPS and name:
        return name, op
    return key, "eq"


def _is_list(v: Any) -> bool:
    return isinstance(v, list | tuple)


def value_matches(x: Any, op: str, v: Any) -> bool:
    """Whether a column value ``x`` passes ``op v`` with SQLite's meaning (NULL never passes an order test)."""
    if op == "eq":
        if _is_list(v):
            return x is not None and x in v
        return x == v if x is not None and v is not None else x is v
    if op == "ne":
        if _is_list(v):
            return x is None or x not in v
        return x != v if x is not None and v is not None else x is not v
    if x is None or v is None:
        return False
    if isinstance(x, str) != isinstance(v, str):  # SQLite orders every number before every text
        x, v = isinstance(x, str), isinstance(v, str)
    return bool({"lt": x < v, "lte": x <= v, "gt": x > v, "gte": x >= v}[op])


def row_matches(row: dict[str, Any], where: dict[str, Any]) -> bool:
    """Whether ``row`` passes every filter of ``where`` (see the module doc)."""
    for key, v in where.items():
        name, op = split_key(key)
        if not value_matches(row.get(name), op, v):
            return False
    return True


def plain_filter(where: dict[str, Any]) -> bool:
    """True when every filter is ``field = scalar`` (the fast, cached SQL shape)."""
    for key, v in where.items():  # noqa: SIM110 - a loop: this runs on every exists()/count() of a tool call
        if "__" in key or type(v) in (list, tuple):
            return False
    return True


def where_sql(where: dict[str, Any]) -> tuple[str, list[Any]]:
    """SQL condition and arguments for ``where`` (``"f" IS ?``, ``IN``, ``<``...), same meaning as :func:`row_matches`."""
    parts: list[str] = []
    args: list[Any] = []
    for key, v in where.items():
        name, op = split_key(key)
        col = '"' + name.replace('"', '""') + '"'
        if _is_list(v):
            marks = ", ".join("?" for _ in v)
            if op == "eq":
                parts.append(f"{col} IN ({marks})" if v else "0")
            elif op == "ne":
                parts.append(f"({col} IS NULL OR {col} NOT IN ({marks}))" if v else "1")
            else:
                raise ValueError(f"{key}: a list only goes with = or __ne")
            args.extend(v)
        elif op in ("eq", "ne"):
            parts.append(f"{col} IS {'NOT ' if op == 'ne' else ''}?")
            args.append(v)
        else:
            parts.append(f"{col} {_SQL_OPS[op]} ?")
            args.append(v)
    return " AND ".join(parts) or "1", args


class BoolColumns(dict[str, tuple[str, ...]]):
    """An app's bool columns by table, carrying the app's cache of result column names.

    ``columns`` maps ``(sql, table)`` to the query's column names and the bool columns
    among them; an app's statements always read the same schema, so it is shared by all
    of the app's episodes (a plain dict given to :class:`Context` gets a per-context cache).
    """

    __slots__ = ("columns",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.columns: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {}


_MAX_CACHED_QUERIES = 4096  # per app, see BoolColumns
_COUNT_SQL: dict[tuple[str, ...], str] = {}  # (table, *columns) -> COUNT statement (pure text, shared by all apps)
_EXISTS_SQL: dict[tuple[str, ...], str] = {}  # (table, *columns) -> first-match statement
_ID_SQL: dict[tuple[str, str], str] = {}  # (table, key) -> id lookup statement


class Context:
    """Per-episode services for tools: the database, the clock, ids and randomness.

    Everything here is derived from the episode seed, so a replay is identical.
    """

    __slots__ = ("__weakref__", "_columns", "_rng", "_seed", "_today", "bools", "db", "now_value")  # weakref: tool worker per episode

    def __init__(self, db: sqlite3.Connection, now: str, seed: int, bools: dict[str, tuple[str, ...]]) -> None:
        self.db = db
        self.now_value = now
        self._today = now[:10]
        self._seed = seed
        self._rng: random.Random | None = None
        self.bools = bools
        self._columns = bools.columns if isinstance(bools, BoolColumns) else {}

    @property
    def rng(self) -> random.Random:
        """The episode's random stream (seeded with the episode seed; made on first use, most calls draw nothing)."""
        if self._rng is None:
            self._rng = random.Random(self._seed)
        return self._rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    @property
    def rng_used(self) -> random.Random | None:
        """The random stream if anything has drawn from it yet, else None (a fresh stream from the seed)."""
        return self._rng

    def now(self) -> str:
        """The episode's current time, ``YYYY-MM-DDTHH:MM:SS``."""
        return self.now_value

    def today(self) -> str:
        """The episode's current date, ``YYYY-MM-DD``."""
        return self._today

    def new_id(self, table: str, key: str, prefix: str) -> str:
        """A fresh id for ``table`` (``prefix_NNNNNN``), drawn from the episode's random stream."""
        sql = _ID_SQL.get((table, key))
        if sql is None:
            sql = _ID_SQL[table, key] = f'SELECT 1 FROM "{table}" WHERE "{key}" = ?'
        randrange = self.rng.randrange
        execute = self.db.execute
        while True:
            candidate = f"{prefix}_{randrange(100000, 1000000)}"
            if execute(sql, (candidate,)).fetchone() is None:
                return candidate

    # -- row helpers used by generated code ---------------------------------
    def one(self, sql: str, args: tuple[Any, ...] | list[Any], table: str) -> dict[str, Any] | None:
        """First row of a query as a dict (bool columns as bools), or None."""
        cur = self.db.execute(sql, args)
        r = cur.fetchone()
        if r is None:
            return None
        names, bools = self._columns.get((sql, table)) or self._names(cur, sql, table)
        d = dict(zip(names, r))
        for col in bools:
            if d[col] is not None:
                d[col] = bool(d[col])
        return d

    def all(self, sql: str, args: tuple[Any, ...] | list[Any], table: str) -> list[dict[str, Any]]:
        """All rows of a query as dicts."""
        cur = self.db.execute(sql, args)
        rows = cur.fetchall()
        if not rows:
            return []
        names, bools = self._columns.get((sql, table)) or self._names(cur, sql, table)
        out = [dict(zip(names, r)) for r in rows]
        if bools:
            for d in out:
                for col in bools:
                    if d[col] is not None:
                        d[col] = bool(d[col])
        return out

    def _names(self, cur: sqlite3.Cursor, sql: str, table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The column names of ``sql`` (read from ``cur``) and the bool columns of ``table`` among them (cached, up to a bound)."""
        names = tuple(c[0] for c in cur.description)
        hit = (names, tuple(c for c in self.bools.get(table, ()) if c in names))
        if len(self._columns) < _MAX_CACHED_QUERIES:  # bounded: custom code may build SQL text from values
            self._columns[sql, table] = hit
        return hit

    def exists(self, table: str, where: dict[str, Any]) -> bool:
        """Whether a row of ``table`` passes every filter of ``where`` (the first one found ends the search).

        A filter is ``column: value`` (``None`` matches NULL), ``column: [values]`` (one of them) or
        ``column__<op>: value`` with ``op`` one of ``ne``, ``lt``, ``lte``, ``gt``, ``gte``.
        """
        if not plain_filter(where):
            cond, args = where_sql(where)
            return self.db.execute(f'SELECT 1 FROM "{table}" WHERE {cond} LIMIT 1', args).fetchone() is not None
        sql = _EXISTS_SQL.get((table, *where)) or _exists_sql(table, where)
        return self.db.execute(sql, tuple(where.values())).fetchone() is not None

    def count(self, table: str, where: dict[str, Any]) -> int:
        """How many rows of ``table`` pass every filter of ``where`` (see :meth:`exists`)."""
        if not plain_filter(where):
            cond, args = where_sql(where)
            return int(self.db.execute(f'SELECT COUNT(*) FROM "{table}" WHERE {cond}', args).fetchone()[0])
        sql = _COUNT_SQL.get((table, *where)) or _count_sql(table, where)
        return int(self.db.execute(sql, tuple(where.values())).fetchone()[0])

    def every(self, table: str, where: dict[str, Any], test: dict[str, Any]) -> bool:
        """Whether every row of ``table`` passing ``where`` also passes ``test`` (true when none does)."""
        cond, args = where_sql(where)
        if not test:
            return True
        tcond, targs = where_sql(test)
        sql = f'SELECT 1 FROM "{table}" WHERE {cond} AND NOT COALESCE(({tcond}), 0) LIMIT 1'
        return self.db.execute(sql, [*args, *targs]).fetchone() is None

    # -- the condition language's dates, durations and lookup tables ----------
    weeks = staticmethod(weeks)
    days = staticmethod(days)
    hours = staticmethod(hours)
    minutes = staticmethod(minutes)
    date_add = staticmethod(date_add)
    date_sub = staticmethod(date_sub)
    lookup = staticmethod(lookup)


def _where(where: dict[str, Any]) -> str:
    """The condition matching ``where``'s ``column = value`` pairs (``IS``: None matches NULL)."""
    return " AND ".join(f'"{k}" IS ?' for k in where) or "1"


def _count_sql(table: str, where: dict[str, Any]) -> str:
    """``SELECT COUNT(*)`` of ``table`` rows matching ``where``'s columns, built once per table and columns."""
    sql = _COUNT_SQL[(table, *where)] = f'SELECT COUNT(*) FROM "{table}" WHERE {_where(where)}'
    return sql


def _exists_sql(table: str, where: dict[str, Any]) -> str:
    """A query of the first ``table`` row matching ``where``'s columns, built once per table and columns."""
    sql = _EXISTS_SQL[(table, *where)] = f'SELECT 1 FROM "{table}" WHERE {_where(where)} LIMIT 1'
    return sql


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, with wildcards in it escaped."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
