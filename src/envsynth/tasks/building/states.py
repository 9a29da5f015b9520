"""Stage 4, states and distractors: the core -> S task states, each with distractors, run by the oracle.

State 0 is the core itself; state s > 0 is a copy of it under fresh ids. Each state gets
up to 3 draws of distractors; a draw is kept when the chain runs on it (the ground-truth
run, and the admission replay under another episode seed) and the judge accepts it: in
state 0 the describe stage (every target gets a description no other row shares), in
later states the check that state 0's descriptions still pick exactly their rows (the
instruction is fixed by then). State 0 runs in the instantiation workspace, pruned to the
core, by inserts and deletes instead of a fresh load.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, id_fields, ref_fields
from envsynth.tasks.building.conditional import telling_state
from envsynth.tasks.building.core import Core
from envsynth.tasks.building.distractors import add_distractors
from envsynth.tasks.building.instantiate import ChainFailed, Run, Workspace, execute
from envsynth.tasks.building.world import Instance, value_pool
from envsynth.tasks.model import Call, Rejection
from envsynth.tasks.state import copy_rows, merged
from envsynth.tasks.wording.describe import Description
from envsynth.tasks.wording.instruction import refers_to

ATTEMPTS = 3  # draws of distractors per state

Descriptions = dict[tuple[str, Any], Description]
Describer = Callable[[Rows, list[tuple[str, Any]], random.Random], Descriptions | None]


@dataclass
class TaskStateDraw:
    """One task state, run: its core, the oracle calls and targets under its ids, its distractors.

    ``rng`` is the state's random stream (state 0's goes on into the describe and scenario
    stages); ``run`` is the ground-truth run on ``full`` (core plus distractors), ``check``
    the admission replay (``run`` itself for a chain whose result no episode seed changes).
    ``workspace`` has ``full`` loaded until :meth:`close` (later stages replay chains on it).
    ``mapping`` renames state 0's core ids to this state's ((table, state-0 id) -> id; empty for state 0).
    """

    index: int
    rng: random.Random
    core: Rows
    calls: list[Call]
    targets: list[tuple[str, Any]]
    extra: Rows
    per_level: dict[str, int]
    full: Rows
    run: Run
    check: Run
    descs: Descriptions
    workspace: Workspace | None = None
    _open: ExitStack = field(default_factory=ExitStack, repr=False)
    mapping: dict[tuple[str, Any], Any] = field(default_factory=dict)

    def close(self) -> None:
        """Let the state's workspace go (again: no effect)."""
        self.workspace = None
        self._open.close()


@dataclass
class _Frame:
    """One state before its distractors: its core, calls and targets under the state's ids."""

    index: int
    rng: random.Random
    core: Rows
    calls: list[Call]
    targets: list[tuple[str, Any]]
    bound: frozenset[tuple[str, Any]]
    mapping: dict[tuple[str, Any], Any] = field(default_factory=dict)


def draw_state(
    inst: Instance,
    core: Core,
    index: int,
    descs: Descriptions | None,
    describer: Describer,
    unsaid: dict[tuple[str, Any], tuple[str, ...]] | None = None,
) -> TaskStateDraw | Rejection:
    """Task state ``index``: distractors drawn until the chain runs and the judge accepts (up to 3 draws).

    ``core`` is the core stage's :class:`~envsynth.tasks.building.core.Core`; state 0 may widen its rows
    to all of s0 (when the chain does not run on the core alone). ``descs`` is None for state 0
    (``describer`` makes them) and state 0's descriptions for the others. ``unsaid`` maps a
    target (by its state-0 key) to fields no description of it may use (the answer a question
    asks for): no distractor differs from it only there.
    """
    frame = _frame(inst, core, index)
    why, detail = "description_ambiguous_in_state", ""
    attempt = -1
    while attempt < ATTEMPTS - 1:
        attempt += 1
        extra, per_level = _distractors(inst, core, frame, attempt, descs, unsaid or {})
        full = merged(frame.core, extra)
        try:
            runs = _ground_truth(inst, core, frame.calls, full, extra)
        except ChainFailed as exc:
            if index == 0 and not core.verified and _widen(inst, core, frame, extra):
                attempt -= 1
                continue
            why, detail = "chain_broken_by_distractors", str(exc)
            continue
        if isinstance(runs, Rejection):
            return runs
        run, check, ws, opened = runs
        judged = _judge(inst.plan.app, frame, full, descs, describer)
        if isinstance(judged, str):
            opened.close()
            why, detail = judged, ""
            continue
        return TaskStateDraw(
            index, frame.rng, frame.core, frame.calls, frame.targets, extra, per_level, full, run, check, judged, ws, opened, frame.mapping
        )
    return inst.plan.reject(why, detail)


def _frame(inst: Instance, core: Core, index: int) -> _Frame:
    """State ``index``'s core, calls, targets and bound rows (fresh ids for every state but 0)."""
    rng = random.Random(inst.plan.base * 31 + index)
    if index > 0 and inst.ws0.conn is not None:
        inst.ws0.close()
        core.derived = False
    if index == 0:
        return _Frame(0, rng, core.rows, inst.calls, list(core.targets), core.acted_on)
    rows, mapping = _remap_ids(inst.plan.app, core.rows, rng)
    calls = [remap_call(inst.plan.app, c, mapping) for c in inst.calls]
    cond = inst.conditional
    if cond is not None and not cond.acts(index):  # the row in a state the write refuses: the read alone (building/conditional.py)
        key = mapping[(cond.entity, cond.key)]
        rows = telling_state(cond, rows, key, inst.plan.app.blueprint.entity(cond.entity).id_field)
        calls = calls[:1]
    targets = [(t, mapping.get((t, k), k)) for t, k in core.targets]
    bound = frozenset((t, mapping.get((t, k), k)) for t, k in core.acted_on)
    return _Frame(index, rng, rows, calls, targets, bound, mapping)


def _distractors(
    inst: Instance, core: Core, frame: _Frame, attempt: int, descs: Descriptions | None, unsaid: dict[tuple[str, Any], tuple[str, ...]]
) -> tuple[Rows, dict[str, int]]:
    """Draw ``attempt`` of the state's distractors (none that a fixed description would also match)."""
    app, plan = inst.plan.app, inst.plan
    extra, per_level = add_distractors(
        app.blueprint,
        app.order,
        frame.core,
        frame.targets,
        plan.coords.distractors,
        plan.base * 7 + frame.index * 101 + attempt,
        value_pool(app),
        core.guarded,
        frame.bound,
        tuple(unsaid.get(tk, ()) for tk in core.targets),
    )
    if descs is not None:  # the instruction is fixed: drop distractors its descriptions would also match
        extra = _without_matches(app, frame.core, extra, [descs[tk] for tk in core.targets])
    fe = inst.for_each
    if fe is not None:  # "all my pending orders": no distractor may be one more of them (tasks/building/foreach.py)
        owner = frame.mapping.get((fe.owner_table, fe.owner), fe.owner) if frame.mapping else fe.owner
        extra = _without_matches(app, frame.core, extra, [Description(fe.entity, fe.criteria(owner))])
    if inst.comparison is not None:  # "my most recent order": no distractor of the owner as recent (building/siblings.py)
        extra = _without_rivals(app, frame, extra, inst.comparison)
    return extra, per_level


def _without_rivals(app: App, frame: _Frame, extra: Rows, cmp: Any) -> Rows:
    """``extra`` without the owner's rows of the compared table that are as recent (or as old) as the compared row."""
    ids = id_fields(app.blueprint)
    key = frame.mapping.get((cmp.table, cmp.key), cmp.key) if frame.mapping else cmp.key
    row = next((r for r in frame.core.get(cmp.table, []) if r[ids[cmp.table]] == key), None)
    if row is None or not extra.get(cmp.table):
        return extra
    rivals = {(cmp.table, r[ids[cmp.table]]) for r in extra[cmp.table] if cmp.beaten(r, row.get(cmp.owner), row.get(cmp.date))}
    return _dropping(app, extra, rivals) if rivals else extra


def _widen(inst: Instance, core: Core, frame: _Frame, extra: Rows) -> bool:
    """After the first failed run of state 0: when the chain does not run on the core alone, widen it to all of s0.

    True when widened (draw again); False when the distractors broke the chain.
    """
    core.verified = True
    calls = inst.calls
    if extra and (_runs_in(inst.ws0, calls) if core.derived else _runs(inst.plan.app, core.rows, calls)):
        return False
    core.rows = frame.core = copy_rows(inst.s0)  # pruning broke the chain: keep all of s0
    if core.derived:
        inst.ws0.unprune(core.rows)
    return True


def _ground_truth(
    inst: Instance, core: Core, calls: list[Call], full: Rows, extra: Rows
) -> tuple[Run, Run, Workspace, ExitStack] | Rejection:
    """The ground-truth run on ``full``, the admission replay, and the workspace they ran in, left open with ``full``
    loaded until the returned stack is closed (ChainFailed when the chain breaks).

    Custom code may draw anything from the episode's random stream, so such a chain is
    replayed under seed 1. Generated (archetype) tools draw only the ids of the rows they
    insert (ctx.new_id), and effects and answers leave generated ids out, so their chain
    scores the same under every seed unless an argument hard-codes an id the chain itself
    drew: that is checked on the ground-truth run instead (see :func:`_drawn_ids_in_arguments`);
    a chain without inserts runs the same under every seed.
    """
    app, plan = inst.plan.app, inst.plan
    seeded = any(app.spec_by_name[c.tool].code is not None for c in calls)
    creates = sorted({t for c in calls for t in app.spec_by_name[c.tool].creates})
    opened = ExitStack()
    ws = opened.enter_context(inst.ws0.adding(full, extra) if core.derived else Workspace(app, full))
    with opened:  # closed on any way out but the last
        run = ws.run(calls)
        try:
            check = ws.run(calls, seed=1) if seeded else run
        except ChainFailed as exc:  # the oracle depends on the ids its own calls drew: other distractors won't help
            return plan.reject("oracle_fails", f"with another episode seed: {exc}")
        drawn = _drawn_ids_in_arguments(app, calls, full, run.final, creates) if creates and not seeded else []
        if drawn:
            return plan.reject("oracle_fails", f"an argument is an id the chain itself drew: {drawn[0]}")
        return run, check, ws, opened.pop_all()


def _judge(app: App, frame: _Frame, full: Rows, descs: Descriptions | None, describer: Describer) -> Descriptions | str:
    """State 0: the describer's descriptions of the targets; later states: whether ``descs`` still pick their rows."""
    if descs is None:
        made = describer(full, frame.targets, frame.rng)
        return made if made is not None else "target_not_describable"
    ids = id_fields(app.blueprint)
    for d, (t, k) in zip(descs.values(), frame.targets, strict=True):  # descs are in the order of state 0's targets
        hits = d.matching(app.blueprint, full)  # rows of table t: a target is described in its own table
        if len(hits) != 1 or hits[0][ids[t]] != k:
            return "description_ambiguous_in_state"
    return descs


def _without_matches(app: App, core: Rows, extra: Rows, descs: list[Description]) -> Rows:
    """``extra`` minus rows that a description matches, and rows that refer to those."""
    bp = app.blueprint
    ids = id_fields(bp)
    full = merged(core, extra)
    dropped: set[tuple[str, Any]] = set()
    for d in descs:
        idf = ids[d.entity]
        if candidates := extra.get(d.entity):
            dropped.update((d.entity, r[idf]) for r in d.matching(bp, full, candidates))
    if not dropped:
        return {t: list(rows) for t, rows in extra.items()}
    return _dropping(app, extra, dropped)


def _dropping(app: App, extra: Rows, dropped: set[tuple[str, Any]]) -> Rows:
    """``extra`` minus the ``dropped`` rows and the rows that refer to those (through any chain of references)."""
    bp = app.blueprint
    ids = id_fields(bp)
    referring = [
        (ent.name, ids[ent.name], refs, rows) for ent in bp.entities if (refs := ref_fields(ent)) and (rows := extra.get(ent.name))
    ]
    changed = True
    while changed:
        changed = False
        for table, idf, refs, rows in referring:
            for r in rows:
                key = (table, r[idf])
                if key not in dropped and any((ref, r.get(name)) in dropped for name, ref in refs):
                    dropped.add(key)
                    changed = True
    return {t: [r for r in rows if (t, r[ids[t]]) not in dropped] for t, rows in extra.items()}


def _drawn_ids_in_arguments(app: App, calls: list[Call], before: Rows, after: Rows, tables: list[str]) -> list[Any]:
    """Literal arguments of ``calls`` that are ids of rows the run (``before`` -> ``after``) inserted into ``tables``.

    Such an oracle would name a row by an id another episode seed would not draw.
    """
    ids = id_fields(app.blueprint)
    drawn = set()
    for t in tables:
        key = ids[t]
        drawn |= {r[key] for r in after.get(t, ())} - {r[key] for r in before.get(t, ())}
    return [v for c in calls for v in c.args.values() if isinstance(v, str) and v in drawn]


def _runs(app: App, rows: Rows, calls: list[Call]) -> bool:
    """Whether the chain runs on ``rows`` with every call a Success."""
    try:
        execute(app, rows, calls)
    except ChainFailed:
        return False
    return True


def _runs_in(ws: Workspace, calls: list[Call]) -> bool:
    """Whether the chain runs on the workspace's loaded rows with every call a Success."""
    try:
        ws.run(calls)
    except ChainFailed:
        return False
    return True


def _remap_ids(app: App, core: Rows, rng: random.Random) -> tuple[Rows, dict[tuple[str, Any], Any]]:
    """A copy of the core rows under fresh ids (references follow)."""
    mapping: dict[tuple[str, Any], Any] = {}
    tables = [(ent, rows) for ent in app.blueprint.entities if (rows := core.get(ent.name))]
    below = rng._randbelow  # randrange(100000, 1000000) is 100000 + _randbelow(900000)
    for ent, rows in tables:
        taken: set[str] = set()
        name, idf, prefix = ent.name, ent.id_field, ent.prefix
        for r in rows:
            new = f"{prefix}_{100000 + below(900000)}"
            while new in taken:
                new = f"{prefix}_{100000 + below(900000)}"
            taken.add(new)
            mapping[(name, r[idf])] = new
    out: Rows = {}
    for ent, rows in tables:
        name, idf, refs = ent.name, ent.id_field, ref_fields(ent)
        copies = out[name] = []
        for r in rows:
            n = dict(r)
            n[idf] = mapping[(name, r[idf])]
            for f, ref in refs:
                v = n.get(f)
                if v is not None:
                    n[f] = mapping.get((ref, v), v)
            copies.append(n)
    return out, mapping


def remap_call(app: App, call: Call, mapping: dict[tuple[str, Any], Any]) -> Call:
    """``call`` with the ids of rows ``mapping`` renames renamed (``call`` itself when it passes none)."""
    if not mapping or not call.args:
        return call
    args = call.args
    changed: dict[str, Any] = {}
    for name, kind, what in _id_params(app, call.tool):
        if name not in args:
            continue
        value = args[name]
        if kind == "ref":  # a row parameter (an id, or a list of ids)
            new = _remapped(mapping, what, value)
        elif kind == "items":  # a list of objects: their ids
            if not isinstance(value, list):
                continue
            new = [
                {k: _remapped(mapping, what[k], v) if k in what else v for k, v in item.items()} if isinstance(item, dict) else item
                for item in value
            ]
        elif isinstance(value, str):  # a search's filter on a row (the reviews of a product)
            new = mapping.get((what, value), value)
        else:
            continue
        if new != value:
            changed[name] = new
    return call.model_copy(update={"args": {**args, **changed}}) if changed else call


def _id_params(app: App, tool: str) -> list[tuple[str, str, Any]]:
    """(parameter, how it carries ids, the table or tables) of each parameter of ``tool`` that can carry a row's id."""
    return app.index.of(_find_id_params, app, tool)


def _find_id_params(app: App, tool: str) -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for p in app.spec_by_name[tool].params:
        table = refers_to(app.blueprint, p)
        if p.ref:
            out.append((p.name, "ref", p.ref))
        elif p.item_fields:
            out.append((p.name, "items", {f.name: f.ref for f in p.item_fields if f.ref}))
        elif table is not None:
            out.append((p.name, "filter", table))
    return out


def _remapped(mapping: dict[tuple[str, Any], Any], table: str, value: Any) -> Any:
    """``value`` (an id, or a list of ids) with the ids of ``table`` the mapping renames renamed."""
    if isinstance(value, list):
        return [mapping.get((table, v), v) for v in value]
    return mapping.get((table, value), value)
