"""Instantiate a planned chain: arguments and an initial state s0 that make it succeed.

Steps are solved one by one. For step i the calls before it are executed on the current
s0; the fixture solver (the same one the procedural tester uses) then repairs the
resulting state until step i's pre-conditions hold, and every repair is carried back
into s0, provided it touches nothing the earlier calls changed. Finally the whole chain
is executed on s0 (ScaleEnv's execution verification); only a chain that runs with
every call a Success is kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from envsynth.blueprint.models import Entity
from envsynth.errors import EnvsynthError
from envsynth.runtime.app import App
from envsynth.runtime.episode import SUCCESS, Episode
from envsynth.runtime.state import Rows, id_fields, insert_rows, read_rows, ref_fields, scratch_connection
from envsynth.runtime.toolkit import Context
from envsynth.tasks.building.goals import same_person
from envsynth.tasks.building.step_args import allowed_pre, bound_rows, created_rows, given_before, id_filters, oracle_call, same_actor
from envsynth.tasks.model import Call, Ref
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.planning.refs import MISSING, resolve, where
from envsynth.tasks.state import copy_rows, pure_reads, workspace_guard, writable_tables
from envsynth.testing.fixtures import Solver

WORKSPACE_PAGE = 1024  # bytes: small states, and rolling back a use restores every page it touched (a quarter of 4096's)


class ChainFailed(EnvsynthError):
    """The chain could not be instantiated; the message is the rejection reason.

    ``step``: the index of the chain step no instantiation was found for, when one step is to blame.
    """

    def __init__(self, message: str, step: int | None = None) -> None:
        super().__init__(message)
        self.step = step


@dataclass
class Run:
    """An executed chain: each call's result, and the rows it left (empty when the caller did not ask for them)."""

    results: list[Any]
    final: Rows


class Workspace:
    """A state loaded once into the working database; chains run in savepoints and roll back.

    Use as a context manager; everything is rolled back when it closes. While a chain is
    being instantiated, the state its accepted prefix leaves is kept (see :meth:`extend`).
    """

    def __init__(self, app: App, rows: Rows) -> None:
        self.app = app
        self.conn = scratch_connection(app.schema, purpose="workspace", page_size=WORKSPACE_PAGE)
        self.guard = workspace_guard(app, self.conn)  # made before BEGIN: its triggers stay on the connection
        self.conn.execute("BEGIN")
        try:
            insert_rows(self.conn, app.order, rows)
        except sqlite3.Error as exc:
            self.conn.execute("ROLLBACK")
            raise ChainFailed(f"invalid state: {exc}") from None
        self.rows = rows
        self._kept: list[Call] | None = None  # the calls whose resulting state is kept (savepoint "kept")
        self._kept_rng: Any = None  # the episode's random stream after them
        self._kept_guarded: frozenset[str] = frozenset()  # the guard triggers they made (see _episode)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Roll everything back and let the connection go (its next user finds it empty)."""
        conn, self.conn = self.conn, None  # type: ignore[assignment]
        if conn is not None:
            conn.execute("ROLLBACK")

    def run(self, calls: list[Call], seed: int = 0) -> Run:
        """Execute calls on the current state and undo them; ChainFailed on any non-Success."""
        self._rewind()
        if (reads := pure_reads(self.app)) and all(c.tool in reads for c in calls):  # nothing to undo
            return self._execute(calls, seed)[0]
        conn = self.conn
        conn.execute("SAVEPOINT chain_run")
        try:
            run, _ = self._execute(calls, seed)
        finally:
            conn.execute("ROLLBACK TO chain_run")
            conn.execute("RELEASE chain_run")
        return run

    def try_rows(self, rows: Rows, delta: Delta, calls: list[Call], final: bool = True) -> Run:
        """Switch to ``rows`` (the loaded rows changed by ``delta``) and run ``calls``, keeping the state they leave.

        On failure the previous rows are restored (and no state is kept). ``final=False``
        leaves the run's ``final`` rows unread (empty) for a caller that will not look at them.
        """
        self._rewind()
        conn = self.conn
        conn.execute("SAVEPOINT trial")
        previous = self.rows
        try:
            delta.apply(conn, self.app)
            self.rows = rows  # runs read unwritten tables from here
            conn.execute("SAVEPOINT kept")
            run, ctx = self._execute(calls, 0, final)
        except BaseException as exc:
            self.rows = previous
            conn.execute("ROLLBACK TO trial")
            conn.execute("RELEASE trial")
            if isinstance(exc, sqlite3.Error):
                raise ChainFailed(f"invalid state: {exc}") from None
            raise
        # "trial" stays open under "kept": the delta is part of the rows now
        self._kept, self._kept_rng, self._kept_guarded = list(calls), ctx.rng_used, self._guarded()
        return run

    def extend(self, run: Run, call: Call, final: bool = True) -> Run:
        """``run`` (the kept run) plus ``call``, executed on the kept state only: the same outcome as
        re-running the whole chain on unchanged rows, without replaying the prefix. ChainFailed on a
        non-Success, and the kept state stays as it was. ``final`` as in :meth:`try_rows`.
        """
        kept = self._kept
        if kept is None or len(kept) != len(run.results):
            raise ValueError("extend() needs the state of the last try_rows() or extend() run")
        conn = self.conn
        rng = self._kept_rng  # None: nothing has drawn from the episode's stream yet
        spec = self.app.spec_by_name.get(call.tool)
        draws = spec is None or bool(spec.creates) or spec.code is not None  # only new ids and custom code draw
        saved = rng.getstate() if rng is not None and draws else None
        conn.execute("SAVEPOINT step")
        ctx = Context(conn, self.app.now, 0, self.app.bool_columns)
        if rng is not None:
            ctx.rng = rng  # the episode's random stream continues where the kept calls left it
        try:
            result = _call(self._episode(ctx, self._kept_guarded), len(kept), call, run.results)
        except BaseException:
            conn.execute("ROLLBACK TO step")
            conn.execute("RELEASE step")
            if saved is not None:
                rng.setstate(saved)  # type: ignore[union-attr]
            raise
        conn.execute("RELEASE step")
        calls = [*kept, call]
        self._kept, self._kept_rng, self._kept_guarded = calls, ctx.rng_used, self._guarded()
        return Run([*run.results, result], self._final(calls, run.final) if final else {})

    def prune(self, s0: Rows, core: Rows) -> bool:
        """Make the loaded state ``core`` by deleting the rows of ``s0`` (the state instantiation left) it lacks.

        ``core`` must be a subset of ``s0`` that holds every row its rows refer to. The rows
        left keep their relative order, so a chain runs as it would on ``core`` loaded anew.
        False (and nothing changed) when SQLite refuses a delete. :meth:`unprune` restores s0.
        """
        self._rewind()
        conn = self.conn
        conn.execute("SAVEPOINT s0")
        try:
            ids = id_fields(self.app.blueprint)
            for ent in reversed(self.app.order):
                rows = s0.get(ent.name)
                if not rows:
                    continue
                key = ids[ent.name]
                kept = {r[key] for r in core.get(ent.name, ())}
                gone = [(r[key],) for r in rows if r[key] not in kept]
                if gone:
                    conn.executemany(f'DELETE FROM "{ent.name}" WHERE "{key}" = ?', gone)
        except sqlite3.Error:
            conn.execute("ROLLBACK TO s0")
            conn.execute("RELEASE s0")
            return False
        self.rows = core
        return True

    def unprune(self, rows: Rows) -> None:
        """Back to the state before :meth:`prune` (``rows``, a copy of its s0)."""
        self._rewind()
        self.conn.execute("ROLLBACK TO s0")
        self.rows = rows

    @contextmanager
    def adding(self, full: Rows, extra: Rows) -> Iterator[Workspace]:
        """The loaded rows plus ``extra`` (``full`` = both) for the ``with`` block; removed again at its end.

        The same as a Workspace of ``full``: ChainFailed when SQLite refuses a row.
        """
        self._rewind()
        conn = self.conn
        base = self.rows
        conn.execute("SAVEPOINT extra")
        try:
            insert_rows(conn, self.app.order, extra)
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK TO extra")
            conn.execute("RELEASE extra")
            raise ChainFailed(f"invalid state: {exc}") from None
        self.rows = full
        try:
            yield self
        finally:
            self._rewind()
            self.rows = base
            conn.execute("ROLLBACK TO extra")
            conn.execute("RELEASE extra")

    def _execute(self, calls: list[Call], seed: int, final: bool = True) -> tuple[Run, Context]:
        ctx = Context(self.conn, self.app.now, seed, self.app.bool_columns)
        ep = self._episode(ctx, frozenset())
        results: list[Any] = []
        for i, c in enumerate(calls):
            results.append(_call(ep, i, c, results))
        return Run(results, self._final(calls) if final else {}), ctx

    def _episode(self, ctx: Context, guarded: frozenset[str]) -> Episode:
        """An episode on the connection; the standing guard's triggers ``guarded`` are the ones made so far (what
        the rolled-back calls made is gone: the episodes' calls see the triggers they would have made)."""
        if self.guard is not None:
            self.guard.installed = set(guarded)
        return Episode(app=self.app, db=self.conn, ctx=ctx, guard=self.guard)

    def _guarded(self) -> frozenset[str]:  # the standing guard's triggers the last episode made
        return frozenset(self.guard.installed) if self.guard is not None else frozenset()

    def keeps(self, run: Run) -> bool:
        """Whether the kept state is the one ``run`` left."""
        return self._kept is not None and len(self._kept) == len(run.results)

    def _final(self, calls: list[Call], before: Rows | None = None) -> Rows:
        """The current rows: only tables the calls can write may differ from the loaded rows.

        ``before``: the rows as they were before the last call (possibly only some tables);
        tables that call cannot write are taken from there instead of being read again.
        """
        written = writable_tables(self.app, [c.tool for c in calls])
        if not written:  # nothing could change
            return dict(self.rows)
        final = {t: rows for t, rows in self.rows.items() if t not in written}
        if before is None:
            final.update(read_rows(self.conn, self.app.blueprint, written))
            return final
        last = writable_tables(self.app, [calls[-1].tool])
        read = {t for t in written if t in last or t not in before}
        fresh = read_rows(self.conn, self.app.blueprint, read)
        for t in id_fields(self.app.blueprint):  # the order read_rows gives
            if t in written:
                final[t] = fresh[t] if t in read else before[t]
        return final

    def _rewind(self) -> None:
        """Back to the loaded rows (drop the kept state)."""
        if self._kept is not None:
            self.conn.execute("ROLLBACK TO kept")
            self.conn.execute("RELEASE kept")
            self._kept, self._kept_rng, self._kept_guarded = None, None, frozenset()


def _call(ep: Episode, i: int, c: Call, results: list[Any]) -> Any:
    """Make call ``i`` of a chain (references resolved against earlier results); its result, or ChainFailed."""
    args = dict(c.args)
    for p, ref in c.refs.items():
        value = resolve(ref, results)
        if value is MISSING:
            raise ChainFailed(f"step {i}: {where(ref)}")
        args[p] = value
    res = ep.call(c.tool, args, replay=True)
    if res.outcome != SUCCESS:
        raise ChainFailed(f"step {i} ({c.tool}): {res.outcome}: {res.content[:160]}")
    return res.data


@dataclass
class Delta:
    """Row changes by table: rows added, rows changed (their new values), keys removed."""

    added: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    changed: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    removed: dict[str, list[Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def apply(self, conn: sqlite3.Connection, app: App) -> None:
        """The same changes as INSERT, UPDATE and DELETE statements (parents inserted first, deleted last)."""
        if self.added:
            insert_rows(conn, app.order, self.added)
        if self.changed:
            for ent in app.order:
                rows = self.changed.get(ent.name)
                if rows:
                    key = ent.id_field
                    cols = [f.name for f in ent.fields[1:]]
                    sets = ", ".join(f'"{c}" = ?' for c in cols)
                    sql = f'UPDATE "{ent.name}" SET {sets} WHERE "{key}" = ?'
                    conn.executemany(sql, [(*(r.get(c) for c in cols), r[key]) for r in rows])
        if self.removed:
            for ent in reversed(app.order):
                keys = self.removed.get(ent.name)
                if keys:
                    conn.executemany(f'DELETE FROM "{ent.name}" WHERE "{ent.id_field}" = ?', [(k,) for k in keys])


def execute(app: App, rows: Rows, calls: list[Call], seed: int = 0) -> Run:
    """Execute calls on ``rows`` once (see :class:`Workspace`); ChainFailed on any non-Success."""
    with Workspace(app, rows) as ws:
        return ws.run(calls, seed)


def _carry_back(app: App, s0: Rows, before: Rows, after: Rows) -> Delta:
    """Apply the solver's repairs (``before`` -> ``after``) to s0 and return them as a Delta, or raise ChainFailed.

    ``s0`` may share its row lists and rows with other states: the tables that change get
    fresh copies in ``s0`` before any of their rows is touched.
    """
    tables = [e for e in app.blueprint.entities if before.get(e.name, []) != after.get(e.name, [])]
    delta = Delta()
    if not tables:  # the solver left every table alone
        return delta
    for ent in tables:  # copy on write
        rows = s0.get(ent.name)
        if rows is not None:
            s0[ent.name] = [dict(r) for r in rows]
    ids = id_fields(app.blueprint)
    indexes: dict[str, dict[Any, dict[str, Any]]] = {}  # table -> key -> row of s0, built on first use

    def index_of(table: str) -> dict[Any, dict[str, Any]]:
        hit = indexes.get(table)
        if hit is None:
            key = ids.get(table)
            hit = indexes[table] = {} if key is None else {r[key]: r for r in s0.get(table, ())}
        return hit

    for ent in tables:
        key = ids[ent.name]
        b = {r[key]: r for r in before.get(ent.name, [])}
        a = {r[key]: r for r in after.get(ent.name, [])}
        own = index_of(ent.name)
        for k, row in a.items():
            old = b.get(k)
            if old is None:
                _carry_added(ent, k, row, s0, index_of, delta)
            elif row != old:
                _carry_changed(ent, own.get(k), row, old, delta)
        for k in b.keys() - a.keys():
            _carry_removed(ent, k, own.pop(k, None), s0, delta)
    return delta


def _carry_added(
    ent: Entity, k: Any, row: dict[str, Any], s0: Rows, index_of: Callable[[str], dict[Any, dict[str, Any]]], delta: Delta
) -> None:
    """A row the solver added: into s0 too, unless it refers to a row only the chain creates."""
    for name, ref in ref_fields(ent):
        v = row.get(name)
        if v is not None and v not in index_of(ref):
            raise ChainFailed(f"a needed {ent.name} row refers to a row the chain creates")
    new = dict(row)
    s0.setdefault(ent.name, []).append(new)
    index_of(ent.name)[k] = new
    delta.added.setdefault(ent.name, []).append(new)


def _carry_changed(ent: Entity, target: dict[str, Any] | None, row: dict[str, Any], old: dict[str, Any], delta: Delta) -> None:
    """A row the solver changed (``old`` -> ``row``): the same change on s0's ``target``, which must not differ from ``old``."""
    changed = {c for c in row if row[c] != old.get(c)}
    if not changed:
        return
    if target is None:
        raise ChainFailed(f"the chain's own {ent.name} row would need other values")
    for c in changed:
        if target.get(c) != old.get(c):
            raise ChainFailed(f"{ent.name}.{c} must differ before and after an earlier step")
        target[c] = row[c]
    delta.changed.setdefault(ent.name, []).append(target)


def _carry_removed(ent: Entity, k: Any, row: dict[str, Any] | None, s0: Rows, delta: Delta) -> None:
    """A row the solver removed: out of s0 too, unless the chain creates it (``row`` None: s0 has no such row)."""
    if row is None:
        raise ChainFailed(f"a {ent.name} row the chain creates would have to go")
    s0[ent.name] = [r for r in s0[ent.name] if r is not row]
    delta.removed.setdefault(ent.name, []).append(k)


def instantiate(
    app: App, steps: list[Step], world: Rows, seed: int, attempts: int = 4, pool: Rows | None = None
) -> tuple[Rows, list[Call], list[dict[str, Any]]]:
    """Arguments and s0 for ``steps``.

    Returns:
        (s0 rows, oracle calls, per step the bound aliases -> (table, key) of pre-existing rows).

    Raises:
        ChainFailed: no instantiation found; the message says why.
    """
    with Workspace(app, copy_rows(world)) as ws:
        return _instantiate(app, ws, steps, seed, attempts, pool)


def _instantiate(
    app: App, ws: Workspace, steps: list[Step], seed: int, attempts: int, pool: Rows | None
) -> tuple[Rows, list[Call], list[dict[str, Any]]]:
    s0 = ws.rows
    last_run: Run | None = None  # the accepted trial run of the steps so far (saves a replay)
    calls: list[Call] = []
    bound: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        last_error = "no attempt"
        # the same for every attempt: a failed attempt leaves the rows and the kept run as they were
        run = last_run if last_run is not None else ws.run(calls) if calls else Run([], ws.rows)
        created = created_rows(app, steps[:i], run.results)
        unnamed: list[str] | None = None  # the step's id filter parameters (found in the first attempt)
        for attempt in range(attempts):
            fixed, refs = _fixed_args(i, step, run, bound, created)
            if unnamed is None:
                unnamed = id_filters(app, step)
            for p in unnamed:
                fixed[p] = None
            fixed.update(same_actor(app, step, calls))
            for p, key in same_person(app, steps, i, bound, run.final, attempt).items():
                fixed.setdefault(p, key)  # a later goal of the request: on the first goal's person's rows (building/goals.py)
            for p in given_before(app, step, fixed, refs, calls):
                fixed[p] = None  # what the request already set on this row stays as it set it
            solver = Solver(app.blueprint, step.spec, app.order, app.now, seed * 131 + i * 17 + attempt)
            mode = "some" if step.spec.mode == "write" else "all"
            fx = solver.on_rows(run.final, fixed, mode, attempt, pool)
            if not solver.satisfy(fx, allowed_pre(app, step.spec.name)) or any(fx.args.get(k) != v for k, v in fixed.items()):
                last_error = f"step {i} ({step.spec.name}): pre-conditions not satisfiable here"
                continue
            trial = dict(s0)  # _carry_back copies the tables it changes
            try:
                delta = _carry_back(app, trial, run.final, fx.rows)
            except ChainFailed as exc:
                last_error = f"step {i} ({step.spec.name}): {exc}"
                continue
            call = oracle_call(step, fx, refs, created)
            try:
                trial_run = _trial_run(ws, trial, delta, calls, call, last_run, final=i + 1 < len(steps))
            except (ChainFailed, Exception) as exc:
                error = f"step {i} ({step.spec.name}): {exc}"
                if error == last_error:  # the same conflict twice: the plan itself is at fault
                    raise ChainFailed(error, step=i) from None
                last_error = error
                continue
            s0 = trial
            calls.append(call)
            last_run = trial_run
            bound.append(bound_rows(app, step, fx))
            break
        else:
            raise ChainFailed(last_error, step=i)
    return s0, calls, bound


def _fixed_args(
    i: int, step: Step, run: Run, bound: list[dict[str, Any]], created: dict[tuple[str, Any], Ref]
) -> tuple[dict[str, Any], dict[str, Ref]]:
    """Step ``i``'s arguments fixed by the earlier steps (their results, the rows they bound), and its refs."""
    fixed: dict[str, Any] = {}
    for p, ref in step.refs.items():
        value = resolve(ref, run.results)
        if value is MISSING:
            raise ChainFailed(f"step {i}: {where(ref)} to pass on")
        fixed[p] = value
    refs = dict(step.refs)
    for p, (j, alias) in step.pins.items():
        table, key = bound[j].get(alias, (None, None))
        if key is None:
            raise ChainFailed(f"step {i}: step {j} bound no {alias}")
        fixed[p] = key
        if (table, key) in created:  # a row this chain made: its id is only known at run time
            refs[p] = created[(table, key)]
    return fixed, refs


def _trial_run(ws: Workspace, trial: Rows, delta: Delta, calls: list[Call], call: Call, last_run: Run | None, final: bool) -> Run:
    """The chain so far plus ``call`` run on the ``trial`` s0 (``final``: the resulting rows are looked at)."""
    if delta or last_run is None or not ws.keeps(last_run):
        return ws.try_rows(trial, delta, [*calls, call], final=final)
    return ws.extend(last_run, call, final=final)  # s0 unchanged: the prefix would run as before, so only the new call runs
