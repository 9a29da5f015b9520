"""A fresh episode of an app and its first tool call: ``App.episode`` + one ``get_order`` + close.

The first statement on a fresh connection parses the schema, so this is where a change that
moves work from episode start to the first call shows (see benchmarks/README.md, "After the
merges of 2026-12-02"). Thread CPU time, best of 5 rounds of 300. Usage, from the repository
root, alternating two checkouts::

    for i in 1 2 3; do
      PYTHONPATH=OLD/src .venv/bin/python benchmarks/bench_first_call.py OLD/src
      PYTHONPATH=NEW/src .venv/bin/python benchmarks/bench_first_call.py NEW/src
    done
"""

from __future__ import annotations

import sys
import time


def main(src: str) -> None:
    sys.path.insert(0, src)
    from envsynth import catalog
    from envsynth.compiler.compile import compile_app

    app = compile_app(catalog.load("harbor_market"), 0)
    state = app.sample_state
    ep = app.episode(state, seed=0)
    order_id = ep.db.execute("SELECT order_id FROM customer_order LIMIT 1").fetchone()[0]
    ep.close()
    best = []
    for _ in range(5):
        t0 = time.thread_time_ns()
        for _ in range(300):
            ep = app.episode(state, seed=0)
            ep.call("get_order", {"order_id": order_id})
            ep.close()
        best.append((time.thread_time_ns() - t0) / 300 / 1000)
    print(f"{src}: start + first call + close {min(best):.1f} us")


if __name__ == "__main__":
    main(sys.argv[1])
