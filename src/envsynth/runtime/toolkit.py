"""What generated ``tools.py`` modules import: the episode context, ToolError and row helpers.

Kept tiny and dependency-free: the same module is imported inside the sandboxed worker.
"""

from __future__ import annotations

import random
import sqlite3
from typing import Any

from envsynth.runtime import exprfuncs as _F
from envsynth.runtime.exprfuncs import plain_filter, where_sql


class ToolError(Exception):
    """An Anticipated Rejection: bad input or an unmet pre-condition.

    ``message`` is shown to the agent; ``code`` names the check that failed
    (``exists:order``, ``state``, ``pre[0]``) so tests can tell which one fired.
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


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
    weeks = staticmethod(_F.weeks)
    days = staticmethod(_F.days)
    hours = staticmethod(_F.hours)
    minutes = staticmethod(_F.minutes)
    date_add = staticmethod(_F.date_add)
    date_sub = staticmethod(_F.date_sub)
    lookup = staticmethod(_F.lookup)


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
