"""Synthesized tasks for the task writer's and the task stage's tests, and rewrites of them built from their own values.

The tests need a mixed task whose request changes a row named by its date and time
with a value of the user's choosing (an enum argument: a carrier, a payment method)
and then asks about that row. Synthesis decides which task indices give one, so the
task is found, never assumed, and every rewrite is made from the task's own required
values (:func:`~envsynth.llmbuild.writer.required_values`).
"""

from __future__ import annotations

from collections.abc import Callable

from envsynth.graph import ToolGraph
from envsynth.llmbuild.writer import Value, required_values
from envsynth.runtime.app import App
from envsynth.tasks import Task, synthesize
from envsynth.tasks.building.instantiate import execute
from envsynth.tasks.model import Call
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged
from envsynth.tasks.wording.describe import human, noun
from envsynth.tasks.wording.instruction import ID_PATTERN

SCAN = 400  # task indices looked at, at most


def find_tasks(app: App, graph: ToolGraph, want: Callable[[Task], bool], *, limit: int = SCAN) -> list[Task]:
    """The two states of the first task index (of ``limit``) whose state 0 ``want`` accepts."""
    for i in range(limit):
        made = synthesize(app, graph, app_index=0, task_index=i, states=2, depth=1, seed=0)
        if isinstance(made, list) and want(made[0]):
            return made
    raise AssertionError(f"no such task in the first {limit} task indices")


def acts(app: App, task: Task) -> list[Call]:
    """The oracle's calls from its first write on (the lookups that find the rows come before it)."""
    first = next((i for i, c in enumerate(task.oracle) if app.spec_by_name[c.tool].mode == "write"), len(task.oracle))
    return task.oracle[first:]


def chosen_value(app: App, task: Task) -> Value | None:
    """The required value the first write's enum argument gives (the carrier, the payment method), if the text names it."""
    call = acts(app, task)[0]
    texts = {v.norm: v for v in required_values(app, task) if v.kind == "text"}
    for p in app.spec_by_name[call.tool].params:
        given = call.args.get(p.name)
        if p.enum and isinstance(given, str) and (v := texts.get(" ".join(given.replace("_", " ").lower().split()))):
            return v
    return None


def row_id(app: App, task: Task) -> str:
    """The internal id of the row the first write changes (what a rewrite must never show), as the oracle finds it."""
    results = execute(app, merged(task.state.core, task.state.distractors), list(task.oracle), seed=1).results
    call = acts(app, task)[0]
    args = {**call.args, **{p: resolve(r, results) for p, r in call.refs.items()}}
    spec = app.spec_by_name[call.tool]
    return next(
        str(args[p.name]) for p in spec.params if (p.ref or p.semantic in ("id", "ref")) and ID_PATTERN.fullmatch(str(args.get(p.name, "")))
    )


def is_write_then_get(app: App, task: Task) -> bool:
    """Writes on a row named by its date and time, the first with a chosen value, no number, then a question about that row."""
    calls = acts(app, task)
    if task.kind != "mixed" or len(calls) < 2 or task.answer_step != len(task.oracle) - 1:
        return False
    specs = [app.spec_by_name[c.tool] for c in calls]
    first, last = specs[0], specs[-1]
    if first.mode != "write" or last.query is None or last.query.op != "get" or any(s.entity != first.entity for s in specs):
        return False
    if any(isinstance(v, int | float) and not isinstance(v, bool) for c in calls for v in c.args.values()):
        return False
    kinds = {v.kind for v in required_values(app, task)}
    return {"date", "time"} <= kinds and chosen_value(app, task) is not None


def shown(app: App, task: Task, kind: str) -> str:
    """How the procedural instruction shows its (first) value of ``kind`` (a sentence's full stop left out)."""
    return next(v.shown for v in required_values(app, task) if v.kind == kind).rstrip(".")


def norm(app: App, task: Task, kind: str) -> str:
    """The normal form of the instruction's (first) value of ``kind``: ISO date, 24-hour time."""
    return next(v.norm for v in required_values(app, task) if v.kind == kind)


def other_values(app: App, task: Task) -> str:
    """The other required values (the user's email, a quoted tracking number...), as a parenthesis, or ""."""
    value = chosen_value(app, task)
    rest = [v.shown for v in required_values(app, task) if v.kind not in ("date", "time") and v != value]
    return f" ({', '.join(rest)})" if rest else ""


def asked(task: Task) -> str:
    """The answer field in words ("payment method")."""
    return human(task.answer_field or "")


def rewrites(app: App, task: Task) -> dict[str, str]:
    """A good rewrite of ``task``'s instruction, the same leaking the row's id, and the same without the chosen value."""
    value = chosen_value(app, task)
    assert value is not None, task.instruction
    row = noun(app.blueprint.entity(app.spec_by_name[acts(app, task)[0].tool].entity))  # "order"
    good = (
        f"Hi, {task.user.name} here. It's about my {row} from {shown(app, task, 'date')} at {shown(app, task, 'time')}"
        f"{other_values(app, task)}. Could you see to it with {value.shown}? Once that's done, which {asked(task)} does it show?"
    )
    out = {
        "good": good,
        "leak": good.replace(f"my {row} from", f"my {row} {row_id(app, task)} from"),
        "dropped": good.replace(f" with {value.shown}", ""),
    }
    assert len(set(out.values())) == 3, out
    return out
