"""Cold episodes: oracle replay + evaluation when no episode hits a pool or a cache (issue 16).

Every episode of every pass is a task's first use: the corpus is loaded with
``state_cache=0``, which keeps no state bytes and no idle pooled connection (checked after
every pass), so each episode gets its state bytes, opens a fresh connection, replays the
oracle through ``TaskEpisode.call``, is scored by ``finish`` and closes its connection.

Rates are episodes per second of this process's CPU time (one core; the machine is shared,
so wall time is also kept but mostly measures the neighbours), best of the passes.

- ``speed`` (default): episodes per second over repeated passes of the whole corpus, the
  bare-SQLite floor of the same episodes (connect, deserialize the state bytes, run the SQL
  statements the tools ran, read the tables the expected effects name and compare them with
  the rows a correct run leaves, close) and the split of a cold episode into its phases; and
  a paired pass, each task's episode right before its floor, both timed: the ratio of their
  sums (``paired_ratios``) holds on a busy machine, where two passes minutes apart do not.
- ``memory``: RSS of 2,000 live episodes (started, oracle replayed, not finished) beyond
  their states' bytes, RSS once they are finished (before and after glibc's ``malloc_trim``,
  which shows whether the freed memory is free or still held), then RSS after each of 10
  passes over the corpus (freed episodes must give their memory back: no growth).

``--against SRC`` runs the speed mode alternately on another checkout's ``src`` (the code
before a change) and on this one, ``--rounds`` times, in fresh processes, and prints both.

Usage (from the repository root, in the project venv):
    .venv/bin/python benchmarks/bench_cold.py --json benchmarks/results/cold.json
    .venv/bin/python benchmarks/bench_cold.py --against /tmp/before/src --rounds 3 --json OUT
    .venv/bin/python benchmarks/bench_cold.py --mode memory --json OUT

The corpus (8 catalogue apps x 250 tasks, S=2, D=4, seed 0) is built on first use into
``--corpus`` (default /tmp/envsynth-bench/cold-c4000) with ``envsynth build``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_CORPUS = Path("/tmp/envsynth-bench/cold-c4000")
BUILD = ["-A", "8", "-T", "250", "-S", "2", "-D", "4", "--seed", "0"]
SKIP = ("SAVEPOINT", "RELEASE", "ROLLBACK", "BEGIN", "COMMIT", "PRAGMA", "CREATE", "--")


def ensure_corpus(path: Path) -> None:
    """Build the benchmark corpus into ``path`` unless it is there already."""
    if (path / "corpus.json").is_file():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "envsynth.cli", "build", str(path), *BUILD], check=True, stdout=subprocess.DEVNULL)


EXTRA_READS: dict[str, list[str]] = {}
"""Task id -> read tools called with no arguments before its oracle (``--extra-reads``)."""


def plan_extra_reads(corpus: Any, tasks: list[Any], n: int) -> None:
    """Give each task ``n`` extra read calls: its visible read tools that need no argument (lists and
    searches), in turn; a task without one gets none."""
    EXTRA_READS.clear()
    for t in tasks if n else ():
        specs = corpus.apps[t.app].spec_by_name
        free = [name for name in t.visible_tools if specs[name].mode == "read" and not any(p.required for p in specs[name].params)]
        if free:
            EXTRA_READS[t.id] = [free[i % len(free)] for i in range(n)]


def replay(ep: Any, task: Any) -> Any:
    """The task's extra reads, then the oracle's calls on ``ep`` (refs filled from earlier results); the answer it gives."""
    from envsynth.runtime.answerpath import answer_in

    for tool in EXTRA_READS.get(task.id, ()):
        ep.call(tool, {})
    results: list[Any] = []
    for c in task.oracle:
        args = dict(c.args)
        for p, ref in c.refs.items():
            args[p] = results[ref.step][ref.field]
        results.append(ep.call(c.tool, args).data)
    return answer_in(results[task.answer_step], task.answer_field) if task.answer_step is not None else None


def rss_kb() -> int:
    """Resident set size of this process, in KiB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def malloc_trim() -> bool:
    """Ask glibc to return its free heap pages to the system (what it keeps after a peak); False off glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        return False
    return True


def check_cold(corpus: Any) -> None:
    """Fail unless the corpus kept no state and no idle connection (every episode was cold)."""
    pool = getattr(corpus, "_pool", None)
    states = getattr(corpus, "_states", {})
    if (pool is not None and pool.idle) or len(states):
        raise SystemExit(f"not cold: {pool.idle if pool else 0} idle connections, {len(states)} cached states")


def cold_pass(corpus: Any, tasks: list[Any]) -> tuple[float, float]:
    """One pass over ``tasks``, every episode cold; episodes per second of CPU time and of wall time."""
    t0, c0 = time.perf_counter(), time.process_time()
    for t in tasks:
        ep = corpus.start(t, seed=1)
        reward = ep.finish(replay(ep, t))
        if not reward.passed:
            raise SystemExit(f"oracle failed on {t.id}: {reward.feedback}")
    c1, t1 = time.process_time(), time.perf_counter()
    check_cold(corpus)
    return len(tasks) / (c1 - c0), len(tasks) / (t1 - t0)


# -- the bare-SQLite floor -----------------------------------------------------------


def floor_inputs(corpus: Any, tasks: list[Any]) -> list[tuple[bytes, list[str], list[str], list[list[tuple[Any, ...]]]]]:
    """Per task: its state bytes, the SQL the tools ran (captured from an oracle replay), the reads of the
    expected tables and what they return after a correct run."""
    out = []
    for t in tasks:
        app = corpus.apps[t.app]
        data = corpus.state_bytes(t)
        ep = app.episode(data, seed=1)
        statements: list[str] = []
        ep.db.set_trace_callback(statements.append)
        replay(ep, t)
        ep.close()
        tools_sql = [s for s in statements if not s.lstrip().upper().startswith(SKIP)]
        reads = [f'SELECT * FROM "{table}"' for table in sorted(t.expected_effects)]
        out.append((data, tools_sql, reads, floor_episode(data, tools_sql, reads, None)))
    return out


def floor_episode(data: bytes, tools_sql: list[str], reads: list[str], expected: list[list[tuple[Any, ...]]] | None) -> Any:
    """Connect, deserialize, the tools' statements, the reads, compare, close."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.deserialize(data)
    for sql in tools_sql:
        conn.execute(sql).fetchall()
    got = [conn.execute(sql).fetchall() for sql in reads]
    conn.close()
    if expected is None:
        return got
    if got != expected:
        raise SystemExit("the floor replay differs from its first run")
    return None


def floor_pass(inputs: list[Any]) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    for data, tools_sql, reads, expected in inputs:
        floor_episode(data, tools_sql, reads, expected)
    c1, t1 = time.process_time(), time.perf_counter()
    return len(inputs) / (c1 - c0), len(inputs) / (t1 - t0)


def paired_pass(corpus: Any, tasks: list[Any], inputs: list[Any]) -> tuple[float, float]:
    """Each task's cold episode and then its floor, one after the other, each timed (this thread's CPU time):
    total microseconds per episode of each. Pairs see the same moment of a shared machine, so their ratio
    holds better than that of two passes minutes apart."""
    real = floor = 0
    clock = time.thread_time_ns
    for t, (data, tools_sql, reads, expected) in zip(tasks, inputs, strict=True):
        c0 = clock()
        ep = corpus.start(t, seed=1)
        reward = ep.finish(replay(ep, t))
        c1 = clock()
        floor_episode(data, tools_sql, reads, expected)
        c2 = clock()
        if not reward.passed:
            raise SystemExit(f"oracle failed on {t.id}: {reward.feedback}")
        real, floor = real + c1 - c0, floor + c2 - c1
    check_cold(corpus)
    return real / len(tasks) / 1000, floor / len(tasks) / 1000


# -- the split of a cold episode -----------------------------------------------------


class Split:
    """Accumulated nanoseconds of CPU time (this thread's) per phase."""

    def __init__(self) -> None:
        self.ns: dict[str, int] = {}
        self._t = 0

    def start(self) -> None:
        self._t = time.thread_time_ns()

    def lap(self, phase: str) -> None:
        now = time.thread_time_ns()
        self.ns[phase] = self.ns.get(phase, 0) + now - self._t
        self._t = now

    def per_episode_us(self, n: int) -> dict[str, float]:
        return {k: round(v / n / 1000, 1) for k, v in self.ns.items()}


def split_pass(corpus: Any, tasks: list[Any]) -> dict[str, float]:
    """The phases of a cold episode, each timed in place, with the pieces the installed code's
    ``Corpus.start`` uses (the code before issue 16 or after it)."""
    try:
        import envsynth.corpus.states  # noqa: F401 - present after issue 16
    except ImportError:
        return _split_before(corpus, tasks)
    return _split_after(corpus, tasks)


def _split_before(corpus: Any, tasks: list[Any]) -> dict[str, float]:
    from envsynth.runtime.state import open_state, read_rows, track_changes
    from envsynth.tasks.episode import TaskEpisode
    from envsynth.tasks.state import state_bytes

    s = Split()

    def close(conn: sqlite3.Connection) -> None:  # what EpisodePool(size=0) does with it
        s.lap("finish: evaluate")
        conn.execute("ROLLBACK")
        conn.close()
        s.lap("close")

    for t in tasks:
        app = corpus.apps[t.app]
        s.start()
        data = state_bytes(app, t)
        s.lap("state bytes (rebuilt from rows)")
        conn = open_state(data)
        rows = read_rows(conn, app.blueprint)
        conn.close()
        s.lap("s0 rows (another connection)")
        conn = open_state(data)
        s.lap("open state")
        track_changes(conn, app.blueprint)
        conn.execute("BEGIN")
        s.lap("change tracking setup")
        ep = TaskEpisode(app, t, data, 1, rows, connection=conn, release=close, tracked=True)
        s.lap("episode object")
        answer = replay(ep, t)
        s.lap("calls")
        ep.finish(answer)
    return s.per_episode_us(len(tasks))


def _split_after(corpus: Any, tasks: list[Any]) -> dict[str, float]:
    from envsynth.runtime.state import open_state
    from envsynth.tasks.episode import TaskEpisode

    s = Split()

    def close(conn: sqlite3.Connection) -> None:
        s.lap("finish: evaluate")
        conn.close()
        s.lap("close")

    for t in tasks:
        app = corpus.apps[t.app]
        s.start()
        data = corpus.stored_state(t)
        s.lap("state bytes (read from the store)")
        conn = open_state(data)
        conn.execute("BEGIN")
        s.lap("open state")
        ep = TaskEpisode(app, t, data, 1, connection=conn, release=close)
        s.lap("episode object")
        answer = replay(ep, t)
        s.lap("calls")
        ep.finish(answer)
    return s.per_episode_us(len(tasks))


# -- modes ---------------------------------------------------------------------------


def speed(corpus_path: Path, passes: int, extra_reads: int = 0) -> dict[str, Any]:
    from envsynth.corpus import load_corpus

    corpus = load_corpus(corpus_path, state_cache=0)
    tasks = list(corpus.tasks)
    plan_extra_reads(corpus, tasks, extra_reads)
    inputs = floor_inputs(corpus, tasks)
    cold_pass(corpus, tasks)  # warm: apps loaded, validators built, code paths taken once
    rates, floors, splits, pairs = [], [], [], []
    for _ in range(passes):  # the real path and its floor alternate, so a busy period hits both
        gc.collect()
        rates.append(cold_pass(corpus, tasks))
        gc.collect()
        floors.append(floor_pass(inputs))
        gc.collect()
        splits.append(split_pass(corpus, tasks))
        gc.collect()
        pairs.append(paired_pass(corpus, tasks, inputs))
    split = {k: round(statistics.median(s[k] for s in splits), 1) for k in splits[0]}
    best, floor = max(r for r, _ in rates), max(f for f, _ in floors)
    return {
        "episodes": len(tasks),
        "extra_reads": sum(map(len, EXTRA_READS.values())),
        "cpu_rates": [round(r, 1) for r, _ in rates],
        "wall_rates": [round(w, 1) for _, w in rates],
        "best_rate": round(best, 1),
        "median_rate": round(statistics.median(r for r, _ in rates), 1),
        "floor_cpu_rates": [round(r, 1) for r, _ in floors],
        "floor_wall_rates": [round(w, 1) for _, w in floors],
        "floor_us": round(1e6 / floor, 1),
        "episode_us": round(1e6 / best, 1),
        "ratio_to_floor": round(floor / best, 2),
        "paired_us": [[round(r, 1), round(f, 1)] for r, f in pairs],
        "paired_ratios": [round(r / f, 2) for r, f in pairs],
        "split_us": split,
        "split_total_us": round(sum(split.values()), 1),
    }


def memory(corpus_path: Path, live: int, passes: int) -> dict[str, Any]:
    from envsynth.corpus import load_corpus

    corpus = load_corpus(corpus_path, state_cache=0)
    tasks = list(corpus.tasks)
    cold_pass(corpus, tasks)  # warm
    gc.collect()
    base = rss_kb()
    eps, state = [], 0
    for t in (tasks * (live // len(tasks) + 1))[:live]:
        ep = corpus.start(t, seed=1)
        replay(ep, t)
        eps.append(ep)
        state += len(corpus.state_bytes(t))
    gc.collect()
    held = rss_kb() - base
    for ep in eps:
        ep.finish()
    del eps
    gc.collect()
    after_free = rss_kb() - base
    trimmed = malloc_trim()
    after_trim = rss_kb() - base if trimmed else None
    per_pass = []
    for _ in range(passes):
        cold_pass(corpus, tasks)
        gc.collect()
        per_pass.append(rss_kb())
    return {
        "live_episodes": live,
        "rss_base_kib": base,
        "rss_live_kib": held,
        "state_bytes_kib": round(state / 1024),
        "per_episode_beyond_state_kib": round((held - state / 1024) / live, 1),
        "per_episode_kib": round(held / live, 1),
        "rss_after_free_kib": after_free,
        "rss_after_free_and_malloc_trim_kib": after_trim,
        "rss_after_each_pass_kib": per_pass,
        "growth_over_passes_kib": per_pass[-1] - per_pass[0],
    }


def against(src: Path, corpus_path: Path, rounds: int, passes: int, extra_reads: int = 0) -> dict[str, Any]:
    """``speed`` alternately on ``src`` (before) and this checkout (after), in fresh processes."""
    here = Path(__file__).resolve().parents[1] / "src"
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for label, path in (("before", src), ("after", here)):
            env = {**os.environ, "PYTHONPATH": str(path)}
            cmd = [sys.executable, __file__, "--corpus", str(corpus_path), "--passes", str(passes), "--extra-reads", str(extra_reads)]
            cmd += ["--json", "-"]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            runs[label].append(json.loads(out)["speed"])
            print(label, runs[label][-1]["best_rate"], "episodes/s", file=sys.stderr)
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--mode", choices=("speed", "memory"), default="speed")
    ap.add_argument("--passes", type=int, default=3, help="timed passes over the corpus (speed), RSS passes (memory: 10)")
    ap.add_argument("--live", type=int, default=2000, help="memory: concurrent live episodes")
    ap.add_argument("--against", type=Path, help="speed: another checkout's src to compare with, side by side")
    ap.add_argument("--rounds", type=int, default=3, help="--against: rounds of (before, after)")
    ap.add_argument(
        "--extra-reads", type=int, default=0, help="speed: read calls added before each task's oracle (its list and search tools)"
    )
    ap.add_argument("--json", help="write the results here ('-': stdout only)")
    args = ap.parse_args()
    ensure_corpus(args.corpus)
    out: dict[str, Any] = {"corpus": str(args.corpus), "python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    if args.against:
        out["runs"] = against(args.against, args.corpus, args.rounds, args.passes, args.extra_reads)
    elif args.mode == "memory":
        out["memory"] = memory(args.corpus, args.live, max(args.passes, 10))
    else:
        out["speed"] = speed(args.corpus, args.passes, args.extra_reads)
    text = json.dumps(out, indent=2)
    if args.json == "-":
        print(text)
        return
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
