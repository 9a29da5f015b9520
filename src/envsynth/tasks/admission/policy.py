"""Policy tasks: tasks that involve a rule of the app's policy the agent must obey (``forbid``).

After a task is synthesized (:func:`shape`, called once per task index from
:func:`envsynth.tasks.synth.synthesize`):

- an oracle call the policy forbids (a ``forbid`` rule of its action holds when it is made) would teach the agent
  to break the policy: the task is rejected (``policy_forbids_oracle``);
- an oracle call on an action a rule names, which the rule allows, marks the task (``Task.policy``, not a refusal);
- about half of the tasks with a write (:data:`REFUSAL_SHARE`) are made *refusal* tasks: the user also asks, in the
  same message, for a call the policy forbids (on a row of their own that the oracle does not touch: one of the
  state, or a new one drawn for it: a search of the oracle that lists the new row as well has the oracle's
  ``items[k]`` re-placed, :mod:`envsynth.tasks.admission.refusal_rows`). The oracle's calls and
  the expected effects stay those of the allowed part, so doing nothing scores 0 and doing the forbidden part as
  well scores 0 (the verifier compares the final state). ``Task.policy`` records the rule, the forbidden call and
  the request in the user's words.

The forbidden call is checked on the real runtime: the tools allow it and the rule forbids it, before and after.
"""

from __future__ import annotations

import functools
import random
import sqlite3
from typing import Any

from envsynth.blueprint.models import Blueprint, PolicyRule
from envsynth.blueprint.policy import acting_param, agent_rules, user_entity
from envsynth.blueprint.spec import ToolSpec
from envsynth.blueprint.values import ValueMaker
from envsynth.compiler.codegen import py
from envsynth.runtime.app import App
from envsynth.runtime.episode import SUCCESS, Episode
from envsynth.runtime.sampledata import StateBuilder
from envsynth.runtime.state import Rows
from envsynth.tasks.admission.difficulty import for_each
from envsynth.tasks.admission.refusal_rows import carried, oracle_results, placed_replay, replay, resolved, same_outcome, with_oracle
from envsynth.tasks.model import Call, Rejection, Task, TaskPolicy
from envsynth.tasks.state import merged, rows_bytes
from envsynth.tasks.wording.describe import Description, describe, noun, render
from envsynth.tasks.wording.frames import before_sign_off
from envsynth.tasks.wording.instruction import Phraser, leaks_id

REFUSAL_SHARE = 0.5
"""Share of the tasks with a write that are tried as refusal tasks (the rest keep their request)."""

CLONE_TRIES = 30
"""Rows drawn at most for a forbidden request when the task's state holds none that fits."""

OPENINGS = ("Also, {x}.", "And while you're at it, {x}.", "Oh, and {x} too.", "One more thing: {x}.")


def shape(app: App, result: list[Task] | Rejection, base: int) -> list[Task] | Rejection:
    """The synthesized tasks of one task index, checked against the app's policy (see the module doc).

    Args:
        app: the app.
        result: what :func:`~envsynth.tasks.synth.synthesize` made of the task index.
        base: the task's seed (``task_seed``), for the choices made here.
    """
    rules = agent_rules(app.blueprint)
    if not rules or not isinstance(result, list) or not result:
        return result
    task = result[0]
    involved: str | None = None
    for rule, step, forbidden in _oracle_rules(app, task, rules):
        if forbidden:
            return Rejection(app=app.name, coordinates=task.coordinates, reason="policy_forbids_oracle", detail=f"step {step}: {rule}")
        involved = involved or rule
    rng = random.Random(base * 13 + 7)
    if task.expected_effects and rng.random() < REFUSAL_SHARE:
        new_rows = not _goal_over_rows(task)
        if len(result) > 1:  # every state gets the forbidden request on its own copy of the row
            states = refusal_states(app, result, rules, rng, new_rows)
            if states is not None:
                return states
        else:  # one state: its request names a row of it (a task of S states keeps them all, without a refusal)
            made = refusal_task(app, task, rules, rng, new_rows=new_rows)
            if made is not None:
                return [made]
    if involved is None:
        return result
    return [t.model_copy(update={"policy": TaskPolicy(rule=involved, refusal=False)}).sealed() for t in result]


def _goal_over_rows(task: Task) -> bool:
    """Whether the task's goal is about its rows as a whole (a row named by comparison, a goal the row's state decides,
    a write on every row a search lists): a forbidden request's new row could become one of them, so none is added
    (a forbidden request on a row the state holds already is made)."""
    return "comparison" in task.stats or "conditional" in task.stats or for_each(task)


def _oracle_rules(app: App, task: Task, rules: list[PolicyRule]) -> list[tuple[str, int, bool]]:
    """(rule, step, forbidden) for every oracle call on an action a rule names, replayed on the task's state."""
    out: list[tuple[str, int, bool]] = []
    ep = app.episode(rows_bytes(app, merged(task.state.core, task.state.distractors)))
    try:
        results: list[Any] = []
        for i, call in enumerate(task.oracle):
            args = resolved(call, results)
            for rule in rules:
                if call.tool in rule.actions:
                    out.append((rule.rule, i, forbids(app, rule, call.tool, args, ep)))
            res = ep.call(call.tool, args)
            results.append(res.data if res.outcome == SUCCESS else None)
    finally:
        ep.close()
    return out


def forbids(app: App, rule: PolicyRule, tool: str, args: dict[str, Any], ep: Episode) -> bool:
    """Whether ``rule`` forbids calling ``tool`` with ``args`` on the episode's current state.

    The condition is compiled as the tools' pre-conditions are (``compiler.codegen.py``) and
    sees what they see: the tool's parameters, the rows it loads, the episode's context. A row
    that is missing (the call would be rejected anyway) makes the rule not apply.
    """
    spec = app.spec_by_name[tool]
    ns: dict[str, Any] = dict(vars(app.module))
    ns.update({p.name: args.get(p.name) for p in spec.params})
    ns["ctx"] = ep.ctx
    for b in [b for b in spec.bindings if b.param] + [b for b in spec.bindings if b.via]:
        if b.param:
            key = args.get(b.param)
        else:
            src_alias, fname = (b.via or "").split(".", 1)
            src = ns.get(src_alias)
            key = src.get(fname) if isinstance(src, dict) else None
        sql = f'SELECT * FROM "{b.entity}" WHERE "{b.key}" = ?'
        ns[b.alias] = ep.ctx.one(sql, (key,), b.entity) if key is not None else None
    try:
        return bool(eval(_compiled(rule.forbid or ""), ns))  # a checked condition, compiled as tools.py compiles it
    except (TypeError, KeyError):  # a row the condition reads is missing: the call is rejected anyway
        return False


@functools.lru_cache(maxsize=256)
def _compiled(source: str) -> Any:
    return compile(py(source), f"<forbid {source}>", "eval")


class _Ctx:
    """What building one refusal task needs: the task, its state and who asks."""

    def __init__(self, app: App, task: Task, rng: random.Random) -> None:
        self.app, self.task, self.rng = app, task, rng
        self.bp: Blueprint = app.blueprint
        self.rows: Rows = merged(task.state.core, task.state.distractors)
        self.me = requester_key(app, task, self.rows)
        self.touched = _touched(task)

    @functools.cached_property
    def before(self) -> list[Any] | None:
        """The oracle's results on the task's state (what its refs to a search's items were made for)."""
        return oracle_results(self.app, self.task)


def refusal_task(
    app: App, task: Task, rules: list[PolicyRule], rng: random.Random, found: dict[str, Any] | None = None, new_rows: bool = True
) -> Task | None:
    """``task`` with a forbidden request added, or None when no rule can tempt here (see the module doc).

    ``found`` (when given) receives what the request was made of: the rule, the tool, the row
    parameter, the state's rows, the row and its description (see :func:`refusal_states`). ``new_rows``: whether a
    new row may be drawn for the request when the state holds none it fits (see :func:`_goal_over_rows`).
    """
    cx = _Ctx(app, task, rng)
    if app.blueprint.authorization is not None and cx.me is None:
        return None
    for rule in rng.sample(rules, len(rules)):
        for tool in rule.actions:
            spec = app.spec_by_name[tool]
            param = _row_param(app, spec)
            if param is None:
                continue
            hit = _forbidden_row(cx, rule, spec, param, new_rows)
            if hit is not None:
                return _with_refusal(cx, rule, spec, param, *hit, found=found)
    return None


def refusal_states(app: App, tasks: list[Task], rules: list[PolicyRule], rng: random.Random, new_rows: bool = True) -> list[Task] | None:
    """The S states of one task index made refusal tasks with one and the same request, or None.

    The request is made on state 0 (:func:`refusal_task`); every other state gets the same
    words about its own copy of the row (the same row when the state holds it, its ids renamed
    as the state renames them; else the same new row), checked as state 0's is: the
    description names that row alone, the rule forbids the call there before and after the
    oracle and the tools allow it, and a new row leaves the oracle's effects unchanged.
    """
    found: dict[str, Any] = {}
    first = refusal_task(app, tasks[0], rules, rng, found, new_rows)
    if first is None or first.policy is None:
        return None
    out = [first]
    for task in tasks[1:]:
        made = _same_refusal(app, task, first, found, rng)
        if made is None:
            return None
        out.append(made)
    return out


def _same_refusal(app: App, task: Task, first: Task, found: dict[str, Any], rng: random.Random) -> Task | None:
    """``task`` (another state) with ``first``'s forbidden request, on this state's copy of its row."""
    bp = app.blueprint
    cx = _Ctx(app, task, rng)
    if bp.authorization is not None and cx.me is None:
        return None
    rule, spec, param, d = found["rule"], found["spec"], found["param"], found["description"]
    ent = bp.entity(spec.entity)
    if found["new"]:
        row = carried(bp, found["rows"], cx.rows, ent, found["row"])
        if row is None:
            return None
        rows = {t: list(v) for t, v in cx.rows.items()}
        rows.setdefault(ent.name, []).append(row)  # this state may hold no row of the table at all
    else:
        rows = cx.rows
        row = next((r for r in rows.get(ent.name, []) if d.matches(bp, rows, r)), None)
    if row is None or d.count(bp, rows) != 1 or row[ent.id_field] in cx.touched or not _owned(cx, ent.name, row):
        return None
    key = row[ent.id_field]
    oracle = _tempts(cx, rule, spec, param, rows, key)  # a new row may move what a search of the oracle lists
    if oracle is None:
        return None
    core = {t: list(v) for t, v in task.state.core.items()}
    if found["new"]:
        core.setdefault(ent.name, []).append(row)
    note = TaskPolicy(
        rule=rule.rule, refusal=True, forbidden=[_call(cx, spec, param, key)], request=first.policy.request if first.policy else None
    )
    update = {
        "instruction": first.instruction,
        "scenario": first.scenario,
        "user": task.user.model_copy(update={"knows": [first.instruction, *task.user.knows[1:]]}),
        "state": task.state.model_copy(update={"core": core}),
        "visible_tools": first.visible_tools,
        "stats": {
            **task.stats,
            "core_rows": task.stats.get("core_rows", 0) + bool(found["new"]),
            "visible_tools": len(first.visible_tools),
        },
        "policy": note,
        **with_oracle(task, oracle),
    }
    return task.model_copy(update=update).sealed()


def requester_key(app: App, task: Task, rows: Rows) -> Any:
    """The id of the requester's row (a user of the role ``authorization`` names, else of any role), or None for staff."""
    bp = app.blueprint
    ent = user_entity(bp, bp.authorization) if bp.authorization is not None else None
    ents = [ent] if ent is not None else [bp.entity(u.entity) for u in bp.users if u.entity]
    for e in ents:
        for r in rows.get(e.name, []):
            contact = [v for v in (task.user.email, task.user.phone) if v]
            if (contact and any(v in r.values() for v in contact)) or (not contact and task.user.name in r.values()):
                return r[e.id_field]
    return None


def _touched(task: Task) -> set[Any]:
    keys: set[Any] = set()
    for c in task.oracle:
        keys.update(v for v in c.args.values() if isinstance(v, str))
    for eff in task.expected_effects.values():
        if isinstance(eff, dict):
            for part in eff.values():
                if isinstance(part, dict):
                    keys.update(part)
                elif isinstance(part, list):
                    keys.update(k for k in part if isinstance(k, str))
    return keys


def _row_param(app: App, spec: ToolSpec) -> str | None:
    """The parameter naming the row ``spec`` acts on, when every other required one is the acting user."""
    if spec.mode != "write":
        return None
    own = next((b for b in spec.bindings if b.param and b.alias == spec.entity), None)
    if own is None:
        return None
    acting = acting_param(app.blueprint) if app.blueprint.authorization is not None else None
    extra = [p.name for p in spec.params if p.required and p.name not in (own.param, acting)]
    return None if extra else own.param


def _call(cx: _Ctx, spec: ToolSpec, param: str, key: Any) -> Call:
    args = {param: key}
    acting = acting_param(cx.bp) if cx.bp.authorization is not None else None
    if acting is not None and any(p.name == acting for p in spec.params):
        args[acting] = cx.me
    return Call(tool=spec.name, args=args)


def _forbidden_row(
    cx: _Ctx, rule: PolicyRule, spec: ToolSpec, param: str, new_rows: bool = True
) -> tuple[Rows, dict[str, Any], list[Call]] | None:
    """A state, a row of it the forbidden call acts on (a row already there, else a new one when ``new_rows``) and the
    oracle there (a new row may be listed by a search of the oracle and move the row it means: see :func:`_tempts`)."""
    ent = cx.bp.entity(spec.entity)
    for row in cx.rows.get(ent.name, []):
        key = row[ent.id_field]
        oracle = _tempts(cx, rule, spec, param, cx.rows, key) if key not in cx.touched and _owned(cx, ent.name, row) else None
        if oracle is not None:
            return cx.rows, row, oracle
    templates = [r for r in cx.rows.get(ent.name, [])]
    if not templates or not new_rows:
        return None
    maker = ValueMaker(cx.bp, cx.rng.getrandbits(32))
    taken = {r[ent.id_field] for r in templates}
    for _ in range(CLONE_TRIES):
        row = _drawn(cx, ent.name, cx.rng.choice(templates), maker, taken)
        if row is None:
            return None
        rows = {t: list(v) for t, v in cx.rows.items()}
        rows.setdefault(ent.name, []).append(row)  # this state may hold no row of the table at all
        oracle = _tempts(cx, rule, spec, param, rows, row[ent.id_field]) if _distinct(cx, ent.name, row) else None
        if oracle is not None:
            return rows, row, oracle
    return None


def _drawn(cx: _Ctx, table: str, template: dict[str, Any], maker: ValueMaker, taken: set[str]) -> dict[str, Any] | None:
    """A new row like ``template``, with fresh values and owned by the requester (None if it cannot be)."""
    ent = cx.bp.entity(table)
    fixed = {ent.id_field: maker.new_id(ent, taken), **{f.name: template[f.name] for f in ent.fields if f.type == "ref"}}
    builder = StateBuilder(cx.bp, maker.rng.getrandbits(32), cx.app.order, {t: list(v) for t, v in cx.rows.items()})
    drawn = builder.add(ent, fixed)  # fresh values under the blueprint's rules (a payment never before its account opened)
    if drawn is None:
        return None
    row = dict(drawn)
    auth = cx.bp.authorization
    if auth is None or table not in auth.owns:
        return row
    hops = auth.owns[table].split(".")
    if len(hops) == 1:
        row[hops[0]] = cx.me
        return row
    mid = cx.bp.entity(ent.field(hops[0]).ref or "")
    mine = [r[mid.id_field] for r in cx.rows.get(mid.name, []) if r.get(hops[1]) == cx.me]
    if not mine:
        return None
    row[hops[0]] = cx.rng.choice(mine)
    return row


def _owned(cx: _Ctx, table: str, row: dict[str, Any]) -> bool:
    """Whether the requester owns ``row`` (always, without authorization)."""
    auth = cx.bp.authorization
    if auth is None or table not in auth.owns:
        return auth is None
    value: Any = row
    ent = cx.bp.entity(table)
    for fname in auth.owns[table].split("."):
        key = value.get(fname) if isinstance(value, dict) else None
        target = cx.bp.entity(ent.field(fname).ref or "")
        value = next((r for r in cx.rows.get(target.name, []) if r[target.id_field] == key), key)
        ent = target
    owner = value[ent.id_field] if isinstance(value, dict) else value
    return bool(owner == cx.me)


def _distinct(cx: _Ctx, table: str, row: dict[str, Any]) -> bool:
    """A drawn row takes no unique value, and shares no naming value (label, ``known_by``) with a row the oracle touches."""
    ent = cx.bp.entity(table)
    unique = [f.name for f in ent.fields[1:] if f.unique]
    naming = [f.name for f in ent.fields if f.name == ent.label or f.name in ent.known_by]
    for other in cx.rows.get(table, []):
        if any(other.get(n) == row.get(n) for n in unique):
            return False
        if other[ent.id_field] in cx.touched and any(other.get(n) == row.get(n) for n in naming):
            return False
    return True


def _tempts(cx: _Ctx, rule: PolicyRule, spec: ToolSpec, param: str, rows: Rows, key: Any) -> list[Call] | None:
    """The task's oracle on ``rows`` when the rule forbids the call there before and after it and the tools allow the
    call after it, else None. With a new row in (``rows`` not the task's own), a search of the oracle may list it too:
    the oracle is re-placed (:func:`~envsynth.tasks.admission.refusal_rows.placed_replay`) and must make the task's effects and
    answer."""
    app, task = cx.app, cx.task
    call = _call(cx, spec, param, key)
    try:
        ep = app.episode(rows_bytes(app, rows))
    except sqlite3.Error:
        return None
    try:
        if not forbids(app, rule, spec.name, call.args, ep):
            return None
        ran = (task.oracle, replay(ep, task.oracle)) if rows is cx.rows else placed_replay(ep, task, cx.before)
        if ran is None or not ran[1] or (rows is not cx.rows and not same_outcome(app, task, rows, ep, ran[1])):
            return None
        if not forbids(app, rule, spec.name, call.args, ep):
            return None
        return ran[0] if ep.call(spec.name, call.args).outcome == SUCCESS else None
    finally:
        ep.close()


def _with_refusal(
    cx: _Ctx,
    rule: PolicyRule,
    spec: ToolSpec,
    param: str,
    rows: Rows,
    row: dict[str, Any],
    oracle: list[Call],
    found: dict[str, Any] | None = None,
) -> Task | None:
    """The task with the forbidden request added to its instruction, state and record (what it was made of in ``found``)."""
    bp, task = cx.bp, cx.task
    ent = bp.entity(spec.entity)
    key = row[ent.id_field]
    d = describe(bp, rows, ent.name, row, cx.rng)
    if d is None:
        return None
    call = _call(cx, spec, param, key)
    request = _request(cx, spec, call, param, d, rows)
    if request is None:
        return None
    instruction = before_sign_off(task.instruction, cx.rng.choice(OPENINGS).format(x=request))  # "... Thanks!" stays last
    if leaks_id(instruction):
        return None
    core = {t: list(v) for t, v in task.state.core.items()}
    if rows is not cx.rows:
        core.setdefault(ent.name, []).append(row)
    visible = [*task.visible_tools, *_tools_for(cx.app, spec, task.visible_tools)]
    scenario = task.scenario
    if scenario is not None:
        knows = [*scenario.knows, f"I mean {render(bp, d, possessive='my')}"]
        unknown = f"the internal id of any {noun(ent)} (they know it only as described)"
        unknowns = scenario.unknowns if unknown in scenario.unknowns else [*scenario.unknowns, unknown]
        scenario = scenario.model_copy(update={"request": instruction, "knows": knows, "unknowns": unknowns})
    user = task.user.model_copy(update={"knows": [instruction, *task.user.knows[1:]]})
    note = TaskPolicy(rule=rule.rule, refusal=True, forbidden=[call], request=request)
    stats = {**task.stats, "core_rows": task.stats.get("core_rows", 0) + (rows is not cx.rows), "visible_tools": len(visible)}
    state = task.state.model_copy(update={"core": core})
    if found is not None:
        found.update(rule=rule, spec=spec, param=param, rows=rows, row=row, description=d, new=rows is not cx.rows)
    update = {"instruction": instruction, "scenario": scenario, "user": user, "state": state, "visible_tools": visible}
    return task.model_copy(update={**update, **with_oracle(task, oracle), "stats": stats, "policy": note}).sealed()


def _request(cx: _Ctx, spec: ToolSpec, call: Call, param: str, d: Description, rows: Rows) -> str | None:
    """The forbidden request in the user's words ("cancel my reservation booked March 3, 2026 at 9:00 AM")."""
    bp = cx.bp
    descs: dict[str, Description] = {param: d}
    me = None
    if cx.me is not None and bp.authorization is not None:
        uent = user_entity(bp, bp.authorization)
        urow = next((r for r in rows.get(uent.name, []) if r[uent.id_field] == cx.me), None)
        me = describe(bp, rows, uent.name, urow, cx.rng) if urow is not None else None
        acting = acting_param(bp)
        if me is not None and acting in call.args:
            descs[acting] = me
    mine = frozenset({call.args[param]}) if _owned_by_requester(cx, spec.entity, call.args[param], rows) else frozenset()
    phraser = Phraser(bp, cx.app.spec_by_name, cx.rng, me, cx.me, None, mine)  # "my reservation" only when it is theirs
    text = phraser.clause(0, [call], descs)
    return text.rstrip(".") if text else None


def _owned_by_requester(cx: _Ctx, table: str, key: Any, rows: Rows) -> bool:
    """Whether row ``key`` of ``table`` refers to the requester's row (their reservation), so the request says "my"."""
    if cx.me is None:
        return False
    ent = cx.bp.entity(table)
    row = next((r for r in rows.get(table, []) if r[ent.id_field] == key), None)
    return row is not None and (key == cx.me or any(f.type == "ref" and row.get(f.name) == cx.me for f in ent.fields))


def _tools_for(app: App, spec: ToolSpec, visible: list[str]) -> list[str]:
    """The forbidden tool and the reads of its entity, when the task did not show them already."""
    reads = [s.name for s in app.specs if s.mode == "read" and s.entity == spec.entity and s.query is not None]
    return [n for n in [spec.name, *reads] if n not in visible]


def oracle_plus_forbidden(task: Task) -> list[Call]:
    """The calls of an agent that does the allowed part and the forbidden part too (for tests and reports)."""
    if task.policy is None:
        return list(task.oracle)
    return [*task.oracle, *task.policy.forbidden]
