"""Task synthesis: plan a chain, build s0, add distractors, write the instruction, admit.

``synthesize`` is pure and deterministic in its arguments: one task index of one app
gives either S admitted tasks (one per initial state, same instruction) or a Rejection
with the reason.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

from envsynth.blueprint.expr import parse
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.values import ValueMaker
from envsynth.graph import expand_subgraph, missing_inputs
from envsynth.graph.model import ToolGraph
from envsynth.runtime.app import App
from envsynth.runtime.reward import Effects, compare, effects_of
from envsynth.runtime.state import Rows, StateBuilder, ValuePool, id_fields, ref_fields
from envsynth.tasks.chain import Step, plan_chain
from envsynth.tasks.describe import Description, describe
from envsynth.tasks.distractors import add_distractors
from envsynth.tasks.instantiate import ChainFailed, Run, Workspace, _instantiate, execute
from envsynth.tasks.instruction import (
    Phraser,
    compose,
    greeting,
    identity_fields,
    leaks_id,
    profile,
)
from envsynth.tasks.model import Call, Coordinates, Rejection, Task, TaskKind, TaskState
from envsynth.tasks.oracle import oracle_program
from envsynth.tasks.policy import shape as shape_policy  # POLICY HOOK (import)
from envsynth.tasks.scenario import owned, owners, people_in_filters, reason_for, scenario_of
from envsynth.tasks.solvable import lookups
from envsynth.tasks.state import copy_rows, count_rows, merged

KINDS: tuple[tuple[TaskKind, float], ...] = (("action", 0.55), ("info", 0.2), ("mixed", 0.25))
WORLD_ROWS = 2
MIN_VISIBLE = 20
STAFF_NAMES = 64
STEP_ATTEMPTS = 3  # fixture-solver attempts per chain step (a 4th admits almost nothing more)
_T = TypeVar("_T")
ANSWER_TYPES = ("money", "quantity", "int", "float", "enum", "state", "date", "string", "name", "email", "company")


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
    return [values.fake("name") for _ in range(STAFF_NAMES)]


def task_seed(seed: int, app_index: int, task_index: int) -> int:
    return (seed * 1_000_003 + app_index) * 1_000_033 + task_index


def synthesize(
    app: App, graph: ToolGraph, *, app_index: int, task_index: int, states: int = 1, depth: int = 0, seed: int = 0
) -> list[Task] | Rejection:
    """Synthesize the S states of task ``task_index`` of an app.

    Returns:
        S admitted tasks (``coordinates.state`` = 0..S-1, one instruction), or a Rejection.
    """
    base = task_seed(seed, app_index, task_index)
    rng = random.Random(base)
    coords = Coordinates(app=app_index, task=task_index, state=0, distractors=depth)

    def reject(reason: str, detail: str = "") -> Rejection:
        return Rejection(app=app.name, coordinates=coords, reason=reason, detail=detail[:300])

    kind: TaskKind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
    steps = plan_chain(app, graph, rng, kind, slot=task_index)
    if not steps:
        return reject("no_chain", f"no {kind} chain")
    world = (
        StateBuilder(app.blueprint, base, app.order).use_pool(value_pool(app)).fill(dict.fromkeys(_world_tables(app, steps), WORLD_ROWS))
    )
    try:
        ws0 = Workspace(app, world)  # the builder's fresh rows: nothing else holds them
    except ChainFailed as exc:
        return reject("not_instantiable", str(exc))
    # the instantiation workspace stays open: state 0's task state is s0 minus the pruned rows plus
    # the distractors, made there by deletes and inserts instead of loading every row again
    try:
        made = _synthesize(app, graph, ws0, steps, kind, rng, coords, base, task_index, states, depth, reject)
    finally:
        if ws0.conn is not None:
            ws0.close()
    return shape_policy(app, made, base)  # POLICY HOOK: policy tasks (tasks/policy.py); a no-op without agent-obeyed rules


def _synthesize(
    app: App,
    graph: ToolGraph,
    ws0: Workspace,
    steps: list[Step],
    kind: TaskKind,
    rng: random.Random,
    coords: Coordinates,
    base: int,
    task_index: int,
    states: int,
    depth: int,
    reject: Any,
) -> list[Task] | Rejection:
    try:
        s0, calls, bound = _instantiate(app, ws0, steps, base, STEP_ATTEMPTS, value_pool(app))
    except ChainFailed as exc:
        return reject("not_instantiable", str(exc))
    guarded = _per_chain(app, steps, "_guarded_memo", lambda: _guarded(steps))
    core = _prune(app, s0, steps, bound, guarded)
    derived = ws0.prune(s0, core)  # state 0 runs in ws0 (False: SQLite refused a delete, load anew)
    if not derived:
        ws0.close()  # its connection is the one fresh workspaces use
    # The admission replay under another episode seed. Custom code may draw anything from the
    # episode's random stream, so such a chain is replayed under seed 1. Generated (archetype)
    # tools draw only the ids of the rows they insert (ctx.new_id), and effects and answers
    # leave generated ids out, so their chain scores the same under every seed unless an
    # argument hard-codes an id the chain itself drew: that is checked on the ground-truth run
    # instead (see _drawn_ids_in_arguments); a chain without inserts runs the same under every seed.
    seeded = any(app.spec_by_name[c.tool].code is not None for c in calls)
    creates = sorted({t for c in calls for t in app.spec_by_name[c.tool].creates})
    core_verified = False  # the chain runs on the pruned core: checked by the first state run, see below
    ids = id_fields(app.blueprint)
    targets = _targets(app, steps, calls, bound, core)
    acted_on = frozenset(tk for b in bound for tk in b.values())
    answer_step, answer_field = _answer_spec(app, steps, calls, rng, core)
    answer_facts = _answered_rows(app, calls, answer_step, answer_field)
    visible = _visible(graph, [c.tool for c in calls], rng)
    if len(steps) and any(c.tool not in visible for c in calls):
        return reject("tool_not_visible")
    tasks: list[Task] = []
    descs: dict[tuple[str, Any], Description] = {}
    instruction = ""
    user = None
    scenario = None
    for s in range(states):
        srng = random.Random(base * 31 + s)
        if s > 0 and ws0.conn is not None:
            ws0.close()
            derived = False
        state_core, mapping = (core, {}) if s == 0 else _remap_ids(app, core, srng)
        state_calls = [_remap_call(app, c, mapping) for c in calls]
        state_targets = [(t, mapping.get((t, k), k)) for t, k in targets]
        state_bound = frozenset((t, mapping.get((t, k), k)) for t, k in acted_on) if mapping else acted_on
        made = None
        why, why_detail = "description_ambiguous_in_state", ""
        attempt = -1
        while attempt < 2:
            attempt += 1
            extra, per_level = add_distractors(
                app.blueprint,
                app.order,
                state_core,
                state_targets,
                depth,
                base * 7 + s * 101 + attempt,
                value_pool(app),
                guarded,
                state_bound,
            )
            if s > 0:  # the instruction is fixed: drop distractors its descriptions would also match
                extra = _without_matches(app, state_core, extra, [descs[tk] for tk in targets])
            full = merged(state_core, extra)
            try:
                with ws0.adding(full, extra) if derived else Workspace(app, full) as ws:  # the ground-truth run, and the admission replay
                    run = ws.run(state_calls)
                    try:
                        check = ws.run(state_calls, seed=1) if seeded else run
                    except ChainFailed as exc:  # the oracle depends on the ids its own calls drew: other distractors won't help
                        return reject("oracle_fails", f"with another episode seed: {exc}")
                    drawn = _drawn_ids_in_arguments(app, state_calls, full, run.final, creates) if creates and not seeded else []
                    if drawn:
                        return reject("oracle_fails", f"an argument is an id the chain itself drew: {drawn[0]}")
            except ChainFailed as exc:
                if s == 0 and not core_verified:
                    core_verified = True
                    if not (extra and (_runs_in(ws0, calls) if derived else _runs(app, core, calls))):
                        # pruning broke the chain: keep all of s0, try again
                        core = state_core = copy_rows(s0)
                        if derived:
                            ws0.unprune(core)
                        attempt -= 1
                        continue
                why, why_detail = "chain_broken_by_distractors", str(exc)
                continue
            if s == 0:
                descs = {}
                for t, k in state_targets:
                    idf = ids[t]
                    row = next(r for r in full[t] if r[idf] == k)
                    d = describe(app.blueprint, full, t, row, srng, avoid=answer_facts.get((t, k), ()))
                    if d is None:
                        why = "target_not_describable"
                        break
                    descs[(t, k)] = d
                else:
                    made = (extra, per_level, full, run, check)
                    break
                continue
            if all(
                descs[(t, k0)].count(app.blueprint, full) == 1 and _only(app, descs[(t, k0)], full, t, k)
                for (t, k0), (_, k) in zip(targets, state_targets)
            ):
                made = (extra, per_level, full, run, check)
                break
        if made is None:
            return reject(why, why_detail)
        extra, per_level, full, run, check = made
        expected = effects_of(app.blueprint, full, run.final, now=app.now)
        answer = _extract(run.results, answer_step, answer_field)
        if answer_step is not None and answer is None:
            return reject("empty_answer")
        if not expected and answer_step is None:
            return reject("no_effect")
        if s == 0:
            param_descs = _param_descriptions(app, calls, descs)
            actions = app.blueprint.index.actions
            made = [
                (i, app.spec_by_name[c.tool].entity, c.args, actions[c.tool].say if c.tool in actions else None)
                for i, c in enumerate(calls)
                if app.spec_by_name[c.tool].kind == "create"
            ]
            # "my orders": a search or count over a person's rows, then the owners of the rows the request names
            people = targets + people_in_filters(app, calls) + owners(app, full, targets)
            requester = profile(app.blueprint, full, people, srng, lambda: random.Random(base).choice(staff_names(app)), made)
            user = requester.user
            me = descs.get((requester.table, requester.key)) if not requester.staff else None
            mine = frozenset(k for t, k in targets if requester.key is not None and owned(app, full, t, k, requester))
            phraser = Phraser(app.blueprint, app.spec_by_name, srng, me, requester.key, requester.made_at, mine)
            n_writes = len(calls) - (1 if answer_step is not None else 0)
            clauses = [phraser.clause(i, calls, param_descs[i]) for i in range(n_writes)]
            question = (
                phraser.question(calls[answer_step], answer_field, param_descs[answer_step], calls) if answer_step is not None else None
            )
            reason = reason_for(app, calls, requester, srng)
            opening = greeting(requester, srng) + (f" {reason[0].upper()}{reason[1:]}." if reason else "")
            instruction = compose(clauses, question, srng, opening.strip())
            if leaks_id(instruction):
                return reject("id_in_instruction", instruction)
            found = lookups(app, full, descs, requester)
            if found.lost:
                return reject("not_solvable", f"nothing the request states finds {found.lost[0]}")
            visible = [*visible, *(t for t in found.tools if t not in visible)]  # the tools that find them are visible
            scenario = scenario_of(app, requester, reason, descs, mine, instruction, kind, srng)
            user = user.model_copy(update={"knows": [instruction, *user.knows]})
        assert user is not None
        task = Task(
            id=f"{app.name}-t{task_index:05d}-s{s}",
            app=app.name,
            kind=kind,
            instruction=instruction,
            user=user,
            scenario=scenario,
            state=TaskState(core=_nonempty(state_core), distractors=_nonempty(extra), distractor_depth=per_level),
            oracle=state_calls,
            oracle_program=oracle_program(state_calls, answer_step, answer_field),
            answer_step=answer_step,
            answer_field=answer_field,
            expected_answer=answer,
            expected_effects=expected.to_dict(),
            visible_tools=visible,
            coordinates=coords.model_copy(update={"state": s}),
            seed=base,
            stats={
                "chain_length": len(calls),
                "writes": sum(app.spec_by_name[c.tool].mode == "write" for c in calls),
                "core_rows": count_rows(state_core),
                "distractor_rows": count_rows(extra),
                "visible_tools": len(visible),
            },
        ).sealed()
        problem = admit(app, task, full, check, expected if check is run else None, expected)
        if problem:
            return reject(problem)
        tasks.append(task)
    return tasks


def admit(
    app: App,
    task: Task,
    s0: Rows,
    replay: Run | None = None,
    replay_effects: Effects | None = None,
    expected: Effects | None = None,
) -> str | None:
    """The admission rule; None when admitted, else the reason.

    The verifier must fail on s0 (a do-nothing agent scores 0), every oracle tool must be
    visible, and the oracle, replayed with another episode seed than the one the chain
    was built with (so generated ids differ, and an oracle that hard-codes an id the
    chain itself created fails), must score 1.0. ``replay`` is that run when the caller
    already made it (seed 1 on s0; for a chain that draws no ids, any seed's run), and
    ``replay_effects`` its effects on s0 when those are known too. ``expected`` is the
    task's expected effects as :class:`Effects`, when the caller has them at hand.
    """
    if expected is None:
        expected = Effects.from_dict(task.expected_effects)
    # doing nothing scores 0 exactly when some effect or an answer is expected (see runtime.reward.compare)
    if not expected and task.expected_answer is None:
        return "verifier_passes_on_s0"
    if not {c.tool for c in task.oracle} <= set(task.visible_tools):
        return "tool_not_visible"
    run = replay
    if run is None:
        try:
            run = execute(app, s0, list(task.oracle), seed=1)
        except ChainFailed:
            return "oracle_fails"
    actual = replay_effects if replay_effects is not None and replay is not None else effects_of(app.blueprint, s0, run.final, now=app.now)
    answer = _extract(run.results, task.answer_step, task.answer_field)
    if compare(expected, actual, expected_answer=task.expected_answer, answer=answer).score != 1.0:
        return "oracle_not_rewarded"
    return None


def _without_matches(app: App, core: Rows, extra: Rows, descs: list[Description]) -> Rows:
    """``extra`` minus rows that a description matches, and rows that refer to those."""
    bp = app.blueprint
    ids = id_fields(bp)
    full = merged(core, extra)
    dropped: set[tuple[str, Any]] = set()
    for d in descs:
        idf = ids[d.entity]
        for r in extra.get(d.entity, []):
            if d.matches(bp, full, r):
                dropped.add((d.entity, r[idf]))
    changed = True
    while changed:
        changed = False
        for ent in bp.entities:
            idf = ids[ent.name]
            refs = ref_fields(ent)
            for r in extra.get(ent.name, []):
                key = (ent.name, r[idf])
                if key not in dropped and any((ref, r.get(name)) in dropped for name, ref in refs):
                    dropped.add(key)
                    changed = True
    return {t: [r for r in rows if (t, r[ids[t]]) not in dropped] for t, rows in extra.items()}


def _nonempty(rows: Rows) -> Rows:
    return {k: v for k, v in rows.items() if v}


def _only(app: App, d: Description, full: Rows, table: str, key: Any) -> bool:
    idf = app.blueprint.entity(table).id_field
    return all(r[idf] == key for r in full[table] if d.matches(app.blueprint, full, r))


def _per_chain(app: App, steps: list[Step], memo_name: str, make: Callable[[], _T]) -> _T:
    """``make()``, kept on the app's index per ``memo_name`` and chain of tool specs (specs are not changed)."""
    specs = tuple(st.spec for st in steps)
    memo: dict[tuple[str, ...], tuple[tuple[Any, ...], _T]] = app.index.of(_chain_memo, app, memo_name)
    key = tuple(s.name for s in specs)
    hit = memo.get(key)
    if hit is None or any(a is not b for a, b in zip(hit[0], specs, strict=True)):
        hit = memo[key] = (specs, make())  # specs of another app under the same names are not taken for these
    return hit[1]


def _chain_memo(app: App, memo_name: str) -> dict[tuple[str, ...], tuple[tuple[Any, ...], Any]]:
    """A new, empty memo of :func:`_per_chain` (one per app and ``memo_name``)."""
    return {}


def _world_tables(app: App, steps: list[Step]) -> list[str]:
    """Tables the chain's tools touch (read, write, bind, count), and the tables they refer to.

    Rows of other tables could never be bound, read or kept in the core, so the world
    the chain is instantiated in leaves them out. Memoised per app and chain of specs.
    """
    return list(_per_chain(app, steps, "_world_tables_memo", lambda: tuple(_find_world_tables(app, steps))))


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
            todo |= {ref for _, ref in _refs(bp)[t] if ref not in seen}
        out[ent.name] = frozenset(seen)
    return out


def _refs(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    """Table -> (field, referenced table) of its ref fields (kept on the blueprint's index)."""
    return bp.index.of(_build_refs, bp)


def _build_refs(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    return {e.name: ref_fields(e) for e in bp.entities}


def _guarded(steps: list[Step]) -> frozenset[str]:
    """Tables whose rows the chain's pre-conditions look for with ``exists()`` or ``count()``."""
    out: set[str] = set()
    for st in steps:
        for check in st.spec.pre:
            out |= _counted_tables(check.check)
    return frozenset(out)


@lru_cache(maxsize=4096)
def _counted_tables(condition: str) -> frozenset[str]:
    """Tables a condition looks for rows in (a bounded memo per condition text: a pure function of it)."""
    return frozenset(
        node.args[0].id
        for node in ast.walk(parse(condition).tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("exists", "count", "any", "all")
        and node.args
        and isinstance(node.args[0], ast.Name)
    )


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


def _prune(app: App, s0: Rows, steps: list[Step], bound: list[dict[str, Any]], guarded: frozenset[str] = frozenset()) -> Rows:
    """The minimal core: rows the chain binds, rows its reads range over, the rows of ``guarded``
    tables (those the pre-conditions count) that refer to these, and the parents of all of them.

    A pre-condition like ``exists(order_item, order_id=order)`` counts rows no step binds;
    without them the chain would not run on the core.

    Not verified here: the first run on the task state (core plus distractors) shows
    whether the chain still runs, and ``synthesize`` falls back to all of s0 when the
    core alone does not.
    """
    bp = app.blueprint
    ids = id_fields(bp)
    keep: set[tuple[str, Any]] = {tk for b in bound for tk in b.values()}
    for st in steps:
        if st.spec.query is not None and st.spec.query.op in ("search", "aggregate"):
            ent = bp.entity(st.spec.query.entity)
            idf = ids[ent.name]
            keep |= {(ent.name, r[idf]) for r in s0.get(ent.name, [])}
    index = {(t, r[idf]): r for t, idf in ids.items() for r in s0.get(t, ())}
    keep &= index.keys()
    refs = _refs(bp)
    for t, idf in ids.items():  # in blueprint order: a guarded table's rows may refer to another's
        if t in guarded:
            keep |= {(t, r[idf]) for r in s0.get(t, ()) if any((ref, r.get(name)) in keep for name, ref in refs[t])}
    todo = list(keep)
    while todo:
        t, k = todo.pop()
        row = index[(t, k)]
        for name, ref in refs[t]:
            v = row.get(name)
            if v is not None and (ref, v) not in keep and (ref, v) in index:
                keep.add((ref, v))
                todo.append((ref, v))
    return {t: [r for r in s0.get(t, ()) if (t, r[idf]) in keep] for t, idf in ids.items()}


def _targets(app: App, steps: list[Step], calls: list[Call], bound: list[dict[str, Any]], core: Rows) -> list[tuple[str, Any]]:
    """Pre-existing rows the instruction must name (bound through literal id arguments)."""
    named: list[tuple[str, Any]] = []
    for st, call, b in zip(steps, calls, bound):
        for binding in st.spec.bindings:
            if binding.many and binding.item is None and isinstance(call.args.get(binding.param or ""), list):
                named += [tk for k in call.args[binding.param or ""] if (tk := (binding.entity, k)) not in named]  # each id of a list
            elif binding.param and binding.param in call.args and binding.param not in call.refs and binding.alias in b:
                tk = b[binding.alias]
                if tk not in named:
                    named.append(tk)
    ids = id_fields(app.blueprint)
    present = {(t, r[ids[t]]) for t in {t for t, _ in named} for r in core.get(t, ())}
    return [tk for tk in named if tk in present]


def _param_descriptions(app: App, calls: list[Call], descs: dict[tuple[str, Any], Description]) -> list[dict[str, Description]]:
    out = []
    for c in calls:
        spec = app.spec_by_name[c.tool]
        d = {}
        for b in spec.bindings:
            if b.param and not b.many and b.param in c.args and (b.entity, c.args[b.param]) in descs:
                d[b.param] = descs[(b.entity, c.args[b.param])]
            elif b.many and b.item is None and isinstance(ids := c.args.get(b.param or ""), list) and ids:
                if all((b.entity, k) in descs for k in ids):  # a list of ids: every row it names, described
                    d[b.param or ""] = [descs[(b.entity, k)] for k in ids]  # type: ignore[assignment]
        out.append(d)
    return out


def _answer_spec(app: App, steps: list[Step], calls: list[Call], rng: random.Random, core: Rows) -> tuple[int | None, str | None]:
    last = steps[-1].spec
    if last.mode == "write" or last.query is None:
        return None, None
    i = len(steps) - 1
    if last.query.op == "get":
        ent = app.blueprint.entity(last.entity)
        stated, computed = _set_by_chain(app, steps[:-1], ent.name)
        stated |= identity_fields(app.blueprint, ent)  # nobody asks for their own name or email
        # never a field the request itself gives (an argument, a state its verb names); the row's description leaves it out
        fields = [f.name for f in ent.fields if f.type in ANSWER_TYPES and f.name not in stated]
        preferred = [f for f in fields if f in computed] or fields  # what the chain worked out is worth asking about
        return i, rng.choice(preferred) if preferred else None
    if last.query.op == "aggregate":
        return i, "value"
    return i, "total"


def _answered_rows(app: App, calls: list[Call], step: int | None, field: str | None) -> dict[tuple[str, Any], tuple[str, ...]]:
    """(table, key) of the row a get answer reads -> the field its description must not use (it is the answer)."""
    if step is None or field is None or app.spec_by_name[calls[step].tool].kind != "get":
        return {}
    b = app.spec_by_name[calls[step].tool].bindings[0]
    key = calls[step].args.get(b.param or "")
    return {(b.entity, key): (field,)} if key is not None else {}


def _set_by_chain(app: App, steps: list[Step], entity: str) -> tuple[set[str], set[str]]:
    """Fields of ``entity`` the steps write: (stated by the request, worked out by the tools).

    A field set to an argument as given, or a state field (the request's verb names the
    state), is stated; anything else the steps write (a new balance, a timestamp) is worked out.
    """
    stated: set[str] = set()
    computed: set[str] = set()
    states = {f.name for f in app.blueprint.entity(entity).fields if f.type == "state"}
    for st in steps:
        params = {p.name for p in st.spec.params}
        for ef in st.spec.effects:
            if ef.entity != entity:
                continue
            for f, expr in ef.values.items():
                (stated if f in states or expr.strip() in params else computed).add(f)
        for f in st.spec.writes.get(entity, []) if not st.spec.effects else []:  # custom code: only what it may write is known
            (stated if f in states or f in params else computed).add(f)
    return stated, computed - stated


def _extract(results: list[Any], step: int | None, field: str | None) -> Any:
    if step is None or field is None:
        return None
    res = results[step]
    return res.get(field) if isinstance(res, dict) else None


def _visible(graph: ToolGraph, chain: list[str], rng: random.Random) -> list[str]:
    """H: the chain, tools that supply its ids, then dependency-aware BFS to >= 20 tools."""
    seed_tools = list(dict.fromkeys(chain))
    chosen = set(seed_tools)
    for tool in list(seed_tools):
        for param in missing_inputs(graph, tool, chosen):
            supplier = _supplier(graph, tool, param)
            if supplier is not None:
                seed_tools.append(supplier)
                chosen.add(supplier)
    return expand_subgraph(graph, seed_tools, min_size=MIN_VISIBLE, rng=rng)


def _supplier(graph: ToolGraph, tool: str, param: str) -> str | None:
    """The tool that supplies ``param`` of ``tool`` (the first by name, a read preferred; kept on the graph's index)."""
    return graph.index.of(_find_supplier, graph, tool, param)


def _find_supplier(graph: ToolGraph, tool: str, param: str) -> str | None:
    suppliers = sorted({u for u, _, _, a in graph.edges("data", target=tool) if a.get("param") == param})
    reads = [u for u in suppliers if graph.node(u).get("mode") == "read"] or suppliers
    return reads[0] if reads else None


def _remap_ids(app: App, core: Rows, rng: random.Random) -> tuple[Rows, dict[tuple[str, Any], Any]]:
    """A copy of the core rows under fresh ids (references follow)."""
    bp = app.blueprint
    mapping: dict[tuple[str, Any], Any] = {}
    for ent in bp.entities:
        taken: set[str] = set()
        for r in core.get(ent.name, []):
            while True:
                new = f"{ent.prefix}_{rng.randrange(100000, 1000000)}"
                if new not in taken:
                    taken.add(new)
                    break
            mapping[(ent.name, r[ent.id_field])] = new
    out: Rows = {}
    for ent in bp.entities:
        rows = []
        for r in core.get(ent.name, []):
            n = dict(r)
            n[ent.id_field] = mapping[(ent.name, r[ent.id_field])]
            for f in ent.fields:
                if f.type == "ref" and n.get(f.name) is not None:
                    n[f.name] = mapping.get((f.ref, n[f.name]), n[f.name])
            rows.append(n)
        if rows:
            out[ent.name] = rows
    return out, mapping


def _remap_call(app: App, call: Call, mapping: dict[tuple[str, Any], Any]) -> Call:
    if not mapping:
        return call
    spec = app.spec_by_name[call.tool]
    args = dict(call.args)
    for p in spec.params:
        if p.name in args and p.ref:
            args[p.name] = _remapped(mapping, p.ref, args[p.name])
        elif p.name in args and p.item_fields and isinstance(args[p.name], list):  # a list of objects: their ids
            refs = {f.name: f.ref for f in p.item_fields if f.ref}
            args[p.name] = [
                {k: _remapped(mapping, refs[k], v) if k in refs else v for k, v in item.items()} if isinstance(item, dict) else item
                for item in args[p.name]
            ]
    return call.model_copy(update={"args": args})


def _remapped(mapping: dict[tuple[str, Any], Any], table: str, value: Any) -> Any:
    """``value`` (an id, or a list of ids) with the ids of ``table`` the mapping renames renamed."""
    if isinstance(value, list):
        return [mapping.get((table, v), v) for v in value]
    return mapping.get((table, value), value)
