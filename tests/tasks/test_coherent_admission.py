"""Admission refuses a task whose initial state a reader would find odd (the state linter, docs/tasks.md 7): a flight
marked landed that departs after the clock, a subscriber's two lines with one nickname. Every catalogue task's state is
linted in the task contract (tests/tasks/test_task_contract.py)."""

from __future__ import annotations

from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.admission.admit import admit
from envsynth.tasks.admission.coherence import first_defect
from envsynth.tasks.model import TaskState
from envsynth.tasks.state import merged


@cache
def _app(name: str) -> App:
    return compile_app(catalog.load(name), 0)


def _task_with(name: str, table: str) -> Task:
    """An admitted task of app ``name`` whose state holds rows of ``table``."""
    app = _app(name)
    graph = build_graph(app)
    for t in range(40):
        made = synthesize(app, graph, app_index=catalog.names().index(name), task_index=t, states=1, depth=2)
        if not isinstance(made, Rejection) and merged(made[0].state.core, made[0].state.distractors).get(table):
            return made[0]
    raise AssertionError(f"no task of {name} with {table} rows in the first 40 indexes")


def _changed(task: Task, table: str, change: dict) -> tuple[Task, dict]:
    """``task`` with the first ``table`` row of its state changed (``change``: field -> value), and the state as rows."""
    core = {t: [dict(r) for r in rows] for t, rows in task.state.core.items()}
    extra = {t: [dict(r) for r in rows] for t, rows in task.state.distractors.items()}
    part = core if core.get(table) else extra
    part[table][0].update(change)
    state = TaskState(core=core, distractors=extra, distractor_depth=task.state.distractor_depth)
    odd = task.model_copy(update={"state": state})
    return odd, merged(core, extra)


def test_a_landed_flight_that_departs_after_the_clock_refuses_the_task() -> None:
    app = _app("northstar_air")
    task = _task_with("northstar_air", "flight")
    s0 = merged(task.state.core, task.state.distractors)
    assert first_defect(task, app.blueprint) is None
    assert admit(app, task, s0) is None
    odd, odd_s0 = _changed(task, "flight", {"status": "landed", "departure_date": "2026-04-10", "departs_at": "2026-04-10T09:00:00"})
    assert first_defect(odd, app.blueprint).startswith("completed_in_future: flight ")
    assert admit(app, odd, odd_s0) == "incoherent_state"


def test_two_lines_of_one_subscriber_with_one_nickname_refuse_the_task() -> None:
    app = _app("tidewave_mobile")
    task = _task_with("tidewave_mobile", "phone_line")
    rows = merged(task.state.core, task.state.distractors)["phone_line"]
    twin = {**rows[0], "line_id": "lin_000001", "phone_number": "+1 555 010 0001"}
    part = "core" if task.state.core.get("phone_line") else "distractors"
    tables = {t: list(r) for t, r in getattr(task.state, part).items()}
    tables["phone_line"] = [*tables["phone_line"], twin]
    state = task.state.model_copy(update={part: tables})
    odd = task.model_copy(update={"state": state})
    assert first_defect(odd, app.blueprint).startswith("repeated_names_per_owner: phone_line: 2 rows of ")
    assert admit(app, odd, merged(state.core, state.distractors)) == "incoherent_state"


def test_a_refused_state_says_what_the_linter_found(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """attempts.jsonl names the defect of each ``incoherent_state`` attempt ("derived_arithmetic: customer_order ...")."""
    import json

    from envsynth.corpus import build_corpus
    from envsynth.tasks.admission.coherence import CLASSES

    out = build_corpus(tmp_path / "c", blueprints=[catalog.load("juniper_goods")], tasks_per_app=12, states=2, distractors=4).path
    lines = [json.loads(x) for x in (out / "tasks" / "juniper_goods" / "attempts.jsonl").read_text().splitlines()]
    refused = [a for a in lines if a.get("reason") == "incoherent_state"]
    assert refused, "juniper_goods refuses some states (its order lines do not add up to a given order's total)"
    assert all(a.get("detail", "").split(":")[0] in CLASSES for a in refused), refused
