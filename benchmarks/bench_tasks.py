"""Task synthesis and episode evaluation throughput (issue 3 targets).

- admitted tasks per second per core, at distractor depth D=0 and D=4;
- evaluated episodes per second per core: TaskEpisode start + oracle replay + reward, on the
  tasks' own states (core + distractors) and on the same tasks padded to ~100 rows per table.

Single process (one core). Usage:
    .venv/bin/python benchmarks/bench_tasks.py [--app harbor_market] [--tasks 200] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import envsynth.blueprint.values as blueprint_values
from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.reward import effects_of
from envsynth.runtime.state import StateBuilder, open_state, read_rows
from envsynth.tasks import Rejection, Task, TaskEpisode, state_bytes, synthesize
from envsynth.tasks.building.instantiate import ChainFailed, execute
from envsynth.tasks.episode import EpisodePool
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged
from envsynth.tasks.synth import value_pool

WARM = 5
PAD_ROWS = 100  # rows per table of the large-state evaluation (issue 3: "apps of ~100 rows per table")


def synth_round(app: Any, graph: Any, n_indexes: int, depth: int, states: int) -> tuple[float, list[Task]]:
    """One round: ``synthesize()`` over task indexes 0..n-1; admitted task records per second, and the records."""
    admitted: list[Task] = []
    t = time.perf_counter()
    for i in range(n_indexes):
        res = synthesize(app, graph, app_index=0, task_index=i, states=states, depth=depth, seed=0)
        if not isinstance(res, Rejection):
            admitted += res
    return len(admitted) / (time.perf_counter() - t), admitted


def synth_rates(app: Any, graph: Any, configs: list[tuple[int, int, int]], rounds: int) -> list[tuple[list[float], list[Task]]]:
    """Rates of each (task indexes, depth, states) config over ``rounds`` rounds, the configs interleaved within a round
    (so a busy period of the shared machine hits all of them alike); per config its rates and its admitted records."""
    rates: list[list[float]] = [[] for _ in configs]
    records: list[list[Task]] = [[] for _ in configs]
    for _ in range(rounds):
        for j, (n, depth, states) in enumerate(configs):
            rate, records[j] = synth_round(app, graph, n, depth, states)
            rates[j].append(rate)
    return list(zip(rates, records))


def replay(ep: TaskEpisode, task: Task) -> Any:
    results: list[Any] = []
    if task.clarify:  # a must-ask task: the user is asked before the first write
        ep.ask_user({"question": "What do you need me to know?"})
    for c in task.oracle:
        args = dict(c.args)
        for p, ref in c.refs.items():
            args[p] = resolve(ref, results)  # a field of an earlier result, or of one item of a search's result
        results.append(ep.call(c.tool, args).data)
    return answer_in(results[task.answer_step], task.answer_field) if task.answer_step is not None else None


def padded(app: Any, task: Task, rows_per_table: int, seed: int) -> Task | None:
    """``task`` on a state padded to ``rows_per_table`` rows per table with world-like rows.

    Padding rows refer only to other padding rows (no new children of the task's rows),
    and the ground truth is recomputed on the padded state (a search or an aggregate may
    now range over more rows). None when the oracle no longer runs there.
    """
    bp = app.blueprint
    rows = merged(task.state.core, task.state.distractors)
    b = StateBuilder(bp, seed, app.order).use_pool(value_pool(app))
    for ent in bp.entities:
        own = rows.get(ent.name, [])
        b.taken_ids[ent.name] = {r[ent.id_field] for r in own}
        for f in ent.fields:
            if f.unique:
                b.unique_seen[(ent.name, f.name)] = {r[f.name] for r in own}
    pad = b.fill({e.name: max(0, rows_per_table - len(rows.get(e.name, []))) for e in bp.entities})
    full = merged(rows, pad)
    try:
        run = execute(app, full, list(task.oracle))
    except ChainFailed:
        return None
    answer = None
    if task.answer_step is not None and isinstance(run.results[task.answer_step], dict):
        answer = run.results[task.answer_step].get(task.answer_field)
    state = task.state.model_copy(update={"distractors": merged(task.state.distractors, pad)})
    update = {
        "state": state,
        "expected_effects": effects_of(bp, full, run.final, now=app.now).to_dict(),
        "expected_answer": answer,
    }
    return task.model_copy(update=update).sealed()


def eval_rate(app: Any, tasks: list[Task], rounds: int) -> tuple[float, float]:
    prepared = [(t, state_bytes(app, t)) for t in tasks]
    ready = [(t, b, read_rows(open_state(b), app.blueprint)) for t, b in prepared]
    pool = EpisodePool()  # what Corpus.start uses: one warm connection per task state
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for task, data, rows in ready:
            ep = pool.start(app, task, data, seed=1, initial_rows=rows)
            reward = ep.finish(replay(ep, task))
            assert reward.score == 1.0, task.id
        times.append(time.perf_counter() - t0)
    best = min(times)
    return len(ready) / best, statistics.median(len(ready) / x for x in times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default="harbor_market")
    ap.add_argument("--tasks", type=int, default=200, help="task indexes to attempt per depth")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    app = compile_app(catalog.load(args.app), 0)
    graph = build_graph(app)
    for i in range(WARM):  # warm the app's caches (validators, value pools, memoised plans) on other task indexes
        synthesize(app, graph, app_index=0, task_index=10**6 + i, states=1, depth=4, seed=0)
    # the names emails of rows naming nobody are made from (drawn once per process, on first use;
    # an older checkout, run through PYTHONPATH, has none)
    getattr(blueprint_values, "email_names", tuple)()
    out: dict[str, Any] = {"app": args.app, "python": platform.python_version(), "machine": platform.machine()}
    # synthesis first, before the evaluation keeps states and connections alive; S=4 (SynthAPI's best
    # composition): later states reuse the chain and the instruction
    configs = [(args.tasks, 0, 1), (args.tasks, 4, 1), (args.tasks // 2, 0, 4), (args.tasks // 2, 4, 4)]
    measured = synth_rates(app, graph, configs, args.rounds)
    for (n_idx, depth, states), (rates, admitted) in zip(configs, measured):
        best, med = max(rates), statistics.median(rates)
        key = f"synthesis_D{depth}" + ("" if states == 1 else f"_S{states}")
        out[key] = {
            "admitted_per_s_best": round(best, 1),
            "admitted_per_s_median": round(med, 1),
            "admitted": len(admitted),
            "attempted": n_idx,
        }
        if states == 1:
            out[key]["admission_rate"] = round(len(admitted) / n_idx, 3)
        what = f"{len(admitted)}/{n_idx} admitted" if states == 1 else f"{len(admitted)} task records from {n_idx} task indexes"
        print(f"synthesis D={depth} S={states}: {best:.1f} admitted tasks/s (best round), {med:.1f} median; {what}")
    tasks = measured[0][1]  # the D=0, S=1 tasks
    best, med = eval_rate(app, tasks, args.rounds)
    rows = statistics.mean(sum(len(v) for v in t.state.core.values()) for t in tasks)
    out["evaluation"] = {
        "episodes_per_s_best": round(best, 1),
        "episodes_per_s_median": round(med, 1),
        "tasks": len(tasks),
        "mean_core_rows": round(rows, 1),
    }
    print(f"evaluation: {best:.0f} episodes/s (best round), {med:.0f} median; {len(tasks)} tasks")
    big = [p for i, t in enumerate(tasks) if (p := padded(app, t, PAD_ROWS, seed=i)) is not None]
    best, med = eval_rate(app, big, args.rounds)
    rows = statistics.mean(sum(len(v) for v in merged(t.state.core, t.state.distractors).values()) for t in big)
    out["evaluation_100_rows"] = {
        "episodes_per_s_best": round(best, 1),
        "episodes_per_s_median": round(med, 1),
        "tasks": len(big),
        "skipped": len(tasks) - len(big),
        "mean_rows_per_table": round(rows / len(app.blueprint.entities), 1),
    }
    print(f"evaluation, ~{PAD_ROWS} rows per table: {best:.0f} episodes/s (best round), {med:.0f} median; {len(big)} tasks")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
