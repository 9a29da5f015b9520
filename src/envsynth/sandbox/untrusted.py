"""Untrusted custom tools: their code runs in a warm sandboxed worker, never in this process.

A generated tool whose spec is ``untrusted`` does its argument handling, bindings and
pre-condition checks here, then calls :func:`run_sandboxed` (``run_sandboxed(ctx, name,
code, values, ...)``, imported by the generated module):

1. the episode's tables are read (schema and every row with its rowid: SQL reads see the
   episode's uncommitted changes, ``serialize()`` would not) and sent, with the code, the
   values, the clock and the state of ``ctx.rng``, to a worker of the process-wide
   :func:`tool_pool` as one JSON line;
2. the worker (``tool_worker.py``) builds a fresh in-memory database, checks the code
   again, runs it and answers JSON only: the result, a ToolError, or an error, plus the
   row changes per table;
3. here the changes are validated (tables and columns of this schema, rowids that exist or
   not, values that are JSON scalars, only what the tool declares it writes, creates or
   deletes) and applied with parameterized SQL on the episode's connection, so this
   database's constraints apply; ``ctx.rng`` is advanced by the words the code drew.

A rejection raises :class:`~envsynth.runtime.toolkit.ToolError`; anything else (timeout,
crash, error in the code, invalid answer) raises :class:`SandboxedToolFailure`, a
RuntimeError, which an episode records as an Unexpected Failure (and rolls back). A
worker that timed out, crashed or failed is killed and replaced.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sqlite3
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.errors import SandboxError
from envsynth.sandbox.launcher import CPU_GRACE, WORKER_SOURCE, Limits, Mode, Worker, WorkerCPUExceeded, WorkerDied, WorkerTimeout
from envsynth.sandbox.pool import WorkerPool

if TYPE_CHECKING:
    from envsynth.runtime.toolkit import Context

TOOL_WORKER = Path(__file__).with_name("tool_worker.py")
_MODULES = (Path(__file__).parents[1] / "runtime" / "toolkit.py", Path(__file__).parents[1] / "blueprint" / "codecheck.py", WORKER_SOURCE)
TOOL_LIMITS = Limits(wall=5.0, cpu=2.0, memory=512 << 20, output=1 << 20, cpu_total=600, tmp=0)
"""Per call: 5 s wall, 2 s CPU, results up to 1 M characters; per worker 512 MB address space, /tmp read-only."""
MAX_DRAWS = 1_000_000
_IDS = itertools.count(1)


class SandboxedToolFailure(SandboxError):
    """An untrusted tool call failed in or with its sandbox (an Unexpected Failure)."""


class ToolWorkerPool(WorkerPool):
    """Warm tool workers, each serving ONE episode (its :class:`Context`) for as long as it lives.

    An episode's first untrusted call takes a fresh warm worker; its later calls reuse it
    (paused with SIGSTOP between calls, so nothing the code left running uses CPU). A
    worker never serves another episode: whatever a tool's code changed in its worker
    (patched modules, builtins, classes) cannot reach another episode's calls. The worker
    is killed when its episode's context is collected, when more than ``episodes``
    episodes hold one (the least recently used is let go; its episode gets a fresh worker
    on its next call), and after a call that timed out, crashed or failed.
    """

    def __init__(
        self, size: int = 1, limits: Limits | None = None, require_bwrap: bool = False, mode: Mode | None = None, episodes: int = 8
    ) -> None:
        super().__init__(size=size, limits=limits or TOOL_LIMITS, require_bwrap=require_bwrap, mode=mode)
        self.episodes = episodes
        self._bound: OrderedDict[int, tuple[weakref.ref[Any], Worker]] = OrderedDict()
        self._retired: list[tuple[int, Worker]] = []  # workers of collected episodes, killed on the next call

    def _spawn(self) -> Worker:
        return Worker(self.mode, self.limits, script=TOOL_WORKER, modules=_MODULES, deterministic=True)

    def worker_for(self, ctx: Context) -> Worker:
        """The worker of this episode: the one its earlier calls used, or a fresh one."""
        self._reap()
        key = id(ctx)
        with self._lock:
            entry = self._bound.get(key)
            if entry is not None and entry[0]() is ctx and entry[1].alive():
                self._bound.move_to_end(key)
                return entry[1]
        if entry is not None:
            self.retire(ctx, entry[1])
        worker = self.acquire()
        ref = weakref.ref(ctx, lambda _ref, k=key, w=worker: self._collected(k, w))
        with self._lock:
            self._bound[key] = (ref, worker)
            evicted = [self._bound.popitem(last=False)[1][1] for _ in range(len(self._bound) - self.episodes)]
        for old in evicted:
            old.kill()
        return worker

    def give_back(self, worker: Worker) -> None:
        """Return a worker that ran no code (taken with :meth:`acquire`) to the warm ones."""
        with self._lock:
            if not self._closed and worker.alive():
                self._idle.append(worker)
                self._lock.notify_all()
                return
        worker.kill()

    def retire(self, ctx: Context, worker: Worker) -> None:
        """Kill an episode's worker (after a failure): its next call gets a fresh one."""
        with self._lock:
            entry = self._bound.get(id(ctx))
            if entry is not None and entry[1] is worker:
                del self._bound[id(ctx)]
        worker.kill()

    def _collected(self, key: int, worker: Worker) -> None:
        # A weakref callback (maybe inside the garbage collector): no lock, no waiting here.
        self._retired.append((key, worker))

    def _reap(self) -> None:
        """Kill the workers of collected episodes."""
        dead: list[Worker] = []
        with self._lock:
            while self._retired:
                key, worker = self._retired.pop()
                entry = self._bound.get(key)
                if entry is not None and entry[1] is worker:
                    del self._bound[key]
                dead.append(worker)
        for worker in dead:
            worker.kill()

    @property
    def bound(self) -> int:
        """How many live episodes hold a worker now."""
        self._reap()
        with self._lock:
            return len(self._bound)

    def close(self) -> None:
        """Kill every worker, warm or bound, and stop refilling."""
        super().close()
        with self._lock:
            bound, self._bound = list(self._bound.values()), OrderedDict()
        for _, worker in bound:
            worker.kill()
        self._reap()


_POOL: ToolWorkerPool | None = None
_POOL_PID = 0
_POOL_LOCK = threading.Lock()


def tool_pool() -> ToolWorkerPool:
    """The process-wide tool pool (two warm workers, :data:`TOOL_LIMITS`), started on first use, closed at exit."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        if _POOL is None or _POOL._closed or os.getpid() != _POOL_PID:  # a forked child starts its own
            _POOL, _POOL_PID = ToolWorkerPool(size=2), os.getpid()
            atexit.register(_POOL.close)
        return _POOL


def set_tool_pool(pool: ToolWorkerPool | None) -> ToolWorkerPool | None:
    """Install ``pool`` as the process-wide tool pool (None: start a default one on next use); returns the previous one."""
    global _POOL, _POOL_PID
    with _POOL_LOCK:
        previous, _POOL, _POOL_PID = _POOL, pool, os.getpid()
    return previous


# --- the episode side -------------------------------------------------------------------


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_COLUMNS: dict[tuple[str, str], list[str]] = {}  # (table, CREATE statement) -> column names


class _Snapshot:
    """The episode's schema and rows as sent to the worker (kept to validate the answer)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        master = db.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
        self.schema = [sql for _, _, sql in master]
        self.order = [name for kind, name, _ in master if kind == "table"]
        self.columns: dict[str, list[str]] = {}
        self.rows: dict[str, dict[int, tuple[Any, ...]]] = {}
        sql = {name: text for kind, name, text in master if kind == "table"}
        for table in self.order:
            key = (table, sql[table])
            if key not in _COLUMNS:
                _COLUMNS[key] = [r[1] for r in db.execute(f"PRAGMA table_info({_q(table)})")]
            cols = self.columns[table] = _COLUMNS[key]
            select = ", ".join(_q(c) for c in cols)
            rows = {r[0]: tuple(r[1:]) for r in db.execute(f"SELECT rowid, {select} FROM {_q(table)}")}
            if any(isinstance(v, bytes) for row in rows.values() for v in row):
                raise SandboxedToolFailure(f"table {table!r} holds BLOB values, which untrusted tools cannot be sent")
            self.rows[table] = rows

    def message(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "tables": {t: {"columns": self.columns[t], "rows": [[rid, *row] for rid, row in self.rows[t].items()]} for t in self.order},
        }


def run_sandboxed(
    ctx: Context,
    tool: str,
    code: str,
    values: dict[str, Any],
    *,
    writes: dict[str, list[str]] | None = None,
    creates: list[str] | None = None,
    deletes: list[str] | None = None,
    pool: ToolWorkerPool | None = None,
    check: bool = True,
) -> Any:
    """Run an untrusted tool body in a sandboxed worker and apply its row changes to ``ctx.db``.

    Args:
        ctx: the episode context (its database, clock, random stream and bool columns).
        tool: the tool's name (for messages).
        code: the body of the tool function; it sees ``db``, ``ctx``, ``ToolError``,
            ``like_pattern`` and one variable per entry of ``values``.
        values: the parameters and bound rows (JSON data).
        writes: entity -> fields the tool may update (None: no check).
        creates: entities the tool may insert into.
        deletes: entities the tool may delete from.
        pool: the worker pool (default: :func:`tool_pool`).
        check: check the code again in the worker (tests of the sandbox itself turn it off).

    Returns:
        The code's return value, decoded from JSON.

    Raises:
        ToolError: the code rejected the call.
        SandboxedToolFailure: timeout, crash, error in the code or an invalid answer.
    """
    from envsynth.runtime.toolkit import ToolError

    pool = pool or tool_pool()
    snap = _Snapshot(ctx.db)
    call_id = next(_IDS)
    version, words, gauss = ctx.rng.getstate()
    msg = {
        "op": "call",
        "id": call_id,
        "tool": tool,
        "code": code,
        "check": check,
        "names": list(values),
        "values": values,
        "now": ctx.now(),
        "rng": [version, list(words), gauss],
        "bools": {k: list(v) for k, v in ctx.bools.items()},
        "cpu": pool.limits.cpu,
        "max_result": pool.limits.output,
        **snap.message(),
    }
    answer = _exchange(pool, ctx, msg, tool)
    if answer.get("id") != call_id:
        raise SandboxedToolFailure(f"{tool}: the sandbox answered another call")
    status = answer.get("status")
    if status in ("ok", "tool_error"):
        _advance(ctx, answer.get("draws"), tool)
    if status == "tool_error":
        message, code_ = answer.get("message"), answer.get("code")
        if not isinstance(message, str) or not (code_ is None or isinstance(code_, str)):
            raise SandboxedToolFailure(f"{tool}: invalid rejection from the sandbox")
        raise ToolError(message, code=code_)
    if status != "ok":
        raise SandboxedToolFailure(f"{tool}: the untrusted code failed in the sandbox:\n{str(answer.get('error'))[:4000]}")
    apply_changes(ctx.db, snap, answer.get("changes"), tool, writes=writes, creates=creates, deletes=deletes)
    return answer.get("result")


def _exchange(pool: ToolWorkerPool, ctx: Context, msg: dict[str, Any], tool: str) -> dict[str, Any]:
    limits = pool.limits
    try:
        worker = pool.worker_for(ctx)
    except (WorkerDied, RuntimeError) as exc:
        raise SandboxedToolFailure(f"{tool}: no sandbox worker ({exc})") from None
    deadline = time.monotonic() + limits.wall
    try:
        worker.resume()
        cpu_limit = worker.cpu_seconds() + limits.cpu + CPU_GRACE
        worker.send(msg, deadline)
        answer = worker.receive(deadline, cpu_limit)
    except WorkerTimeout:
        pool.retire(ctx, worker)
        raise SandboxedToolFailure(
            f"{tool}: the untrusted code ran past the {limits.wall:g} s wall-time limit; the worker was replaced"
        ) from None
    except WorkerCPUExceeded:
        pool.retire(ctx, worker)
        raise SandboxedToolFailure(
            f"{tool}: the untrusted code used more than {limits.cpu:g} s of CPU time (its threads included); the worker was replaced"
        ) from None
    except WorkerDied as exc:
        pool.retire(ctx, worker)
        raise SandboxedToolFailure(f"{tool}: the sandbox worker died ({exc}); it was replaced") from None
    except BaseException:
        pool.retire(ctx, worker)
        raise
    if answer.get("recycle") or answer.get("status") not in ("ok", "tool_error"):
        pool.retire(ctx, worker)
    else:
        worker.pause()  # until this episode's next call: threads the code left behind do not run
    return answer


def _advance(ctx: Context, draws: Any, tool: str) -> None:
    if not isinstance(draws, int) or isinstance(draws, bool) or not 0 <= draws <= MAX_DRAWS:
        raise SandboxedToolFailure(f"{tool}: invalid random draw count from the sandbox")
    bits = ctx.rng.getrandbits
    for _ in range(draws):
        bits(32)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, str))


def apply_changes(
    db: sqlite3.Connection,
    snap: _Snapshot,
    changes: Any,
    tool: str,
    *,
    writes: dict[str, list[str]] | None = None,
    creates: list[str] | None = None,
    deletes: list[str] | None = None,
) -> None:
    """Validate the worker's row changes against the snapshot sent and apply them to ``db``.

    Inserts go first (tables in creation order, parents before children), then updates
    (only the columns that changed), then deletes (children first). Every statement is
    parameterized SQL over names of this database's own schema.
    """
    if changes is None:
        changes = {}
    if not isinstance(changes, dict):
        raise SandboxedToolFailure(f"{tool}: invalid changes from the sandbox")
    checked = writes is not None or creates is not None or deletes is not None
    plan: dict[str, dict[str, list[Any]]] = {}
    for table, entry in changes.items():
        rows = _table_changes(snap, table, entry, tool)
        if checked:
            _within_scope(tool, table, snap, rows, writes or {}, creates or [], deletes or [])
        plan[table] = rows
    _apply_plan(db, snap, plan)


def _table_changes(snap: _Snapshot, table: Any, entry: Any, tool: str) -> dict[str, list[Any]]:
    """One table's reported changes, validated: a known table, rows of scalars of its width, rowids that exist (or not, for inserts)."""
    if table not in snap.columns or not isinstance(entry, dict) or set(entry) - {"insert", "update", "delete"}:
        raise SandboxedToolFailure(f"{tool}: the sandbox reported changes to an unknown table {str(table)[:80]!r}")
    width = len(snap.columns[table]) + 1
    old = snap.rows[table]
    rows: dict[str, list[Any]] = {"insert": [], "update": [], "delete": []}
    for op in ("insert", "update"):
        for row in entry.get(op, []):
            if not isinstance(row, list) or len(row) != width or not all(_scalar(v) for v in row):
                raise SandboxedToolFailure(f"{tool}: invalid {op} row for {table!r} from the sandbox")
            rid = row[0]
            if not isinstance(rid, int) or isinstance(rid, bool) or (rid in old) != (op == "update"):
                raise SandboxedToolFailure(f"{tool}: invalid rowid in an {op} of {table!r} from the sandbox")
            rows[op].append(row)
    for rid in entry.get("delete", []):
        if not isinstance(rid, int) or isinstance(rid, bool) or rid not in old:
            raise SandboxedToolFailure(f"{tool}: invalid rowid in a delete of {table!r} from the sandbox")
        rows["delete"].append(rid)
    return rows


def _apply_plan(db: sqlite3.Connection, snap: _Snapshot, plan: dict[str, dict[str, list[Any]]]) -> None:
    """Inserts (parents first), updates of the changed columns only, deletes (children first): parameterized SQL."""
    for table in snap.order:
        cols = snap.columns[table]
        for row in plan.get(table, {}).get("insert", []):
            names = ", ".join(["rowid", *(_q(c) for c in cols)])
            db.execute(f"INSERT INTO {_q(table)} ({names}) VALUES ({', '.join('?' * len(row))})", row)
    for table in snap.order:
        cols = snap.columns[table]
        for row in plan.get(table, {}).get("update", []):
            before = snap.rows[table][row[0]]
            changed = [(c, v) for c, v, b in zip(cols, row[1:], before) if not (type(v) is type(b) and v == b)]
            if changed:
                sets = ", ".join(f"{_q(c)} = ?" for c, _ in changed)
                db.execute(f"UPDATE {_q(table)} SET {sets} WHERE rowid = ?", [*(v for _, v in changed), row[0]])
    for table in reversed(snap.order):
        for rid in plan.get(table, {}).get("delete", []):
            db.execute(f"DELETE FROM {_q(table)} WHERE rowid = ?", (rid,))


def _within_scope(
    tool: str,
    table: str,
    snap: _Snapshot,
    rows: dict[str, list[Any]],
    writes: dict[str, list[str]],
    creates: list[str],
    deletes: list[str],
) -> None:
    if rows["insert"] and table not in creates:
        raise SandboxedToolFailure(f"{tool}: the code inserted {table} rows but does not declare creates: [{table}]")
    if rows["delete"] and table not in deletes:
        raise SandboxedToolFailure(f"{tool}: the code deleted {table} rows but does not declare deletes: [{table}]")
    allowed = set(writes.get(table, []))
    cols = snap.columns[table]
    for row in rows["update"]:
        before = snap.rows[table][row[0]]
        bad = [c for c, v, b in zip(cols, row[1:], before) if not (type(v) is type(b) and v == b) and c not in allowed]
        if bad:
            raise SandboxedToolFailure(f"{tool}: the code changed {table}.{bad[0]}, which it does not declare in writes")


__all__ = [
    "TOOL_LIMITS",
    "SandboxedToolFailure",
    "ToolWorkerPool",
    "apply_changes",
    "run_sandboxed",
    "set_tool_pool",
    "tool_pool",
]
