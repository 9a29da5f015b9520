"""CPU instructions of task synthesis, counted by valgrind's callgrind: exact and load-independent.

Wall-clock rates on a shared VM swing by +-25% from one run to the next; an instruction count
does not, so it is how two versions of the code are compared. Needs ``valgrind`` (Debian
package). Usage, from the repository root:

    python3 benchmarks/count_instructions.py                 # this checkout's src/
    python3 benchmarks/count_instructions.py SRC [SRC ...]   # other checkouts' src/ folders, side by side

Counts ``synthesize()`` over task indexes 0..N-1 (``--tasks``, default 100) of
``harbor_market`` at D=0 and D=4 (S=1, or ``--states``), after 5 warm-up candidates, and how many were admitted
(compare instructions per admitted task when a change alters tasks); only the synthesis loop
is instrumented (``--instr-atstart=no``, switched on and off with ``callgrind_control``).
Runs two valgrind processes at a time.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"

CHILD = """
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from envsynth import catalog
import envsynth.blueprint.values as blueprint_values
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize
app = compile_app(catalog.load("harbor_market"), 0)
graph = build_graph(app)
for i in range(5):
    synthesize(app, graph, app_index=0, task_index=10**6 + i, states=1, depth=4, seed=0)
getattr(blueprint_values, "email_names", tuple)()  # drawn once per process, on first use (older checkouts have none)
depth, n, states = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], capture_output=True)
admitted = 0
for i in range(n):
    res = synthesize(app, graph, app_index=0, task_index=i, states=states, depth=depth, seed=0)
    admitted += 0 if isinstance(res, Rejection) else len(res)
subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], capture_output=True)
print(admitted)
"""


def count(src: str, depth: int, tasks: int, states: int = 1, python: Path = PYTHON) -> tuple[int, int]:
    """Instructions of the synthesis loop for ``src`` at ``depth`` with ``states`` states, and the task records it admitted."""
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null"]
    out = subprocess.run([*cmd, str(python), "-c", CHILD, src, str(depth), str(tasks), str(states)], capture_output=True, text=True)
    lines = [line for line in out.stderr.splitlines() if "Collected" in line]
    if out.returncode != 0 or not lines:
        sys.exit(f"valgrind failed for {src} D={depth}:\n{out.stderr[-2000:]}")
    return int(lines[0].split()[-1]), int(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", nargs="*", default=[str(ROOT / "src")], help="src/ folders to measure (default: this checkout)")
    ap.add_argument("--tasks", type=int, default=100, help="task indexes per depth")
    ap.add_argument("--states", type=int, default=1, help="task states per task index (S); admitted counts task records")
    ap.add_argument("--python", type=Path, default=PYTHON, help="the interpreter with envsynth's dependencies (default: .venv)")
    args = ap.parse_args()
    jobs = [(s, d) for d in (0, 4) for s in args.src]
    with cf.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(lambda job: count(job[0], job[1], args.tasks, args.states, args.python), jobs))
    for (src, depth), (n, admitted) in zip(jobs, results):
        print(f"{src}  D={depth} S={args.states}  {n / 1e6:,.1f} M instructions for {args.tasks} task indexes, {admitted} admitted")


if __name__ == "__main__":
    main()
