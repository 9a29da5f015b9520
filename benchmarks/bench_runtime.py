"""Runtime micro-benchmarks: episode start (state copy) and tool-call overhead.

Run from the repository root with a warm process:

    .venv/bin/python benchmarks/bench_runtime.py            # full run (~30 s, most of it building states)
    .venv/bin/python benchmarks/bench_runtime.py --quick    # smoke run (a few seconds)
    .venv/bin/python benchmarks/bench_runtime.py --json benchmarks/results/runtime.json

What is measured (``time.perf_counter_ns`` around each single operation, reported in us):

* Episode start: ``App.episode(state)``, i.e. ``sqlite3.connect(':memory:')`` +
  ``Connection.deserialize(state)`` + ``PRAGMA foreign_keys = ON`` + the episode's
  ``Context``. States are drawn from a shipped catalogue app with ``StateBuilder`` at 100
  and 1,000 rows per table in 10 tables (``--app``, ``--tables``); closing is not timed.
  Also reported, outside the target: the first tool call of a fresh episode, which parses
  the schema and prepares its statements on the new connection.
* Tool-call overhead: ``Episode.call(name, args)`` versus the generated function called
  directly, ``app.functions[name](ep.ctx, **args)``, on the same episode and state,
  interleaved call/direct (alternating which goes first). Overhead = median(call) -
  median(direct): argument validation, the SAVEPOINT/RELEASE pair, ``json.dumps`` of the
  result and the dispatch code. Cases: a read (``get_order``); an update setting a price to
  alternating values (the state stays valid without any reset); a transition
  (``discontinue_product``) undone after every repetition by an untimed UPDATE (so the call
  runs in autocommit mode as in a real episode) and, as a variant, by an untimed outer
  SAVEPOINT rollback; and the read with its arguments given as JSON text.

Noise: the machine is shared. Every measurement runs in R rounds, scheduled round-robin
over all cases so that a busy period hits every case alike; per case the round with the
lowest median is reported (the least disturbed), with every round's median and the pooled
median of all rounds in the JSON.

Targets (from the issue): episode start < 150 us median at 100 rows x 10 tables; call
overhead beyond the SQL < 30 us.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder, rows_to_bytes
from envsynth.runtime.toolkit import Context

START_TARGET_US = 150.0
OVERHEAD_TARGET_US = 30.0

Samples = dict[str, list[int]]  # series name -> nanoseconds, one per repetition
RoundFn = Callable[[int], Samples]  # run one round of n repetitions

# --------------------------------------------------------------------------- statistics


def summarize(samples_ns: list[int]) -> dict[str, float]:
    s = sorted(samples_ns)
    n = len(s)
    return {
        "n": n,
        "median_us": round(statistics.median(s) / 1000.0, 2),
        "p90_us": round(s[min(n - 1, round(0.9 * (n - 1)))] / 1000.0, 2),
        "min_us": round(s[0] / 1000.0, 2),
    }


def best_round(rounds: list[list[int]]) -> dict[str, Any]:
    """The round with the lowest median, with every round's median and the pooled median."""
    sums = [summarize(r) for r in rounds]
    best = min(sums, key=lambda x: x["median_us"])
    pooled = summarize([x for r in rounds for x in r])
    return {
        **best,
        "round_medians_us": [x["median_us"] for x in sums],
        "pooled_median_us": pooled["median_us"],
        "pooled_p90_us": pooled["p90_us"],
    }


def round_robin(cases: dict[str, RoundFn], reps: int, rounds: int, warmup: int) -> dict[str, list[Samples]]:
    """Run every case ``rounds`` times, one round of each case in turn, after a warm-up round."""
    for fn in cases.values():
        fn(warmup)
    out: dict[str, list[Samples]] = {k: [] for k in cases}
    for _ in range(rounds):
        for key, fn in cases.items():
            gc.collect()
            out[key].append(fn(reps))
    return out


def series(rounds: list[Samples], name: str) -> list[list[int]]:
    return [r[name] for r in rounds]


# --------------------------------------------------------------------------- machine


def machine_info() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import pydantic

        pyd = pydantic.VERSION
    except Exception:
        pyd = "?"
    return {
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "pydantic": pyd,
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


# --------------------------------------------------------------------------- states


def load_blueprint_by_name(name: str) -> Any:
    """``catalog.load(name)``; if some other catalogue file does not parse (the catalogue is
    edited concurrently), fall back to the one YAML file whose top-level ``name:`` matches."""
    try:
        return catalog.load(name)
    except Exception as exc:
        from envsynth.blueprint.load import load_blueprint

        for path in sorted(catalog.CATALOG_DIR.glob("*.yaml")):
            lines = path.read_text(encoding="utf-8").splitlines()
            if path.stem == name or f"name: {name}" in lines:
                print(f"note: catalog.load({name!r}) failed ({type(exc).__name__}); loaded {path.name} directly", file=sys.stderr)
                return load_blueprint(path)
        raise


def build_state(app: App, n_rows: int, n_tables: int, seed: int = 7) -> tuple[bytes, list[str]]:
    """``n_rows`` rows in each of the first ``n_tables`` entities (creation order), 0 elsewhere.

    Creation order puts referenced tables first, so the first N entities are closed under
    references.
    """
    filled = [e.name for e in app.order[:n_tables]]
    rows = StateBuilder(app.blueprint, seed, app.order).fill({name: n_rows for name in filled})
    return rows_to_bytes(app.schema, app.order, rows), filled


def drop_other_tables(state: bytes, keep: list[str]) -> bytes:
    """The same state with every table not in ``keep`` dropped, vacuumed."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.deserialize(state)
    for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if t not in keep:
            conn.execute(f'DROP TABLE "{t}"')
    conn.execute("VACUUM")
    data = conn.serialize()
    conn.close()
    return data


def table_count(state: bytes) -> int:
    conn = sqlite3.connect(":memory:")
    conn.deserialize(state)
    n = conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    conn.close()
    return n


def pick_ids(app: App, state: bytes) -> dict[str, str]:
    ep = app.episode(state)
    q = ep.db.execute
    ids = {
        "order_id": q("SELECT order_id FROM customer_order ORDER BY order_id LIMIT 1 OFFSET 7").fetchone()[0],
        "product_id": q("SELECT product_id FROM product ORDER BY product_id LIMIT 1 OFFSET 5").fetchone()[0],
        "active_product_id": q("SELECT product_id FROM product WHERE status = 'active' ORDER BY product_id LIMIT 1 OFFSET 3").fetchone()[0],
    }
    ep.close()
    return ids


# --------------------------------------------------------------------------- cases


def timed(fn: Callable[[], Any], after: Callable[[Any], None] | None = None) -> RoundFn:
    """A round of ``fn()`` timed one call at a time; ``after(result)`` runs untimed."""

    def run(n: int) -> Samples:
        clock = time.perf_counter_ns
        out = []
        for _ in range(n):
            gc.disable()
            t0 = clock()
            r = fn()
            t1 = clock()
            gc.enable()
            out.append(t1 - t0)
            if after is not None:
                after(r)
        return {"t": out}

    return run


def episode_start_case(app: App, state: bytes) -> RoundFn:
    return timed(lambda: app.episode(state), after=lambda ep: ep.close())


def first_call_case(app: App, state: bytes, name: str, args: dict[str, Any]) -> RoundFn:
    """Fresh episode, then the same call twice: start, first call (cold connection), second call."""

    def run(n: int) -> Samples:
        clock = time.perf_counter_ns
        start, first, second = [], [], []
        for _ in range(n):
            gc.disable()
            t0 = clock()
            ep = app.episode(state)
            t1 = clock()
            r = ep.call(name, dict(args))
            t2 = clock()
            ep.call(name, dict(args))
            t3 = clock()
            gc.enable()
            ep.close()
            if not r.ok:
                raise RuntimeError(f"{name} failed: {r.content}")
            start.append(t1 - t0)
            first.append(t2 - t1)
            second.append(t3 - t2)
        return {"start": start, "first": first, "second": second, "start_plus_first": [a + b for a, b in zip(start, first)]}

    return run


def start_part_cases(app: App, state: bytes) -> dict[str, RoundFn]:
    """The pieces of ``App.episode``, each timed on its own."""

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)

    def between(setup: Callable[[], sqlite3.Connection], step: Callable[[sqlite3.Connection], Any]) -> RoundFn:
        def run(n: int) -> Samples:
            clock = time.perf_counter_ns
            out = []
            for _ in range(n):
                c = setup()
                gc.disable()
                t0 = clock()
                step(c)
                t1 = clock()
                gc.enable()
                c.close()
                out.append(t1 - t0)
            return {"t": out}

        return run

    def deserialized() -> sqlite3.Connection:
        c = connect()
        c.deserialize(state)
        return c

    ctx_conn = connect()
    return {
        "connect": timed(connect, after=lambda c: c.close()),
        "deserialize": between(connect, lambda c: c.deserialize(state)),
        "pragma_foreign_keys": between(deserialized, lambda c: c.execute("PRAGMA foreign_keys = ON")),
        "context": timed(lambda: Context(ctx_conn, app.now, 0, app.bool_columns)),
    }


def call_case(
    app: App,
    state: bytes,
    name: str,
    arg_sets: list[Any],
    rollback: bool = False,
    reset: Callable[[sqlite3.Connection], Any] | None = None,
) -> RoundFn:
    """Interleaved ``Episode.call`` vs the generated function, on one episode kept across rounds.

    ``arg_sets`` are cycled through (dicts, or JSON texts: the direct call then gets them
    parsed, untimed). With ``rollback`` an outer SAVEPOINT is opened before and rolled back
    after every timed call (untimed); ``reset(db)`` instead runs untimed after every call.
    """
    ep = app.episode(state)
    db = ep.db
    fn = app.functions[name]
    ctx = ep.ctx
    parsed = [json.loads(a) if isinstance(a, str) else a for a in arg_sets]

    def undo() -> None:
        if rollback:
            db.execute("ROLLBACK TO bench")
            db.execute("RELEASE bench")
        if reset is not None:
            reset(db)

    if rollback:
        db.execute("SAVEPOINT bench")
    check = ep.call(name, arg_sets[0] if isinstance(arg_sets[0], str) else dict(arg_sets[0]))
    undo()
    if rollback:
        db.execute("SAVEPOINT bench")
    direct = fn(ctx, **parsed[0])
    undo()
    if not check.ok or check.data != direct:
        raise RuntimeError(f"{name}({arg_sets[0]}): call and direct disagree or fail: {check.content}")

    state_i = [0]

    def run(n: int) -> Samples:
        clock = time.perf_counter_ns
        call_ns, direct_ns = [], []
        for _ in range(n):
            i = state_i[0]
            state_i[0] += 1
            k = i % len(arg_sets)
            for variant in (0, 1) if i % 2 == 0 else (1, 0):
                a = arg_sets[k] if isinstance(arg_sets[k], str) else dict(arg_sets[k])
                p = dict(parsed[k])
                if rollback:
                    db.execute("SAVEPOINT bench")
                gc.disable()
                if variant == 0:
                    t0 = clock()
                    r = ep.call(name, a)
                    t1 = clock()
                else:
                    t0 = clock()
                    fn(ctx, **p)
                    t1 = clock()
                gc.enable()
                undo()
                if variant == 0:
                    if not r.ok:
                        raise RuntimeError(f"{name} failed during the run: {r.content}")
                    call_ns.append(t1 - t0)
                else:
                    direct_ns.append(t1 - t0)
        return {"call": call_ns, "direct": direct_ns}

    return run


def overhead_part_cases(app: App, state: bytes, name: str, args: dict[str, Any]) -> dict[str, RoundFn]:
    """The pieces ``Episode.call`` adds around the generated function, each timed on its own."""
    ep = app.episode(state)
    db = ep.db
    validator = app.validators[name]
    value = app.functions[name](ep.ctx, **args)
    return {
        "validate": timed(lambda: validator.model_validate(dict(args)).__dict__),
        "savepoint_release": timed(lambda: (db.execute("SAVEPOINT tool_call"), db.execute("RELEASE tool_call"))),
        "json_dumps": timed(lambda: json.dumps(value, ensure_ascii=False)),
    }


# --------------------------------------------------------------------------- main


def run(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    rounds = args.rounds or (2 if quick else 10)
    reps = args.reps or (150 if quick else 800)
    warmup = 50 if quick else 300
    sizes = [100] if quick else [100, 1000]

    t_setup = time.perf_counter()
    app = compile_app(load_blueprint_by_name(args.app))
    _ = app.functions, app.validators, app.bool_columns, app.order  # fill the cached properties
    n_tables = min(args.tables, len(app.order))
    states: dict[int, bytes] = {}
    filled: list[str] = []
    for n in sizes:
        states[n], filled = build_state(app, n, n_tables)
    exact = {n: drop_other_tables(states[n], filled) for n in sizes}
    setup_s = time.perf_counter() - t_setup
    small = states[sizes[0]]
    ids = pick_ids(app, small)

    # a. episode start
    cases: dict[str, RoundFn] = {}
    for n in sizes:
        cases[f"start:{n}"] = episode_start_case(app, states[n])
        cases[f"start_exact:{n}"] = episode_start_case(app, exact[n])
    cases["first_call"] = first_call_case(app, small, "get_order", {"order_id": ids["order_id"]})
    for part, fn in start_part_cases(app, small).items():
        cases[f"start_part:{part}"] = fn

    # b. tool calls, on the 100-rows-per-table state
    pid = ids["active_product_id"]

    def undo_discontinue(db: sqlite3.Connection) -> None:
        db.execute("UPDATE product SET status = 'active' WHERE product_id = ?", (pid,))

    call_specs: dict[str, tuple[str, list[Any], dict[str, Any]]] = {
        "read": ("get_order", [{"order_id": ids["order_id"]}], {}),
        "update": (
            "update_product",
            [{"product_id": ids["product_id"], "price": 19.5}, {"product_id": ids["product_id"], "price": 24.0}],
            {},
        ),
        "transition": ("discontinue_product", [{"product_id": pid}], {"reset": undo_discontinue}),
        "transition_savepoint": ("discontinue_product", [{"product_id": pid}], {"rollback": True}),
        "read_json_text_args": ("get_order", [json.dumps({"order_id": ids["order_id"]})], {}),
    }
    for kind, (name, arg_sets, kw) in call_specs.items():
        cases[f"call:{kind}"] = call_case(app, small, name, arg_sets, **kw)
    for kind in ("read", "update", "transition"):
        name, arg_sets, _kw = call_specs[kind]
        for part, fn in overhead_part_cases(app, small, name, arg_sets[0]).items():
            cases[f"call_part:{kind}:{part}"] = fn

    t_run = time.perf_counter()
    raw = round_robin(cases, reps, rounds, warmup)
    run_s = time.perf_counter() - t_run

    res: dict[str, Any] = {
        "machine": machine_info() | {"loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "app": app.name,
        "schema_tables": table_count(small),
        "filled_tables": filled,
        "empty_tables": [e.name for e in app.order if e.name not in filled],
        "quick": quick,
        "rounds": rounds,
        "reps_per_round": reps,
        "setup_seconds": round(setup_s, 1),
        "measure_seconds": round(run_s, 1),
        "episode_start": {},
        "episode_start_exact_tables": {},
        "episode_start_parts_us": {},
        "first_call": {},
        "calls": {},
        "call_overhead_parts_us": {},
    }
    for n in sizes:
        res["episode_start"][str(n)] = best_round(series(raw[f"start:{n}"], "t")) | {"state_bytes": len(states[n])}
        res["episode_start_exact_tables"][str(n)] = best_round(series(raw[f"start_exact:{n}"], "t")) | {
            "state_bytes": len(exact[n]),
            "tables": table_count(exact[n]),
        }
    fc = raw["first_call"]
    res["first_call"] = {"tool": "get_order"} | {k: best_round(series(fc, k)) for k in ("start", "first", "second", "start_plus_first")}
    for part in ("connect", "deserialize", "pragma_foreign_keys", "context"):
        res["episode_start_parts_us"][part] = best_round(series(raw[f"start_part:{part}"], "t"))["median_us"]

    for kind, (name, arg_sets, kw) in call_specs.items():
        rr = raw[f"call:{kind}"]
        per_round = []
        for r in rr:
            c, d = summarize(r["call"]), summarize(r["direct"])
            per_round.append({"call": c, "direct": d, "overhead_us": round(c["median_us"] - d["median_us"], 2)})
        best = min(per_round, key=lambda x: x["call"]["median_us"])
        pooled_c = summarize([x for r in rr for x in r["call"]])
        pooled_d = summarize([x for r in rr for x in r["direct"]])
        res["calls"][kind] = {
            "tool": name,
            "args": arg_sets,
            "reset": "outer SAVEPOINT rollback (untimed)"
            if kw.get("rollback")
            else ("UPDATE undo (untimed)" if kw.get("reset") else "none"),
            "call": best["call"],
            "direct": best["direct"],
            "overhead_us": best["overhead_us"],
            "round_overheads_us": [x["overhead_us"] for x in per_round],
            "median_round_overhead_us": round(statistics.median(x["overhead_us"] for x in per_round), 2),
            "pooled_overhead_us": round(pooled_c["median_us"] - pooled_d["median_us"], 2),
            "round_call_medians_us": [x["call"]["median_us"] for x in per_round],
            "round_direct_medians_us": [x["direct"]["median_us"] for x in per_round],
        }
    for kind in ("read", "update", "transition"):
        res["call_overhead_parts_us"][kind] = {
            part: best_round(series(raw[f"call_part:{kind}:{part}"], "t"))["median_us"]
            for part in ("validate", "savepoint_release", "json_dumps")
        }

    s100 = res["episode_start"][str(sizes[0])]["median_us"]
    judged = ("read", "update", "transition", "transition_savepoint")
    worst = max(judged, key=lambda k: res["calls"][k]["overhead_us"])
    res["targets"] = {
        "episode_start_median_us": {"target": START_TARGET_US, "measured": s100, "met": s100 < START_TARGET_US},
        "call_overhead_us": {
            "target": OVERHEAD_TARGET_US,
            "measured": res["calls"][worst]["overhead_us"],
            "worst_case": worst,
            "met": res["calls"][worst]["overhead_us"] < OVERHEAD_TARGET_US,
        },
    }
    return res


def report(res: dict[str, Any]) -> None:
    m = res["machine"]
    met = lambda ok: "MET" if ok else "MISSED"  # noqa: E731
    nf = len(res["filled_tables"])
    print(f"machine: {m['nproc']} cores ({m['cpu']}), Python {m['python']}, SQLite {m['sqlite']}, pydantic {m['pydantic']}")
    print(f"load average at start / end: {m['loadavg_at_start']} / {m['loadavg_at_end']}")
    print(f"app {res['app']}: {res['schema_tables']} tables in the schema, {nf} filled ({', '.join(res['filled_tables'])})")
    print(f"{res['rounds']} rounds x {res['reps_per_round']} repetitions per case; best round shown, pooled median of all rounds in []")
    print()
    print("a. Episode start, App.episode(state)             median     p90   [pooled]  state KiB")
    for n, r in res["episode_start"].items():
        label = f"{n} rows x {nf} tables (+{res['schema_tables'] - nf} empty)"
        tail = f"   target < {START_TARGET_US:.0f} us: {met(r['median_us'] < START_TARGET_US)}" if n == "100" else ""
        print(
            f"   {label:<44} {r['median_us']:7.1f} {r['p90_us']:7.1f} [{r['pooled_median_us']:7.1f}] {r['state_bytes'] / 1024:8.0f}{tail}"
        )
    for n, r in res["episode_start_exact_tables"].items():
        label = f"{n} rows x {r['tables']} tables (others dropped)"
        print(f"   {label:<44} {r['median_us']:7.1f} {r['p90_us']:7.1f} [{r['pooled_median_us']:7.1f}] {r['state_bytes'] / 1024:8.0f}")
    print("   parts (medians, us): " + ", ".join(f"{k} {v:.1f}" for k, v in res["episode_start_parts_us"].items()))
    fc = res["first_call"]
    print(
        f"   first {fc['tool']} of a fresh episode {fc['first']['median_us']:.1f} us vs {fc['second']['median_us']:.1f} us for the second "
        f"(schema parse + statement prepares); start + first call {fc['start_plus_first']['median_us']:.1f} us"
    )
    print()
    print("b. Tool calls, 100 rows/table          tool                  Episode.call  direct  overhead [pooled]")
    for kind, c in res["calls"].items():
        tail = (
            f"  target < {OVERHEAD_TARGET_US:.0f} us: {met(c['overhead_us'] < OVERHEAD_TARGET_US)}"
            if kind != "read_json_text_args"
            else "  (info)"
        )
        print(
            f"   {kind:<34} {c['tool']:<22} {c['call']['median_us']:8.1f} {c['direct']['median_us']:8.1f} "
            f"{c['overhead_us']:8.1f} [{c['pooled_overhead_us']:6.1f}]{tail}"
        )
    for kind, p in res["call_overhead_parts_us"].items():
        print(f"   {kind} overhead parts (medians, us): " + ", ".join(f"{k} {v:.1f}" for k, v in p.items()))
    print()
    t = res["targets"]
    s, o = t["episode_start_median_us"], t["call_overhead_us"]
    print(f"target episode start < {s['target']:.0f} us (100 rows x 10 tables): {s['measured']:.1f} us -> {met(s['met'])}")
    print(f"target call overhead < {o['target']:.0f} us (worst: {o['worst_case']}): {o['measured']:.1f} us -> {met(o['met'])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: 100 rows only, 2 short rounds")
    ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
    ap.add_argument("--app", default="harbor_market", help="catalogue app to draw states from (default: harbor_market)")
    ap.add_argument("--tables", type=int, default=10, help="tables to fill: the first N in creation order (default 10)")
    ap.add_argument("--rounds", type=int, default=0, help="rounds per case (default 10; 2 with --quick)")
    ap.add_argument("--reps", type=int, default=0, help="timed repetitions per round (default 800; 150 with --quick)")
    args = ap.parse_args(argv)
    res = run(args)
    report(res)
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
