"""Stage 2, instantiate: a plan -> a small world, arguments and an initial state s0 the chain runs on.

The world holds only the tables the chain's tools touch and the tables those refer to; which
tables these are is memoised per app and chain of tool specs (:func:`per_chain`), and the
value pool and staff names are drawn once per app object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from envsynth.blueprint.models import Blueprint, Workflow
from envsynth.blueprint.values import ValueMaker
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, StateBuilder, ValuePool, ref_fields
from envsynth.tasks.building.instantiate import ChainFailed, Workspace, _instantiate
from envsynth.tasks.model import Call, Rejection, TaskKind
from envsynth.tasks.planning.chain import Step, _reader
from envsynth.tasks.planning.plan import Plan

WORLD_ROWS = 2
STAFF_NAMES = 64
STEP_ATTEMPTS = 3  # fixture-solver attempts per chain step (a 4th admits almost nothing more)
_T = TypeVar("_T")


@dataclass
class Instance:
    """An instantiated chain: s0, the oracle calls, and per step the pre-existing rows it binds.

    ``ws0`` is the workspace the chain was instantiated in, still open: state 0's task state
    is made there (s0 minus the pruned rows plus the distractors) by deletes and inserts
    instead of loading every row again. The caller closes it.
    """

    plan: Plan
    ws0: Workspace
    s0: Rows
    calls: list[Call]
    bound: list[dict[str, Any]]
    for_each: Any = None  # a ForEach goal (tasks/building/foreach.py) once the core stage made one
    conditional: Any = None  # a Conditional goal (tasks/building/conditional.py) once the core stage made one
    comparison: Any = None  # a row named by comparison (tasks/building/siblings.py): "my most recent order"


def instantiate_plan(plan: Plan) -> Instance | Rejection:
    """Draw the chain's world and solve the chain's arguments and s0 in it (reason ``not_instantiable``).

    When a write that follows up on earlier writes cannot be instantiated (its pre-conditions
    conflict with what the steps before it need), the goal stops before it: the chain's writes
    up to that step, then for a mixed task a read drawn anew on their rows (see :func:`shortened`).
    """
    made = _instantiate_plan(plan)
    while isinstance(made, ChainFailed):
        short = shortened(plan, made.step)
        if short is None:
            return plan.reject("not_instantiable", str(made))
        plan = replace(plan, steps=short[0], kind=short[1], workflow=short[2])
        made = _instantiate_plan(plan)
    return made


def shortened(plan: Plan, failed: int | None) -> tuple[list[Step], TaskKind, Workflow | None] | None:
    """The plan's steps, kind and workflow with its writes cut before step ``failed``; None when no write
    before it is left to keep (or the failed step is no later write of the chain)."""
    steps = plan.steps
    if failed is None or failed < 1 or failed >= len(steps) or steps[failed].spec.mode != "write":
        return None
    kept = steps[:failed]
    if plan.kind == "action":
        return kept, "action", None
    reader = _reader(plan.app, plan.rng, kept)  # the read of a mixed task follows up on a row the kept writes touched
    return ([*kept, reader], "mixed", None) if reader is not None else (kept, "action", None)


def _instantiate_plan(plan: Plan) -> Instance | ChainFailed:
    app = plan.app
    world = StateBuilder(app.blueprint, plan.base, app.order).use_pool(value_pool(app))
    rows = world.fill(dict.fromkeys(world_tables(app, plan.steps), WORLD_ROWS))
    try:
        ws0 = Workspace(app, rows)  # the builder's fresh rows: nothing else holds them
    except ChainFailed as exc:
        return exc
    try:
        s0, calls, bound = _instantiate(app, ws0, plan.steps, plan.base, STEP_ATTEMPTS, value_pool(app))
    except ChainFailed as exc:
        ws0.close()
        return exc
    return Instance(plan, ws0, s0, calls, bound)


def value_pool(app: App) -> ValuePool:
    """Pre-drawn rows whose plain values seed task worlds (drawn once per app object, kept on its index)."""
    return app.index.of(_draw_value_pool, app)


def _draw_value_pool(app: App) -> ValuePool:
    return ValuePool(StateBuilder(app.blueprint, 7919, app.order).fill({e.name: 24 for e in app.blueprint.entities}))


def staff_names(app: App) -> list[str]:
    """Pre-drawn person names for staff users (drawn once per app object, kept on its index; Faker is slow per call)."""
    return app.index.of(_draw_staff_names, app)


def _draw_staff_names(app: App) -> list[str]:
    values = ValueMaker(app.blueprint, 104729)
    return [values.person_name() for _ in range(STAFF_NAMES)]


def per_chain(app: App, steps: list[Step], memo_name: str, make: Callable[[], _T]) -> _T:
    """``make()``, kept on the app's index per ``memo_name`` and chain of tool specs (specs are not changed)."""
    specs = tuple(st.spec for st in steps)
    memo: dict[tuple[str, ...], tuple[tuple[Any, ...], _T]] = app.index.of(_chain_memo, app, memo_name)
    key = tuple(s.name for s in specs)
    hit = memo.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], specs, strict=True)):
        hit = memo[key] = (specs, make())  # specs of another app under the same names are not taken for these
    return hit[1]


def _chain_memo(app: App, memo_name: str) -> dict[tuple[str, ...], tuple[tuple[Any, ...], Any]]:
    """A new, empty memo of :func:`per_chain` (one per app and ``memo_name``)."""
    return {}


def world_tables(app: App, steps: list[Step]) -> list[str]:
    """Tables the chain's tools touch (read, write, bind, count), and the tables they refer to.

    Rows of other tables could never be bound, read or kept in the core, so the world
    the chain is instantiated in leaves them out. Memoised per app and chain of specs.
    """
    return list(per_chain(app, steps, "_world_tables_memo", lambda: tuple(_find_world_tables(app, steps))))


def _find_world_tables(app: App, steps: list[Step]) -> list[str]:
    bp = app.blueprint
    reach = _reachable(bp)
    out: set[str] = set()
    for st in steps:
        spec = st.spec
        touched = {spec.entity, *spec.reads, *spec.writes, *spec.creates, *spec.deletes, *(b.entity for b in spec.bindings)}
        if spec.query is not None:
            touched.add(spec.query.entity)
        for t in touched:
            out |= reach.get(t, ())
    return [e.name for e in bp.entities if e.name in out]


def _reachable(bp: Blueprint) -> dict[str, frozenset[str]]:
    """Table -> itself and the tables its rows refer to, directly or through others (kept on the blueprint's index)."""
    return bp.index.of(_build_reachable, bp)


def _build_reachable(bp: Blueprint) -> dict[str, frozenset[str]]:
    out = {}
    for ent in bp.entities:
        todo, seen = {ent.name}, set()
        while todo:
            t = todo.pop()
            seen.add(t)
            todo |= {ref for _, ref in refs_of(bp)[t] if ref not in seen}
        out[ent.name] = frozenset(seen)
    return out


def refs_of(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    """Table -> (field, referenced table) of its ref fields (kept on the blueprint's index)."""
    return bp.index.of(_build_refs, bp)


def _build_refs(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    return {e.name: ref_fields(e) for e in bp.entities}
