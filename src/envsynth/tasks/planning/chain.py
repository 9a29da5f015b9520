"""Seed tool chains: sequences of tools where earlier calls feed later ones (ScaleEnv's C).

A chain is planned on the dependency graph: after the first write, each next tool is a
``data`` successor fed by a row an earlier step created (its new id becomes a
:class:`Ref`), or a ``logic`` successor acting on a row an earlier step touched (the same
row is pinned). Information tasks end with a read (get, aggregate or search) whose
result holds the answer.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field

from envsynth.blueprint.spec import ToolSpec
from envsynth.graph.model import ToolGraph
from envsynth.runtime.app import App
from envsynth.tasks.admission.solvable import by_unique_value
from envsynth.tasks.model import Ref, TaskKind
from envsynth.tasks.planning.askable import askable
from envsynth.tasks.planning.rowfacts import RowFacts
from envsynth.tasks.wording.instruction import refers_to
from envsynth.tasks.wording.roles import Roles, asked_by, fits, joint

LENGTHS = (1, 1, 2, 2, 2, 3, 3, 4, 5, 6, 8)
UNDO_VERBS = frozenset(("cancel", "delete", "remove", "void", "withdraw", "revoke", "discard", "undo", "abandon", "reopen", "restore"))
"""First words of tool names that take back what a request did; such a tool never follows a step on the same row."""
REFUSE_VERBS = frozenset(
    (
        *("decline", "reject", "deny", "refuse", "close", "deactivate", "discontinue", "archive", "suspend", "disable"),
        *("leave", "end", "terminate", "unsubscribe", "unfollow", "quit", "exit", "unjoin", "unenroll", "unregister"),
    )
)
"""First words of tool names that turn down, retire or end a row; never of a row the same request just made
(joining a community and then leaving it takes the request back)."""


@dataclass
class Step:
    """A planned call: its tool, arguments fed by earlier results, rows pinned to earlier steps."""

    spec: ToolSpec
    refs: dict[str, Ref] = field(default_factory=dict)
    pins: dict[str, tuple[int, str]] = field(default_factory=dict)  # param -> (step, alias of that step)
    answer_field: str | None = None
    goal: int = 0  # which goal of the request the step serves (0 for the first; 1-7 for the later goals of a multi-goal one)


def _alias_of(spec: ToolSpec, entity: str) -> str | None:
    for b in spec.bindings:
        if b.entity == entity and b.param is not None:
            return b.alias
    return None


def names_many_rows(spec: ToolSpec) -> bool:
    """Whether the tool takes a list naming existing rows (a list of ids, or items with ids): such a tool starts
    a chain (the request names each row of the list) but never follows a step (an earlier step pins one row)."""
    return any(b.many and b.param is not None for b in spec.bindings)


def _param_for(spec: ToolSpec, entity: str) -> str | None:
    for b in spec.bindings:
        if b.entity == entity and b.param is not None and not b.many and spec.param(b.param).required:  # not a list of ids
            return b.param
    return None


def _created(spec: ToolSpec, entity: str) -> bool:
    return any(ef.op == "insert" and ef.entity == entity for ef in spec.effects) and spec.returns == "new"


Continuation = tuple[ToolSpec, str, str, int, str]  # (tool, "ref" or "pin", param, step, result field or alias)


def _next_of(app: App, graph: ToolGraph, source: ToolSpec) -> list[tuple[ToolSpec, str, str, str]]:
    """The steps that can follow a ``source`` step, as (tool, "ref" or "pin", param, result field or alias).

    Depends only on the app and the graph: kept on the graph's index, per app and tool.
    """
    return graph.index.paired(_find_next, graph, app, source.name)


def _find_next(graph: ToolGraph, app: App, name: str) -> list[tuple[ToolSpec, str, str, str]]:
    source = app.spec_by_name[name]
    out: list[tuple[ToolSpec, str, str, str]] = []
    for _, tgt, _, a in graph.edges("data", source=source.name):
        spec = app.spec_by_name[tgt]
        if names_many_rows(spec):
            continue
        if spec.mode != "write" or spec.code is not None or not a.get("fresh") or not a.get("required", True) or undoes(spec, made=True):
            continue
        out.append((spec, "ref", a["param"], a["via"].split(".", 1)[1]))
    for _, tgt, _, a in graph.edges("logic", source=source.name):
        spec = app.spec_by_name[tgt]
        if names_many_rows(spec):
            continue
        if spec.mode != "write" or spec.code is not None or undoes(spec):  # a goal does not take back its own steps
            continue
        ent = a.get("entity")
        param = _param_for(spec, ent) if ent else None
        if param is None:
            continue
        if _created(source, ent):
            if undoes(spec, made=True):
                continue
            out.append((spec, "ref", param, app.blueprint.entity(ent).id_field))
        elif _reverses(source, spec):
            continue  # locking then unlocking the same card: the request would end where it began
        else:
            alias = _alias_of(source, ent)
            if alias is not None:
                out.append((spec, "pin", param, alias))
    return out


def undoes(spec: ToolSpec, made: bool = False) -> bool:
    """Whether a write tool takes back what made or changed its row: a delete, or a cancel/void/withdraw... of it.

    ``made``: the row is one the request itself made, so turning it down (decline, reject...) takes it back too.
    """
    verb = spec.name.split("_", 1)[0]
    return spec.kind == "delete" or (spec.mode == "write" and (verb in UNDO_VERBS or (made and verb in REFUSE_VERBS)))


def moves(spec: ToolSpec) -> tuple[frozenset[str], str] | None:
    """The states a transition tool moves its row from, and the state it moves it to; None for other tools."""
    if spec.kind != "transition":
        return None
    check = next((c.check for c in spec.pre if c.id == "state"), None)
    if check is None or " in " not in check:
        return None
    try:
        sources = frozenset(ast.literal_eval(check.split(" in ", 1)[1]))
    except (ValueError, SyntaxError):
        return None
    for ef in spec.effects:
        if ef.entity == spec.entity and ef.alias == spec.bindings[0].alias:
            for expr in ef.values.values():
                try:
                    value = ast.literal_eval(expr)
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, str) and value not in sources:
                    return sources, value
    return None


def _reverses(first: ToolSpec, then: ToolSpec) -> bool:
    """Whether transition ``then`` on the same row moves it back to a state ``first`` moved it from (lock, then unlock)."""
    a, b = moves(first), moves(then)
    return a is not None and b is not None and first.entity == then.entity and b[1] in a[0]


def _continuations(nexts: list[list[tuple[ToolSpec, str, str, str]]], used: set[str], facts: RowFacts) -> list[Continuation]:
    """The possible next steps, as plain tuples (only the chosen one becomes a :class:`Step`).

    ``nexts`` holds :func:`_next_of` of each planned step; a continuation is offered when its
    tool is not ``used`` yet and it is :func:`_possible`.
    """
    out = []
    for j, following in enumerate(nexts):
        for spec, how, param, name in following:
            if spec.name not in used:
                c = (spec, how, param, j, name)
                if _possible(facts, c):
                    out.append(c)
    return out


def _possible(facts: RowFacts, c: Continuation) -> bool:
    """Whether the continuation's pre-conditions can hold after the planned steps (see :mod:`rowfacts`)."""
    return facts.allows_one(*c)


def _may_head(app: App, spec: ToolSpec) -> bool:
    """Whether a write may start a further goal: not one naming a list of rows, nor one that signs a new person up
    (the user of the first goal asks for the second too)."""
    people = {u.entity for u in app.blueprint.users if u.entity}
    return not names_many_rows(spec) and not (spec.kind == "create" and spec.entity in people)


def _step(c: Continuation, goal: int = 0) -> Step:
    spec, how, param, j, name = c
    if how == "ref":
        return Step(spec, refs={param: Ref(step=j, field=name)}, goal=goal)
    return Step(spec, pins={param: (j, name)}, goal=goal)


@dataclass(frozen=True)
class _Tools:
    """The tools of an app that chains start with, add and end with."""

    writes: list[ToolSpec]  # write tools
    gets: list[tuple[ToolSpec, str, str, str]]  # get tools by id: (tool, entity, param, key)
    reads: list[ToolSpec]  # possible reads of a chain without earlier steps


def _tools(app: App) -> _Tools:
    """Depends only on the app: kept on the app's index."""
    return app.index.of(_find_tools, app)


def _find_tools(app: App) -> _Tools:
    bp = app.blueprint

    def by_id(s: ToolSpec) -> bool:  # a get by another unique field would name its own answer
        return s.bindings[0].key == bp.entity(s.bindings[0].entity).id_field

    writes = [s for s in app.specs if s.mode == "write"]
    gets = [(s, s.bindings[0].entity, s.bindings[0].param or "", s.bindings[0].key) for s in app.specs if s.kind == "get" and by_id(s)]
    reads = [
        s
        for s in app.specs
        if (s.kind == "get" and by_id(s)) or s.kind == "search" or (s.kind == "aggregate" and s.query and _groups_by_words(app, s))
    ]
    return _Tools(writes, gets, reads)


def _groups_by_words(app: App, spec: ToolSpec) -> bool:
    """An aggregate an information task can ask about: ungrouped, or grouped by a field people say (a status, a currency)
    or by a row the request names ("how many people follow the artist ...?"), whose one group's value is the answer."""
    q = spec.query
    if q is None or not q.group_by:
        return True
    ent = app.blueprint.entity(q.entity)
    return ent.has(q.group_by) and ent.field(q.group_by).type in ("enum", "state", "string", "ref")


def row_filter(app: App, spec: ToolSpec) -> str | None:
    """The filter parameter naming the one row an information task's search or aggregate is about, or None.

    A question about the rows of one row names that row ("how many songs are on the playlist
    ...?", "how many people follow the artist ...?"): the filter on the row an aggregate groups
    by, or else the first filter on a reference of a query that has no filter on a value (its
    only question is which row's rows). Not for a query with value filters: those narrow it.
    """
    q = spec.query
    if q is None or q.op not in ("search", "aggregate"):
        return None
    ent = app.blueprint.entity(q.entity)
    refs = [flt for flt in q.filters if flt.op == "eq" and ent.has(flt.field) and ent.field(flt.field).type == "ref"]
    if q.group_by:
        return next((flt.param for flt in refs if flt.field == q.group_by), None)
    if any(ent.field(flt.field).type not in ("id", "ref") for flt in q.filters if ent.has(flt.field)):
        return None
    return refs[0].param if refs else None


def _reads_of(app: App, source: ToolSpec) -> list[tuple[ToolSpec, str, str, str]]:
    """The gets by id that can read a row a ``source`` step touched, as (tool, "ref" or "pin", param, result field or alias).

    Depends only on the app and the tool: kept on the app's index, per tool.
    """
    return app.index.of(_find_reads, app, source.name)


def _find_reads(app: App, name: str) -> list[tuple[ToolSpec, str, str, str]]:
    source = app.spec_by_name[name]
    out: list[tuple[ToolSpec, str, str, str]] = []
    for g, entity, param, id_field in [*_tools(app).gets, *_row_queries(app)]:
        if _created(source, entity):
            out.append((g, "ref", param, id_field))
        else:
            alias = _alias_of(source, entity)
            if alias is not None:
                out.append((g, "pin", param, alias))
    return out


def _row_queries(app: App) -> list[tuple[ToolSpec, str, str, str]]:
    """Searches and ungrouped aggregates that one parameter narrows to the rows of one row, as (tool, entity, param, id field).

    After a step on a product, "how many reviews does that product have?" reads the product's reviews.
    Only a query whose other required parameters are none (the row alone is the question).
    """
    bp = app.blueprint
    out = []
    for s in app.specs:
        q = s.query
        if q is None or not (q.op == "search" or (q.op == "aggregate" and not q.group_by)):
            continue
        rows = [(p, refers_to(bp, p)) for p in s.params if refers_to(bp, p) not in (None, q.entity) and p.type != "array"]
        if len(rows) != 1 or any(p.required and p.name != rows[0][0].name for p in s.params):
            continue
        p, entity = rows[0]
        out.append((s, entity or "", p.name, bp.entity(entity or "").id_field))
    return out


def _info_reads(app: App) -> list[ToolSpec]:
    """The reads information tasks go round: first those no write can be followed up with, so that the
    two kinds of task read with different tools (a mixed task ends with a read of a row its writes touched),
    then those that the fewest writes lead to (mixed tasks seldom end with them); searches over rows that
    write tools act on come last in both, as the oracle finds such rows with them (:mod:`~envsynth.tasks.admission.routes`).

    Depends only on the app: kept on the app's index.
    """
    return app.index.of(_find_info_reads, app)


def _find_info_reads(app: App) -> list[ToolSpec]:
    reach = _follow_ups(app)
    bp = app.blueprint
    acted_on = {refers_to(bp, p) for w in _tools(app).writes for p in w.params}
    acted_on -= {s.bindings[0].entity for s in app.specs if s.kind == "get" and s.bindings and by_unique_value(bp, s)}
    reads = _tools(app).reads
    # a search over rows that writes act on is how the oracle finds those rows (tasks/admission/routes.py): asked last,
    # unless a get by a unique value (a user's email) finds them instead
    finds = {s.name for s in reads if s.kind == "search" and s.query is not None and s.query.entity in acted_on}
    followed = sorted((s for s in reads if s.name in reach), key=lambda s: reach[s.name])  # those fewest writes lead to first
    return sorted([s for s in reads if s.name not in reach] + followed, key=lambda s: s.name in finds)  # a stable sort


def _reader(app: App, rng: random.Random, steps: list[Step], slot: int | None = None) -> Step | None:
    """A read step for the answer: about a row the chain touched, else about any row (the ``slot``-th, when given)."""
    if not steps:
        reads = _info_reads(app)
        if not reads:
            return None
        return Step(reads[slot % len(reads)] if slot is not None else rng.choice(reads))
    specs = [st.spec for st in steps]
    options = [
        (g, how, param, j, name)
        for j, st in enumerate(steps)
        for g, how, param, name in _reads_of(app, st.spec)
        if (g.kind != "get" or askable(app, specs, g.bindings[0].entity, made=how == "ref"))  # a get with something left to ask
        and not (how == "pin" and st.spec.kind == "delete" and name == st.spec.bindings[0].alias)  # nothing is left of a deleted row
    ]
    return _step(rng.choice(options)) if options else None


def _follow_ups(app: App) -> dict[str, int]:
    """Per read tool, how many write tools a task can follow up on with it (see :func:`_reads_of`; kept on the app's index)."""
    return app.index.of(_find_follow_ups, app)


def _find_follow_ups(app: App) -> dict[str, int]:
    reach: dict[str, int] = {}
    for w in _tools(app).writes:
        for g in {g.name for g, _, _, _ in _reads_of(app, w)}:
            reach[g] = reach.get(g, 0) + 1
    return reach


def plan_chain(
    app: App, graph: ToolGraph, rng: random.Random, kind: TaskKind, slot: int | None = None, goals: int = 1
) -> list[Step] | None:
    """Plan the steps of one task; None when the graph offers no chain of this kind here.

    ``slot`` picks the first tool in turn (the ``slot``-th write, or for an information task
    without earlier steps the ``slot``-th read), so that the tasks of an app start with
    different tools and a corpus covers an app's tools; without it the first tool is drawn
    at random. Synthesis passes the number of earlier tasks of the app that start the same way.

    ``goals`` > 1 (a task that starts with a write) makes a multi-goal request (ScaleEnv's C1..Cn): once a goal's
    follow-ups end, the next goal of the same user starts with a write of its own (one the user's role may ask for,
    of a tool not used yet) and gets follow-ups of its own; its steps carry the goal's index. A chain may end with
    fewer goals when no write is left to start one. Whether the goals are one person's is steered and checked on the
    instance (:mod:`envsynth.tasks.building.goals`).
    """
    steps: list[Step] = []
    facts = RowFacts(app)  # continuations whose pre-conditions the earlier steps rule out are not offered
    nexts: list[list[tuple[ToolSpec, str, str, str]]] = []  # per step: the steps that can follow it
    used: set[str] = set()  # the tools of the steps
    roles: Roles = None  # the roles that ask for every step so far: one user's goal

    def append(step: Step) -> None:
        nonlocal roles
        steps.append(step)
        facts.add(step.spec, step.refs, step.pins)
        nexts.append(_next_of(app, graph, step.spec))
        used.add(step.spec.name)
        roles = joint(roles, asked_by(app.blueprint, step.spec.name))

    if kind in ("action", "mixed"):
        tools = _tools(app)
        append(Step(tools.writes[slot % len(tools.writes)] if slot is not None else rng.choice(tools.writes)))
        length = rng.choice(LENGTHS)
        for goal in range(goals):
            if goal:  # a further goal of the same user: a write of its own, then its follow-ups
                heads = [t for t in tools.writes if t.name not in used and _may_head(app, t) and fits(app.blueprint, roles, t.name)]
                if not heads:
                    break
                append(Step(rng.choice(heads), goal=goal))
                length = len(steps) + rng.choice(LENGTHS)
            while len(steps) < length:  # one goal: every next step follows up on a row an earlier step made or touched
                options = [c for c in _continuations(nexts, used, facts) if fits(app.blueprint, roles, c[0].name)]
                if not options:
                    break
                append(_step(rng.choice(options), goal))
    if kind in ("info", "mixed"):
        reader = _reader(app, rng, steps, slot)
        if reader is None:
            return None
        steps.append(reader)
    return steps


def plan_workflow(app: App, graph: ToolGraph, rng: random.Random, kind: TaskKind, steps: list[str]) -> list[Step] | None:
    """The chain of a declared workflow: its tools in order, each following up on an earlier step's row.

    None when some tool cannot follow here (no data or logic edge from an earlier step, or
    the earlier steps rule out its pre-conditions); an information or mixed task ends with a
    read as :func:`plan_chain` does.
    """
    planned: list[Step] = []
    facts = RowFacts(app)
    nexts: list[list[tuple[ToolSpec, str, str, str]]] = []
    for i, name in enumerate(steps):
        if i == 0:
            step = Step(app.spec_by_name[name])
        else:
            options = [c for c in _continuations(nexts, {s.spec.name for s in planned}, facts) if c[0].name == name]
            if not options:
                return None
            step = _step(rng.choice(options))
        planned.append(step)
        facts.add(step.spec, step.refs, step.pins)
        nexts.append(_next_of(app, graph, step.spec))
    if kind in ("info", "mixed"):
        reader = _reader(app, rng, planned)
        if reader is None:
            return None
        planned.append(reader)
    return planned
