"""Time ``envsynth report`` on a corpus of 8 apps x 50 tasks with an oracle run on it (issue 15: < 10 s).

As the command does by default, the report includes the OOD audit against tau2, appworld and bfcl.

Usage:
    .venv/bin/python benchmarks/bench_report.py [CORPUS RUN_DIR] [--repeat 3] [--json OUT]

Without CORPUS, builds one into /tmp/envsynth-bench-report (every catalogue domain, T=50, S=1,
D=2, seed 0) and an oracle run on it first; that build is not timed.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from envsynth import catalog
from envsynth.audit import BENCHMARKS
from envsynth.corpus import build_corpus, load_corpus
from envsynth.rollout import RunConfig
from envsynth.rollout.command import run_command
from envsynth.view.html import build_report

DEFAULT = Path(tempfile.gettempdir()) / "envsynth-bench-report"


def _corpus() -> tuple[Path, Path]:
    corpus, run = DEFAULT / "corpus", DEFAULT / "oracle"
    if not (corpus / "corpus.json").is_file():
        bps = [catalog.load(e.name) for e in catalog.entries()]
        build_corpus(corpus, blueprints=bps, tasks_per_app=50, states=1, distractors=2, seed=0)
    if not (run / "trajectories.jsonl").is_file():
        run_command(RunConfig(corpus=corpus, out=run, agent="oracle"))
    return corpus, run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", type=Path)
    ap.add_argument("run", nargs="?", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-audit", action="store_true", help="leave out the OOD audit (envsynth report --against '')")
    args = ap.parse_args()
    corpus, run = (args.corpus, args.run) if args.corpus else _corpus()
    c = load_corpus(corpus)
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            out = Path(tmp) / f"r{i}"
            start = time.perf_counter()
            result = build_report(corpus, [run] if run else [], out, against=() if args.no_audit else BENCHMARKS)
            times.append(time.perf_counter() - start)
            size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
            shutil.rmtree(out)
    row = {
        "apps": len(c.apps),
        "tasks": len(c.tasks),
        "runs": result.runs,
        "audit": not args.no_audit,
        "seconds": [round(t, 3) for t in times],
        "best": round(min(times), 3),
        "median": round(statistics.median(times), 3),
        "report_bytes": size,
        "python": platform.python_version(),
    }
    print(
        f"report of {row['apps']} apps, {row['tasks']} tasks, {row['runs']} run(s): best {row['best']} s, median {row['median']} s "
        f"over {args.repeat} builds ({size / 1e6:.1f} MB written)"
    )
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
