"""Opening a large corpus: open time, RSS after ``load_corpus``, iterating all task ids, random access.

Each measurement runs in a fresh child process (so RSS is that of one open corpus), once per
code tree per round, the trees alternated within a round (a busy period of the shared
machine hits both alike). ``--before SRC`` adds a second source tree (for example the main
branch's ``src``) measured side by side with ``--after``; it is skipped on corpora larger than
``--before-limit`` records, since the eager loader holds ~29 KB per record (13 GB for 458,752).

Usage (from the repository root; make the corpus with gen_big_corpus.py)::

    python benchmarks/bench_corpus.py /tmp/big [--before /work/main/src] [--rounds 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ACCESSES = 200  # random records read per child (each at a position not read before)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(corpus: str, seed: int) -> dict[str, Any]:
    """One measurement with the envsynth on ``sys.path``: open, RSS, all ids, random reads."""
    import envsynth
    from envsynth.corpus import load_corpus

    rss0 = _rss_mb()
    t = time.perf_counter()
    c = load_corpus(corpus)
    opened = time.perf_counter() - t
    rss = _rss_mb()
    t = time.perf_counter()
    ids = list(c.tasks.ids()) if hasattr(c.tasks, "ids") else [task.id for task in c.tasks]
    ids_s = time.perf_counter() - t
    rng = random.Random(seed)
    picks = rng.sample(range(len(ids)), min(ACCESSES, len(ids)))
    times = []
    for i in picks:
        t = time.perf_counter()
        task = c.tasks[i]
        times.append(time.perf_counter() - t)
        if task.id != ids[i]:
            raise SystemExit(f"record {i} is {task.id}, the ids say {ids[i]}")
    by_id = []
    for i in rng.sample(range(len(ids)), min(ACCESSES, len(ids))):
        t = time.perf_counter()
        c.task(ids[i])
        by_id.append(time.perf_counter() - t)
    return {
        "envsynth": os.path.dirname(envsynth.__file__),
        "records": len(ids),
        "open_s": opened,
        "rss_mb": rss,
        "rss_before_load_mb": rss0,
        "ids_s": ids_s,
        "index_ms": statistics.median(times) * 1e3,
        "by_id_ms": statistics.median(by_id) * 1e3,
        "rss_end_mb": _rss_mb(),
    }


def run_child(src: Path, corpus: Path, seed: int) -> dict[str, Any]:
    """:func:`child` in a new process with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src.resolve())}
    out = subprocess.run(
        [sys.executable, __file__, str(corpus), "--child", "--seed", str(seed)], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode:
        raise SystemExit(f"child on {src} failed:\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def main() -> None:
    """Command line: see the module docstring."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument(
        "--after", type=Path, default=Path(__file__).resolve().parent.parent / "src", help="source tree measured (default: this one)"
    )
    ap.add_argument("--before", type=Path, help="a second source tree to measure side by side (e.g. /work/main/src)")
    ap.add_argument("--before-limit", type=int, default=60_000, help="skip --before on corpora with more records (default 60,000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write every round's numbers here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(str(args.corpus), args.seed)))
        return
    records = json.loads((args.corpus / "corpus.json").read_text())["records"]
    trees = {"after": args.after}
    if args.before is not None and records <= args.before_limit:
        trees["before"] = args.before
    elif args.before is not None:
        print(f"before: skipped, {records:,} records > --before-limit {args.before_limit:,}", file=sys.stderr)
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in trees}
    for r in range(args.rounds):
        for name, src in trees.items():
            runs[name].append(run_child(src, args.corpus, r))
            print(f"round {r + 1} {name}: {json.dumps(runs[name][-1])}", file=sys.stderr)
    print(f"{records:,} records, {args.rounds} rounds, median of rounds")
    print(f"{'code':8} {'open s':>8} {'RSS MB':>8} {'ids s':>8} {'[i] ms':>8} {'by id ms':>9}")
    for name, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in ("open_s", "rss_mb", "ids_s", "index_ms", "by_id_ms")}
        print(f"{name:8} {med['open_s']:8.3f} {med['rss_mb']:8.1f} {med['ids_s']:8.3f} {med['index_ms']:8.3f} {med['by_id_ms']:9.3f}")
    if args.json:
        args.json.write_text(json.dumps({"corpus": str(args.corpus), "records": records, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
