"""Round trip of an untrusted custom-tool call through a warm sandboxed worker.

Run from the repository root:

    .venv/bin/python benchmarks/bench_untrusted.py             # n = 2000 calls per case
    .venv/bin/python benchmarks/bench_untrusted.py -n 300      # quicker

The blueprint is tests/data/bookshop.yaml, compiled twice: as written (``restock_book``
is trusted, inlined in tools.py) and with ``untrusted: true`` (its body runs in the tool
worker). Timed with ``time.perf_counter_ns`` around ``Episode.call('restock_book', ...)``
on one episode (the update keeps the state valid), after a warm-up of 50 calls; trusted
and untrusted calls alternate so a busy period on the shared machine hits both. Cases:
the sample state (52 rows in 6 tables) and the same blueprint with 100 rows in each table
(600 rows): every call ships every row to the worker, so the cost grows with the state.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
from pathlib import Path

import yaml

from envsynth.blueprint.load import from_dict
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder, rows_to_bytes
from envsynth.sandbox import detect
from envsynth.sandbox.untrusted import tool_pool

BOOKSHOP = Path(__file__).parents[1] / "tests" / "data" / "bookshop.yaml"


def apps() -> tuple[App, App]:
    data = yaml.safe_load(BOOKSHOP.read_text(encoding="utf-8"))
    untrusted = copy.deepcopy(data)
    for action in untrusted["actions"]:
        if action["kind"] == "custom":
            action["untrusted"] = True
    return compile_app(from_dict(data)), compile_app(from_dict(untrusted))


def bench(app_t: App, app_u: App, state: bytes, n: int) -> dict[str, float]:
    ep_t, ep_u = app_t.episode(state), app_u.episode(state)
    book = ep_t.db.execute("SELECT book_id FROM book").fetchone()[0]
    args = {"book_id": book, "copies": 1}
    for _ in range(50):
        assert ep_t.call("restock_book", args).ok and ep_u.call("restock_book", args).ok
    times: dict[str, list[int]] = {"trusted": [], "untrusted": []}
    gc.disable()
    try:
        for i in range(n):
            order = [("trusted", ep_t), ("untrusted", ep_u)]
            for name, ep in order if i % 2 == 0 else order[::-1]:
                t0 = time.perf_counter_ns()
                ep.call("restock_book", args)
                times[name].append(time.perf_counter_ns() - t0)
    finally:
        gc.enable()
    rows = sum(ep_u.db.execute(f'SELECT COUNT(*) FROM "{e.name}"').fetchone()[0] for e in app_u.order)
    out: dict[str, float] = {"rows": rows}
    for name, ts in times.items():
        ts.sort()
        out[f"{name}_median_us"] = statistics.median(ts) / 1000
        out[f"{name}_p90_us"] = ts[int(len(ts) * 0.9)] / 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    n = parser.parse_args().n
    app_t, app_u = apps()
    pool = tool_pool()
    t0 = time.perf_counter()
    pool.give_back(pool.acquire())  # the first worker: spawn to ready, paid once per process
    spawn_ms = (time.perf_counter() - t0) * 1000
    big = rows_to_bytes(app_u.schema, app_u.order, StateBuilder(app_u.blueprint, 1, app_u.order).fill({e.name: 100 for e in app_u.order}))
    print(f"mode: {detect().name} ({detect().reason}); python {sys.version.split()[0]}; n = {n}")
    print(f"first worker, spawn to ready (cold, includes pool start): {spawn_ms:.0f} ms")
    print(f"{'state':<22}{'rows':>6}{'untrusted median':>18}{'p90':>10}{'trusted median':>16}{'p90':>10}")
    for label, state in (("sample", app_u.sample_state), ("100 rows per table", big)):
        r = bench(app_t, app_u, state, n)
        print(
            f"{label:<22}{int(r['rows']):>6}{r['untrusted_median_us']:>15.0f} us{r['untrusted_p90_us']:>7.0f} us"
            f"{r['trusted_median_us']:>13.0f} us{r['trusted_p90_us']:>7.0f} us"
        )


if __name__ == "__main__":
    main()
