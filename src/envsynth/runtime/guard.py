"""The state machines in the database: illegal moves by any code are rejected at run time.

Generated tools check their state moves before writing (implicit pre-conditions, see
:mod:`envsynth.blueprint.machines`); custom code (trusted or sandboxed) and any other
write a tool makes go through SQLite triggers instead. :func:`install` adds, per state
field, a TEMP trigger ``BEFORE UPDATE OF <field>`` that aborts the statement when the
move is not in the field's ``transitions`` (writing the same state, or NULL, is no move).

The triggers are TEMP (per connection): nothing is added to ``schema.sql`` or to the bytes
of a state, and connections that only write rows to set a state up (the sample state, the
fixture solver, task initial states and their repairs) never carry them. A trigger is made
on first need (the first call of a tool that needs it, see :func:`guarded_tools`) and fires
only while its :class:`StateGuard` is armed, that is during such a call; a connection reused between such calls and setup
writes (task synthesis's workspace) blocks only the calls. The episode turns a blocked
move into an Anticipated Rejection with the code ``state:<entity>.<field>`` and a message
naming the move and the allowed ones.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from envsynth.blueprint.models import Blueprint, FieldDef

FUNCTION = "envsynth_state_guard"
"""The SQL function the triggers call (registered per connection by :func:`install`)."""
TRIGGER_PREFIX = "envsynth_state_"


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _allowed_sql(f: FieldDef) -> str:
    col = f'NEW."{f.name}"'
    old = f'OLD."{f.name}"'
    parts = [
        f"({old} = {_lit(src)} AND {col} IN ({', '.join(_lit(d) for d in dsts)}))" for src, dsts in (f.transitions or {}).items() if dsts
    ]
    return " OR ".join(parts) or "0"


def trigger_sql(table: str, f: FieldDef) -> str:
    """The TEMP trigger that blocks ``table``'s illegal moves of state field ``f`` while guarded."""
    col = f'"{f.name}"'
    name = f'"{TRIGGER_PREFIX}{table}_{f.name}"'
    when = f"OLD.{col} IS NOT NEW.{col} AND NOT ({_allowed_sql(f)}) AND {FUNCTION}({_lit(table)}, {_lit(f.name)}, OLD.{col}, NEW.{col})"
    return (
        f'CREATE TEMP TRIGGER IF NOT EXISTS {name} BEFORE UPDATE OF {col} ON main."{table}" WHEN {when} '
        f"BEGIN SELECT RAISE(ABORT, 'illegal state move'); END"
    )


def triggers(bp: Blueprint) -> dict[tuple[str, str], str]:
    """The guard trigger of each state field, by (entity, field) (kept on the blueprint's index)."""
    return bp.index.of(_build_triggers, bp)


def _build_triggers(bp: Blueprint) -> dict[tuple[str, str], str]:
    return {(e.name, f.name): trigger_sql(e.name, f) for e in bp.entities for f in e.fields if f.type == "state"}


def guarded_tools(specs: list[Any], bp: Blueprint) -> dict[str, tuple[str, ...]]:
    """Tool name -> the guard triggers its calls need: the state writes no pre-condition covers.

    Generated effects that update a bound row are checked before writing
    (:mod:`envsynth.blueprint.machines`); any other effect that writes a state field (an
    effect over many rows) and custom code are guarded in the database. Custom code gets the
    triggers of the state fields it declares in ``writes``: the sandbox refuses any other
    write of untrusted code, and the procedural tester fails a tool whose calls change a
    field it does not declare.
    """
    every = triggers(bp)
    out: dict[str, tuple[str, ...]] = {}
    for s in specs:
        if s.code is not None:
            if s.mode != "write":
                continue
            keys = [(e, f) for e, fs in s.writes.items() for f in fs if (e, f) in every]
        else:
            bound = {b.alias for b in s.bindings}
            keys = [
                (ef.entity, f)
                for ef in s.effects
                if ef.op not in ("insert", "delete") and not (ef.op == "update" and ef.alias in bound)
                for f in ef.values
                if (ef.entity, f) in every
            ]
            keys += [(ee.entity, f) for ee in s.each if ee.op == "update" for f in ee.values if (ee.entity, f) in every]
        if keys:
            out[s.name] = tuple(dict.fromkeys(every[k] for k in keys))
    return out


class StateGuard:
    """Arms a connection's state triggers during a call and records the move they blocked.

    A standing guard (see :func:`stand`) has the triggers ``made`` on its connection for good; then
    ``installed`` says which of them the current use of the connection has asked for, and the others
    let every move through, as if they did not exist.
    """

    __slots__ = ("active", "bp", "installed", "made", "violation")

    def __init__(self, bp: Blueprint, made: frozenset[str] = frozenset()) -> None:
        self.bp = bp
        self.installed: set[str] = set()
        self.made = made
        self.active = False
        self.violation: tuple[str, str, Any, Any] | None = None

    def __call__(self, table: str, field: str, old: Any, new: Any) -> int:
        """The trigger's test: block (1) and record the move while armed, else let it through (0)."""
        if not self.active:
            return 0
        if self.made and triggers(self.bp).get((table, field)) not in self.installed:
            return 0  # a standing trigger this use has not asked for
        if self.violation is None:
            self.violation = (table, field, old, new)
        return 1

    def arm(self) -> None:
        """Start guarding a call (forgets an earlier call's violation)."""
        self.violation = None
        self.active = True

    def disarm(self) -> None:
        self.active = False

    @property
    def code(self) -> str:
        """The rejection code of the recorded violation: ``state:<entity>.<field>``."""
        table, field, _, _ = self.violation or ("", "", None, None)
        return f"state:{table}.{field}"

    def message(self) -> str:
        """What the agent is told about the recorded violation."""
        table, field, old, new = self.violation or ("", "", None, None)
        f = self.bp.entity(table).field(field)
        nexts = (f.transitions or {}).get(old) or []
        can = f"it can only move to {', '.join(repr(s) for s in nexts)}" if nexts else "it cannot move to any other state"
        return f"This {table.replace('_', ' ')} is {old!r}; it cannot move to {new!r} ({can})."


def install(conn: sqlite3.Connection, bp: Blueprint, sqls: tuple[str, ...], guard: StateGuard | None = None) -> StateGuard:
    """Make sure the triggers ``sqls`` exist on ``conn`` and that they call ``guard`` (a new one if None).

    A guard remembers the triggers it made sure of, so a second call with the same ones does nothing.
    """
    if guard is None:
        guard = StateGuard(bp)
        conn.create_function(FUNCTION, 4, guard)
    for sql in sqls:
        if sql not in guard.installed:
            if sql not in guard.made:
                conn.execute(sql)
            guard.installed.add(sql)
    return guard


def stand(conn: sqlite3.Connection, bp: Blueprint, sqls: tuple[str, ...]) -> StateGuard:
    """A standing guard of ``conn``: the triggers ``sqls`` made once, for good (call it outside any transaction;
    the connection's earlier guard triggers are dropped).

    For a connection reused by many short uses that each roll back (task synthesis's workspace): a trigger
    made and rolled back with every use changes the schema each time, and SQLite then reads the schema again
    and re-prepares every cached statement, as it does for every function registered anew. Each use starts by
    emptying the guard's ``installed`` set and passes the guard on to its episodes (every episode on the
    connection must get it: :func:`install` without a guard would register another one for the triggers).
    """
    guard = StateGuard(bp, frozenset(sqls))
    conn.create_function(FUNCTION, 4, guard)
    for (name,) in conn.execute("SELECT name FROM sqlite_temp_master WHERE type = 'trigger'").fetchall():
        if name.startswith(TRIGGER_PREFIX):
            conn.execute(f'DROP TRIGGER temp."{name}"')
    for sql in sqls:
        conn.execute(sql)
    return guard
