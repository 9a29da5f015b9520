"""A requester the agent can find: namesakes the request does not tell apart refuse the task."""

from __future__ import annotations

from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.admission.admit import admit
from envsynth.tasks.admission.findable import requester_findable
from envsynth.tasks.state import merged

NAME = "harbor_market"


@cache
def _app() -> App:
    return compile_app(catalog.load(NAME), 0)


def _requester_task() -> tuple[Task, str, dict]:
    """A task whose requester is a row of s0 with a name field: the task, the table and the row."""
    app = _app()
    graph = build_graph(app)
    for t in range(40):
        made = synthesize(app, graph, app_index=catalog.names().index(NAME), task_index=t, states=1, depth=2)
        if isinstance(made, Rejection):
            continue
        task = made[0]
        for table, rows in merged(task.state.core, task.state.distractors).items():
            for row in rows:
                if task.user.name in row.values() and task.user.email and task.user.email in row.values():
                    return task, table, row
    raise AssertionError("no task with a requester row in the first 40 indexes")


def _with_namesake(s0: dict, table: str, row: dict, **changes: object) -> dict:
    twin = {**row, **changes}
    return {**s0, table: [*s0[table], twin]}


def test_a_namesake_the_request_tells_apart_by_email_is_findable() -> None:
    app = _app()
    task, table, row = _requester_task()
    s0 = merged(task.state.core, task.state.distractors)
    assert requester_findable(app.blueprint, task, s0)
    key = app.blueprint.entity(table).fields[0].name
    twin = _with_namesake(s0, table, row, **{key: "zz_twin", "email": "other.person@example.org"})
    assert task.user.email.lower() in task.instruction.lower()
    assert requester_findable(app.blueprint, task, twin)


def test_a_namesake_nothing_tells_apart_refuses_the_task() -> None:
    app = _app()
    task, table, row = _requester_task()
    s0 = merged(task.state.core, task.state.distractors)
    key = app.blueprint.entity(table).fields[0].name
    # the same person twice but for the key: nothing the request says picks one of them
    twin = _with_namesake(s0, table, row, **{key: "zz_twin"})
    assert not requester_findable(app.blueprint, task, twin)
    assert admit(app, task, twin) == "requester_not_findable"
    # the same request without the email cannot tell even a namesake with another email apart
    other = _with_namesake(s0, table, row, **{key: "zz_twin", "email": "other.person@example.org"})
    bare = task.model_copy(update={"instruction": task.instruction.lower().replace(task.user.email.lower(), "my address")})
    assert not requester_findable(app.blueprint, bare, other)


def test_no_admitted_catalogue_task_has_an_untold_namesake() -> None:
    app = _app()
    graph = build_graph(app)
    seen = 0
    for t in range(30):
        made = synthesize(app, graph, app_index=catalog.names().index(NAME), task_index=t, states=2, depth=4)
        if isinstance(made, Rejection):
            continue
        for task in made:
            seen += 1
            assert requester_findable(app.blueprint, task, merged(task.state.core, task.state.distractors)), task.id
    assert seen >= 20
