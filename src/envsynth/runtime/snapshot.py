"""The initial rows of the tables an episode may write, read just before the first call that may write each.

An episode runs its tools on its own copy of s0, and a tool changes only the tables it declares
(``writes``, ``creates``, ``deletes``; the procedural tests fail any other write). So the rows
of a table as they are just before the first call whose tool declares it are its rows in s0:
an earlier call either did not touch it or was rejected and undone. :class:`S0Tables` keeps
those rows as SQLite returns them (tuples, no per-row Python work) and, at the end, gives the
rows that differ from the table's rows then, in the form :func:`~envsynth.runtime.reward.effects_of`
takes: the effects of these few rows are the effects of the whole tables (unchanged rows make
no effects), without rolling the episode back and reading s0 again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from envsynth.blueprint.models import Blueprint
from envsynth.runtime.episode import written_tables

if TYPE_CHECKING:
    from envsynth.runtime.app import App
    from envsynth.runtime.state import Rows

Table = tuple[tuple[str, ...], list[tuple[Any, ...]]]
"""A table's column names and its rows as tuples (scan order)."""


class S0Tables:
    """The s0 rows of the tables an episode's calls may write, read before the first call that may write each."""

    __slots__ = ("_writes", "tables")

    def __init__(self, app: App) -> None:
        self._writes = written_tables(app)
        self.tables: dict[str, Table] = {}

    def before_call(self, db: sqlite3.Connection, tool: str) -> None:
        """Read the tables ``tool`` may write that are not read yet (call it before the call runs)."""
        tables = self._writes.get(tool)
        if not tables:
            return
        for t in tables:
            if t not in self.tables:
                self.tables[t] = read_table(db, t)

    def changed_rows(self, db: sqlite3.Connection, bp: Blueprint, tables: Iterable[str]) -> tuple[Rows, Rows]:
        """``(before, after)``: per table of ``tables`` whose rows now differ from s0, its s0 rows that are
        no longer there as they were, and its current rows that were not there in s0, as dicts (bools as bools).

        Every table of ``tables`` must have been read (:meth:`before_call` of a tool that may write it).
        """
        before: Rows = {}
        after: Rows = {}
        bools = bool_fields(bp)
        for t in tables:
            cols, old = self.tables[t]
            new = db.execute(select_sql(t)).fetchall()
            if new == old:  # the common case of a table read for nothing: C speed, no sets
                continue
            kept, now = set(old), set(new)
            before[t] = as_dicts(cols, [r for r in old if r not in now], bools.get(t, ()))
            after[t] = as_dicts(cols, [r for r in new if r not in kept], bools.get(t, ()))
        return before, after


def read_table(db: sqlite3.Connection, table: str) -> Table:
    """Every row of ``table`` as tuples, with the column names."""
    cur = db.execute(select_sql(table))
    rows = cur.fetchall()
    return tuple(c[0] for c in cur.description), rows


def bool_fields(bp: Blueprint) -> dict[str, tuple[str, ...]]:
    """Table -> its bool columns, as :func:`~envsynth.runtime.state.read_rows` converts them (kept on the blueprint's index)."""
    return bp.index.of(_build_bool_fields, bp)


def _build_bool_fields(bp: Blueprint) -> dict[str, tuple[str, ...]]:
    return {e.name: tuple(f.name for f in e.fields if f.type == "bool") for e in bp.entities}


_SELECT: dict[str, str] = {}


def select_sql(table: str) -> str:
    """``SELECT * FROM "table"`` (a table scan; the order does not matter to a diff by primary key)."""
    sql = _SELECT.get(table)
    if sql is None:
        sql = _SELECT[table] = f'SELECT * FROM "{table}"'
    return sql


def as_dicts(cols: tuple[str, ...], rows: list[tuple[Any, ...]], bools: tuple[str, ...]) -> list[dict[str, Any]]:
    """Rows as dicts by column name, with the ``bools`` columns as bools (as :func:`~envsynth.runtime.state.read_rows` gives them)."""
    out = [dict(zip(cols, r)) for r in rows]
    for b in bools:
        for d in out:
            v = d.get(b)
            if v is not None:
                d[b] = bool(v)
    return out
