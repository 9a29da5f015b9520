"""Task states: rows of s0 (core + distractors) and their SQLite bytes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.episode import writing_tools
from envsynth.runtime.guard import StateGuard, stand
from envsynth.runtime.state import Rows, ScratchConnection, id_fields, rows_to_bytes_fast
from envsynth.tasks.model import Task


def merged(core: Rows, extra: Rows) -> Rows:
    """Core rows then extra rows, table by table."""
    out: Rows = {k: list(v) for k, v in core.items()}
    for k, v in extra.items():
        out.setdefault(k, []).extend(v)
    return out


def rows_bytes(app: App, rows: Rows) -> bytes:
    """SQLite bytes of rows of ``app`` (tables missing from ``rows`` stay empty); transient use."""
    return rows_to_bytes_fast(app.schema, app.order, rows)


def state_bytes(app: App, task: Task) -> bytes:
    """The SQLite bytes of a task's initial state s0."""
    return rows_bytes(app, merged(task.state.core, task.state.distractors))


def count_rows(rows: Rows) -> int:
    return sum(len(v) for v in rows.values())


def copy_rows(rows: Rows) -> Rows:
    return {k: [dict(r) for r in v] for k, v in rows.items()}


def key_index(app: App, rows: Rows) -> dict[tuple[str, Any], dict[str, Any]]:
    """(table, primary key) -> row."""
    out = {}
    for name, key in id_fields(app.blueprint).items():
        for r in rows.get(name, ()):
            out[(name, r[key])] = r
    return out


def writable_tables(app: App, tools: Iterable[str]) -> frozenset[str]:
    """Tables that ``tools`` can change (written, inserted into or deleted from); kept on the app's index."""
    return app.index.of(_find_writable_tables, app, tuple(tools))


def _find_writable_tables(app: App, names: tuple[str, ...]) -> frozenset[str]:
    out: set[str] = set()
    for name in names:
        spec = app.spec_by_name[name]
        out |= set(spec.writes) | set(spec.creates) | set(spec.deletes)
    return frozenset(out)


def pure_reads(app: App) -> frozenset[str]:
    """The generated tools whose calls write nothing (no effects, not write mode, no armed state machine; see
    :func:`envsynth.runtime.episode.writing_tools`), kept on the app's index."""
    return app.index.of(_find_pure_reads, app)


def _find_pure_reads(app: App) -> frozenset[str]:
    writing = writing_tools(app)
    return frozenset(s.name for s in app.specs if s.code is None and not s.effects and not s.each and s.name not in writing)


def workspace_guard(app: App, conn: ScratchConnection) -> StateGuard | None:
    """The standing state guard of ``app`` on a workspace's connection (see :func:`envsynth.runtime.guard.stand`),
    made on first use; None for an app without guarded tools, or inside a transaction (its triggers would not stay)."""
    sqls = app.index.of(_guard_triggers, app)
    if not sqls or conn.in_transaction:
        return None
    guard = conn.guard
    if guard is None or guard.bp is not app.blueprint or guard.made != frozenset(sqls):
        conn.guard = guard = stand(conn, app.blueprint, sqls)
    return guard


def _guard_triggers(app: App) -> tuple[str, ...]:
    return tuple(dict.fromkeys(sql for sqls in app.state_writers.values() for sql in sqls))
