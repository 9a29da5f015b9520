"""The sandboxed tool worker: runs untrusted custom-tool bodies, one call at a time (stdlib only).

Executed *inside* the sandbox as a script (``python -I -S tool_worker.py MEMORY CPU_TOTAL
OUTPUT TOOLKIT CHECKS WORKER``); never imported by the parent. ``TOOLKIT`` and ``CHECKS`` are
the paths of ``envsynth/runtime/toolkit.py`` and ``envsynth/blueprint/codecheck.py`` (both
dependency-free), loaded by path so the code gets the very same ``Context`` and
``ToolError`` as trusted tools, and is checked again here. ``WORKER`` is
``envsynth/sandbox/worker.py``, whose process limits and pipe setup this worker shares. One JSON object per line:

parent -> worker::

    {"op": "call", "id": 7, "tool": "restock_book", "code": "...", "check": true,
     "names": ["book_id", "copies", "book"], "values": {...}, "now": "2025-...T12:00:00",
     "rng": [3, [625 ints], null], "bools": {...}, "cpu": 2.0,
     "schema": ["CREATE TABLE ...", ...],
     "tables": {"book": {"columns": [...], "rows": [[rowid, v1, v2, ...], ...]}}}

worker -> parent::

    {"op": "hello"}
    {"op": "done", "id": 7, "status": "ok", "result": ..., "draws": 1,
     "changes": {"book": {"insert": [[rowid, ...]], "update": [[rowid, ...]], "delete": [rowid]}}}
    {"op": "done", "id": 7, "status": "tool_error", "message": "...", "code": "..." | null, "draws": 0}
    {"op": "done", "id": 7, "status": "error", "error": "traceback text", "recycle": true}

Every call gets a FRESH in-memory SQLite database built from the schema and rows sent;
the row changes are the difference between the rows sent and the rows after the call,
with values in the column order the parent sent. ``draws`` counts the 32-bit words the
code drew from ``ctx.rng`` (which continues the parent's random stream), so the parent
advances its own generator by as much and ids stay identical to a trusted run.

The worker is deterministic whatever path the code takes (the static check is only lint):
before any module is loaded the C ``_datetime`` and ``_uuid`` are kept out, so
``datetime`` and ``uuid`` are their pure-Python versions, which read the clock through
``time``; for every call :func:`_set_world` makes ``time``'s clocks give the episode
clock and ``os.urandom``, ``random`` (module functions, new ``Random()`` instances,
``SystemRandom``), and so ``secrets`` and ``uuid``, draw from a generator seeded with
the episode's random state. Under bubblewrap the kernel's randomness is zeros too
(``getrandom`` fails, ``/dev/urandom`` reads ``/dev/zero``), which covers the hash seed,
SQLite's ``random()`` and a raw ``_random.Random()``.
"""

import sys

sys.modules["_datetime"] = None  # pure-Python datetime: now()/today() go through time.time
sys.modules["_uuid"] = None  # pure-Python uuid1: time.time_ns and random, not libuuid

import ast  # noqa: E402
import datetime  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import sqlite3  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

MAX_ANSWER = (4 << 20) - 4096  # the parent drops lines over 4 MB
_SQLITE_ATTACH, _SQLITE_DETACH, _SQLITE_DENY, _SQLITE_OK = 24, 25, 1, 0


class CPUTimeExceeded(BaseException):
    """The call used more CPU time than allowed."""


class CountingRandom(random.Random):
    """A Random that counts the 32-bit words it draws (``random()`` takes two)."""

    def __init__(self, state):
        super().__init__(0)
        self.setstate(state)
        self.words = 0

    def random(self):
        self.words += 2
        return super().random()

    def getrandbits(self, k):
        self.words += (k + 31) // 32
        return super().getrandbits(k)


_WORLD = {"now": 0.0, "rng": random.Random(0)}
_REAL_RANDOM_SEED = random.Random.seed


def _world_random(self, a=None, version=2):
    """``Random.seed`` where no seed means the episode's generator, not the host's entropy."""
    if a is None:
        a = _WORLD["rng"].getrandbits(64)
    _REAL_RANDOM_SEED(self, a, version)


def _urandom(n):
    return _WORLD["rng"].randbytes(n)


def _clock(*_args):
    return _WORLD["now"]


def _clock_ns(*_args):
    return int(_WORLD["now"] * 1_000_000_000)


def _timer(*_args):
    return 0.0


def _timer_ns(*_args):
    return 0


def _install_world():
    """Point every clock of ``time`` and every entropy source of ``os`` and ``random`` at ``_WORLD``."""
    real = {name: getattr(time, name) for name in ("localtime", "gmtime", "asctime", "strftime")}

    def localtime(secs=None):
        return real["localtime"](_WORLD["now"] if secs is None else secs)

    def gmtime(secs=None):
        return real["gmtime"](_WORLD["now"] if secs is None else secs)

    def asctime(t=None):
        return real["asctime"](gmtime() if t is None else t)

    def strftime(fmt, t=None):
        return real["strftime"](fmt, gmtime() if t is None else t)

    def ctime(secs=None):
        return real["asctime"](gmtime(secs))

    for name in ("time", "clock_gettime"):
        setattr(time, name, _clock)
    for name in ("time_ns", "clock_gettime_ns"):
        setattr(time, name, _clock_ns)
    for name in ("monotonic", "perf_counter", "process_time", "thread_time"):
        setattr(time, name, _timer)
        setattr(time, name + "_ns", _timer_ns)
    time.localtime, time.gmtime, time.asctime, time.strftime, time.ctime = localtime, gmtime, asctime, strftime, ctime
    threading = sys.modules.get("threading")
    if threading is not None:  # imported by worker.py before this: its private clock too
        threading._time = _timer
    os.urandom = random._urandom = _urandom
    sys.modules["posix"].urandom = _urandom
    random.Random.seed = _world_random


def _set_world(msg):
    """The clock and the entropy of this call: the episode's clock, a generator seeded with its random state."""
    now = datetime.datetime.fromisoformat(str(msg["now"]))
    if now.tzinfo is None:
        now = now.replace(tzinfo=datetime.UTC)
    _WORLD["now"] = now.timestamp()
    _WORLD["rng"] = rng = random.Random(json.dumps([msg["now"], msg["rng"]]))
    random.seed(rng.getrandbits(64))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _guarded_import(allowed, real_import):
    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name.split(".", 1)[0] not in allowed:
            raise ImportError(f"import of {name!r} is not allowed")
        return real_import(name, globals, locals, fromlist, level)

    return guarded


def _no_attach(action, *args):
    return _SQLITE_DENY if action in (_SQLITE_ATTACH, _SQLITE_DETACH) else _SQLITE_OK


def _q(name):
    return '"' + name.replace('"', '""') + '"'


def _read(db, table, columns):
    cols = ", ".join(_q(c) for c in columns)
    return {r[0]: tuple(r[1:]) for r in db.execute(f"SELECT rowid, {cols} FROM {_q(table)}")}


def _same(a, b):
    return len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))


def _changes(db, tables, before):
    out = {}
    for table, spec in tables.items():
        after = _read(db, table, spec["columns"])
        old = before[table]
        entry = {}
        inserted = [[rid, *after[rid]] for rid in sorted(after) if rid not in old]
        updated = [[rid, *after[rid]] for rid in sorted(after) if rid in old and not _same(old[rid], after[rid])]
        deleted = [rid for rid in sorted(old) if rid not in after]
        for key, rows in (("insert", inserted), ("update", updated), ("delete", deleted)):
            if rows:
                entry[key] = rows
        if entry:
            out[table] = entry
    return out


def _schema(db):
    sql = "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
    return [r[0] for r in db.execute(sql)]


_CACHE_SIZE = 256
_checked = {}  # code -> problems (the check is a pure function of the text)
_compiled = {}  # (tool, names, code) -> code object defining _tool
_templates = {}  # schema statements -> an empty database holding them, serialized


def _cached(cache, key, make):
    if key not in cache:
        if len(cache) >= _CACHE_SIZE:
            cache.clear()
        cache[key] = make()
    return cache[key]


def _compile(tool, names, code):
    filename = f"<tool {tool}>"
    source = "def _tool(db, ctx, " + ", ".join(names) + "):\n" + textwrap.indent(textwrap.dedent(code).rstrip() or "pass", "    ")
    tree = ast.parse(source + "\n", filename)
    ast.increment_lineno(tree, -1)  # body line 1 is line 1
    return compile(tree, filename, "exec")


def _template(schema):
    db = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for sql in schema:
            db.execute(sql)
        return db.serialize()
    finally:
        db.close()


def run_call(msg, toolkit, checks, guard):
    """One call: a fresh database, the code compiled as a function body, the answer as a dict."""
    tool = str(msg.get("tool", "tool"))
    code = msg["code"]
    if msg.get("check", True):
        problems = _cached(_checked, code, lambda: checks.check_tool_code(code))
        if problems:
            return {"status": "error", "error": "untrusted code refused: " + "; ".join(problems[:5])}
    db = sqlite3.connect(":memory:", isolation_level=None)  # fresh for every call
    try:
        return _run(db, msg, tool, code, toolkit, guard)
    finally:
        db.close()


def _run(db, msg, tool, code, toolkit, guard):
    tables = msg["tables"]
    schema = tuple(msg["schema"])
    db.deserialize(_cached(_templates, schema, lambda: _template(schema)))  # a new connection, never a reused one
    db.execute("BEGIN")
    for table, spec in tables.items():
        cols = spec["columns"]
        marks = ", ".join("?" for _ in range(len(cols) + 1))
        names = ", ".join(["rowid", *(_q(c) for c in cols)])
        db.executemany(f"INSERT INTO {_q(table)} ({names}) VALUES ({marks})", spec["rows"])
    db.execute("COMMIT")
    db.execute("PRAGMA foreign_keys = ON")
    db.execute("PRAGMA temp_store = MEMORY")  # /tmp is read-only in the tool worker
    before = {t: _read(db, t, spec["columns"]) for t, spec in tables.items()}
    loaded = db.total_changes
    if msg.get("check", True):
        db.set_authorizer(_no_attach)
    ctx = toolkit.Context(db, msg["now"], 0, {k: tuple(v) for k, v in msg.get("bools", {}).items()})
    rng = CountingRandom((msg["rng"][0], tuple(msg["rng"][1]), msg["rng"][2]))
    ctx.rng = rng
    names = list(msg["names"])
    builtins = dict(__builtins__.__dict__ if hasattr(__builtins__, "__dict__") else __builtins__)
    if guard is not None:
        builtins["__import__"] = guard
    namespace = {"__name__": "tool", "__builtins__": builtins, "ToolError": toolkit.ToolError, "like_pattern": toolkit.like_pattern}
    exec(_cached(_compiled, (tool, tuple(names), code), lambda: _compile(tool, names, code)), namespace)
    values = msg["values"]
    try:
        result = namespace["_tool"](db, ctx, *(values.get(n) for n in names))
    except toolkit.ToolError as exc:
        return {
            "status": "tool_error",
            "message": str(exc.message),
            "code": exc.code if isinstance(exc.code, str) else None,
            "draws": rng.words,
        }
    if _schema(db) != list(schema):
        return {"status": "error", "error": "the code changed the database schema", "draws": rng.words}
    try:
        text = json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        return {"status": "error", "error": f"the result is not JSON data: {exc}", "draws": rng.words}
    if len(text) > int(msg.get("max_result", 1 << 20)):
        return {"status": "error", "error": f"the result is too large ({len(text)} characters)", "draws": rng.words}
    changes = _changes(db, tables, before) if db.total_changes != loaded else {}
    return {"status": "ok", "result": json.loads(text), "changes": changes, "draws": rng.words}


def _main():
    memory, cpu_total = int(sys.argv[1]), int(sys.argv[2])  # argv[3] (output) is unused: results are capped per call
    toolkit = _load("envsynth_toolkit", sys.argv[4])
    checks = _load("envsynth_checks", sys.argv[5])
    worker = _load("envsynth_sandbox_worker", sys.argv[6])  # the code-acting worker: the same limits and pipes
    worker.confine(memory, cpu_total)
    rfile, wfile = worker.protocol_pipes()
    _install_world()

    def send(msg):
        wfile.write(json.dumps(msg, ensure_ascii=False) + "\n")
        wfile.flush()

    def on_xcpu(signum, frame):
        raise CPUTimeExceeded("the call used more CPU time than allowed")

    signal.signal(signal.SIGXCPU, on_xcpu)
    real_import = __builtins__.__import__ if hasattr(__builtins__, "__import__") else __builtins__["__import__"]
    guard = _guarded_import(checks.ALLOWED_MODULES, real_import)
    send({"op": "hello"})
    while True:
        line = rfile.readline()
        if not line:
            os._exit(0)
        msg = json.loads(line)
        if msg.get("op") != "call":
            continue
        used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
        soft = min(cpu_total, int(used + float(msg.get("cpu", 2))) + 1)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_total))
        try:
            _set_world(msg)
            answer = run_call(msg, toolkit, checks, guard if msg.get("check", True) else None)
        except BaseException as exc:  # the code's failure, reported back; the parent replaces this worker
            try:
                error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            except BaseException:
                error = type(exc).__name__
            if len(error) > 4000:
                error = error[:1000] + "\n...\n" + error[-3000:]
            answer = {"status": "error", "error": error}
        if answer["status"] == "error":
            answer["recycle"] = True
        answer.update(op="done", id=msg.get("id"))
        try:
            text = json.dumps(answer, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            text = json.dumps(
                {"op": "done", "id": msg.get("id"), "status": "error", "error": f"unencodable answer: {exc}", "recycle": True}
            )
        if len(text) > MAX_ANSWER:
            text = json.dumps({"op": "done", "id": msg.get("id"), "status": "error", "error": "the answer is too large", "recycle": True})
        wfile.write(text + "\n")
        wfile.flush()


if __name__ == "__main__":
    _main()
