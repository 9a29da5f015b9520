"""Choosing the task index format: SQLite (what envsynth writes) against a JSON-lines index read into memory.

Writes both for N synthetic rows (id, app, kind, coordinates, shard, offset, length), then
measures in fresh child processes, alternated over rounds: time to open (SQLite: connect
and count; JSON lines: parse every line and build the id -> position dict), RSS added by
opening, and time to list every id.

Usage (from the repository root)::

    python benchmarks/bench_index_format.py /tmp/fmt [--records 458752] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _rows(n: int) -> list[tuple[object, ...]]:
    return [
        (i, f"harbor_market-t{i // 2:05d}-s{i % 2}", "harbor_market", "info", 7, i // 2, i % 2, i // 256, (i % 256) * 4600, 4600)
        for i in range(n)
    ]


def write(folder: Path, n: int) -> None:
    """Both index files for ``n`` rows."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = _rows(n)
    (folder / "i.sqlite").unlink(missing_ok=True)
    conn = sqlite3.connect(folder / "i.sqlite")
    conn.execute(
        "CREATE TABLE tasks (pos INTEGER PRIMARY KEY, id TEXT, app TEXT, kind TEXT, app_index INT, task INT, state INT,"
        " shard INT, offset INT, length INT)"
    )
    conn.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.execute("CREATE UNIQUE INDEX tasks_id ON tasks (id)")
    conn.execute("CREATE INDEX tasks_app_kind ON tasks (app, kind)")
    conn.commit()
    conn.close()
    (folder / "i.jsonl").write_text("".join(json.dumps(r[1:], separators=(",", ":")) + "\n" for r in rows))


def _rss_mb() -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def child(folder: Path, fmt: str) -> dict[str, float]:
    """Open the ``fmt`` index in ``folder`` and list its ids."""
    rss0, t = _rss_mb(), time.perf_counter()
    if fmt == "sqlite":
        conn = sqlite3.connect(f"file:{folder / 'i.sqlite'}?mode=ro", uri=True)
        conn.execute("SELECT count(*) FROM tasks").fetchone()
        opened, rss = time.perf_counter() - t, _rss_mb()
        ids = [r[0] for r in conn.execute("SELECT id FROM tasks ORDER BY pos")]
    else:
        with open(folder / "i.jsonl", "rb") as f:
            rows = [json.loads(line) for line in f]
        by_id = {r[0]: i for i, r in enumerate(rows)}
        opened, rss = time.perf_counter() - t, _rss_mb()
        ids = list(by_id)  # insertion order: the corpus order
    listed = time.perf_counter() - t - opened
    return {"open_s": opened, "rss_added_mb": rss - rss0, "ids_s": listed, "n": len(ids)}


def main() -> None:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--records", type=int, default=458_752)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", choices=["sqlite", "jsonl"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.folder, args.child)))
        return
    write(args.folder, args.records)
    sizes = {f: (args.folder / f"i.{f}").stat().st_size / 2**20 for f in ("sqlite", "jsonl")}
    runs: dict[str, list[dict[str, float]]] = {"sqlite": [], "jsonl": []}
    for _ in range(args.rounds):
        for fmt in runs:
            out = subprocess.run([sys.executable, __file__, str(args.folder), "--child", fmt], capture_output=True, text=True, check=True)
            runs[fmt].append(json.loads(out.stdout))
    print(f"{args.records:,} rows, {args.rounds} rounds, median")
    print(f"{'format':8} {'file MB':>8} {'open s':>8} {'RSS+ MB':>8} {'ids s':>8}")
    for fmt, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("open_s", "rss_added_mb", "ids_s")}
        print(f"{fmt:8} {sizes[fmt]:8.1f} {med['open_s']:8.3f} {med['rss_added_mb']:8.1f} {med['ids_s']:8.3f}")


if __name__ == "__main__":
    main()
