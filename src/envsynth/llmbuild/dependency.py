"""The dependency agent: edges the static analysis missed, kept only when a chain through them runs.

The model sees every tool (description, parameters, pre-conditions, effects) and the
edges :func:`~envsynth.graph.build_graph` found, and proposes missing ``data`` or
``logic`` edges. Each proposal is checked by execution on a fresh state, with the same
machinery task synthesis uses (:func:`~envsynth.tasks.building.instantiate.instantiate`: the
fixture solver builds a state where the calls' pre-conditions hold, then the chain runs):

* ``data`` ``A -> B`` (``param``): the two-step chain ``A; B`` where ``B.param`` is taken
  from A's result (``field``, inferred when not given) runs with both calls a Success. An
  id parameter must be filled by a column that carries that entity's id.
* ``logic`` ``A -> B``: B acts on the row A created or acted on, ``A; B`` runs with both
  calls a Success, and B alone on the same state does not: A's effect is what makes B's
  pre-condition hold.

Usage::

    result = await propose_dependencies(client, app, graph, seed=0)
    result.kept, result.rejected          # each rejected proposal has a ``why``
    write_augmented_graph(app_dir, result.graph)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.graph import GRAPH_FILE, ToolGraph
from envsynth.graph.schema import schema_from_blueprint
from envsynth.llmbuild.prompts import MAX_PROMPT_CHARS, prompt
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.instantiate import ChainFailed, execute, instantiate
from envsynth.tasks.model import Call, Ref
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.synth import WORLD_ROWS, value_pool

__all__ = [
    "DependencyProposal",
    "DependencyResult",
    "ProposedEdge",
    "apply_proposal",
    "check_edge",
    "compact_tools_text",
    "dependency_prompt",
    "dependency_requests",
    "edges_text",
    "propose_dependencies",
    "tool_groups",
    "tools_text",
    "write_augmented_graph",
]

ROLE = "dependency"
ATTEMPTS = 3  # fresh worlds tried per proposed edge


class ProposedEdge(BaseModel):
    """One edge the model says the static analysis missed."""

    model_config = ConfigDict(extra="ignore")

    source: str = Field(description="the tool that runs first")
    target: str = Field(description="the tool that depends on it")
    kind: Literal["data", "logic"]
    param: str | None = Field(None, description="data: the target parameter filled from the source's result")
    field: str | None = Field(None, description="data: the field of the source's result that fills it")
    reason: str = ""


class DependencyProposal(BaseModel):
    """The dependency agent's reply."""

    edges: list[ProposedEdge] = Field(default_factory=list)


@dataclass
class DependencyResult:
    """The augmented graph and what happened to each proposal.

    Attributes:
        graph: a new graph: the input's edges plus the kept ones (attrs ``origin="llm"``, ``reason``).
        kept: the kept edges (``source``, ``target``, ``key`` and the edge attrs).
        rejected: the rejected proposals, each with ``why``.
        failures: the tool groups whose request gave nothing (why); the static edges stand for them.
        groups: the tool groups asked about (one prompt each).
    """

    graph: ToolGraph
    kept: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    groups: int = 1


async def propose_dependencies(client: Any, app: App, graph: ToolGraph, *, seed: int = 0, max_edges: int = 20) -> DependencyResult:
    """Ask the dependency agent for missing edges and keep those that execute.

    The tools are split into groups whose prompt fits the client's prompt budget (one
    group for a small app): each prompt details its group's tools and the edges found
    into them, and lists every tool of the app compactly. A group whose request fails
    (an invalid reply, a prompt too long, an endpoint error) proposes nothing and the
    reason is recorded in ``failures``: the static graph is the fallback.

    Args:
        client: a :class:`~envsynth.llmbuild.client.BuilderClient`.
        app: the built app.
        graph: its static tool graph (not changed).
        seed: seeds the fresh worlds the edges are executed on.
        max_edges: proposals per group; beyond this many are rejected unchecked (and recorded).

    Returns:
        The augmented graph, the kept edges, the rejected proposals and the failed groups.

    Raises:
        BuildStop: the token budget is spent, or the endpoint is down.
    """
    from envsynth.llmbuild.client import RoleError

    groups = _groups(client, app, graph, max_edges)
    edges: list[ProposedEdge] = []
    over: list[ProposedEdge] = []
    failures: list[str] = []
    for i, group in enumerate(groups):
        text = dependency_prompt(app, graph, group, max_edges, whole=len(groups) == 1)
        try:
            proposal = await client.structured(ROLE, [{"role": "user", "content": text}], DependencyProposal, fallback=True)
        except RoleError as exc:
            failures.append(f"tool group {i + 1} of {len(groups)} ({group[0]}...): {exc}")
            continue
        edges += proposal.edges[:max_edges]
        over += proposal.edges[max_edges:]
    result = apply_proposal(app, graph, edges, seed=seed, max_edges=max_edges * len(groups))
    why = f"beyond the first {max_edges} proposals of its tool group"
    result.rejected += [{**e.model_dump(exclude_none=True), "why": why} for e in over]
    result.failures = failures
    result.groups = len(groups)
    return result


def _groups(client: Any, app: App, graph: ToolGraph, max_edges: int) -> list[list[str]]:
    """The tool groups asked about: each prompt fits the client's budget and :data:`MAX_PROMPT_CHARS`."""
    from envsynth.llmbuild.client import CHARS_PER_TOKEN

    budget = min(client.prompt_budget, MAX_PROMPT_CHARS // CHARS_PER_TOKEN) - _schema_tokens()
    return tool_groups(app, graph, budget, max_edges)


def dependency_requests(app: App, graph: ToolGraph, client: Any, max_edges: int = 20) -> list[list[dict[str, str]]]:
    """The requests :func:`propose_dependencies` sends for ``app``, one per tool group."""
    groups = _groups(client, app, graph, max_edges)
    return [[{"role": "user", "content": dependency_prompt(app, graph, g, max_edges, whole=len(groups) == 1)}] for g in groups]


def _schema_tokens() -> int:
    """Room for the JSON-schema instruction that prompt mode adds to a dependency prompt."""
    from envsynth.llmbuild.client import CHARS_PER_TOKEN

    return 40 + len(json.dumps(DependencyProposal.model_json_schema(), indent=2)) // CHARS_PER_TOKEN


def dependency_prompt(app: App, graph: ToolGraph, group: list[str], max_edges: int, *, whole: bool = True) -> str:
    """The dependency agent's prompt for the tools in ``group`` (``whole``: the group is every tool)."""
    if whole:
        return prompt(ROLE, app_title=app.blueprint.title, tools=tools_text(app), others="", edges=edges_text(graph), max_edges=max_edges)
    others = (
        "## Every tool of the app\n\nPropose edges whose TARGET is one of the tools detailed above; the source may be any of these:\n\n"
        + compact_tools_text(app)
        + "\n\n"
    )
    return prompt(
        ROLE,
        app_title=app.blueprint.title,
        tools=tools_text(app, only=set(group)),
        others=others,
        edges=edges_text(graph, targets=set(group)),
        max_edges=max_edges,
    )


def tool_groups(app: App, graph: ToolGraph, budget: int, max_edges: int = 20) -> list[list[str]]:
    """The app's tools split into groups (in order) whose :func:`dependency_prompt` fits ``budget`` tokens.

    A single group when the whole prompt fits; a tool too big alone makes a group of one
    (its request is then refused as too long, and recorded).
    """
    from envsynth.llmbuild.client import estimate_tokens

    def tokens(group: list[str], whole: bool = False) -> int:
        return estimate_tokens([{"role": "user", "content": dependency_prompt(app, graph, group, max_edges, whole=whole)}])

    names = [s.name for s in app.specs]
    if tokens(names, whole=True) <= budget:
        return [names]
    groups: list[list[str]] = [[]]
    for name in names:
        if groups[-1] and tokens([*groups[-1], name]) > budget:
            groups.append([])
        groups[-1].append(name)
    return groups


def apply_proposal(app: App, graph: ToolGraph, edges: Iterable[ProposedEdge], *, seed: int = 0, max_edges: int = 20) -> DependencyResult:
    """Check each proposed edge (see :func:`check_edge`) and add the kept ones to a copy of ``graph``.

    Every rejection says its true reason, in this order: a tool the app does not have
    (``unknown tool``) or a self-loop; a repeat of an earlier proposal (the same source,
    target, kind, parameter and field) or the same edge as one already kept; beyond the
    first ``max_edges`` proposals checked by execution; then what the execution found.
    Each record carries ``proposal``, its number in ``edges`` (from 1).
    """
    g = nx.MultiDiGraph(graph.g)
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    asked: dict[tuple[Any, ...], int] = {}  # a proposal's exact terms -> its number
    added: dict[tuple[Any, ...], int] = {}  # a kept edge's identity -> its proposal's number
    checked = 0
    for number, edge in enumerate(edges, start=1):
        record = {"proposal": number, **edge.model_dump(exclude_none=True)}
        why = _names_problem(app, edge) or _repeat(edge, asked, added)
        asked.setdefault(_terms(edge), number)
        if not why and checked >= max_edges:
            why = f"beyond the first {max_edges} proposals checked"
        if why:
            rejected.append({**record, "why": why})
            continue
        checked += 1
        attrs, why = check_edge(app, graph, edge, seed=seed * 1009 + number - 1)
        if attrs is None:
            rejected.append({**record, "why": why})
            continue
        key = f"data:{edge.param}" if edge.kind == "data" else f"logic:llm:{attrs['entity']}"
        g.add_edge(edge.source, edge.target, key=key, **attrs)
        added[_identity(edge)] = number
        kept.append({"proposal": number, "source": edge.source, "target": edge.target, "key": key, **attrs})
    return DependencyResult(ToolGraph(g, graph.name), kept, rejected)


def _terms(edge: ProposedEdge) -> tuple[Any, ...]:
    """What a proposal asks, exactly: two proposals with the same terms are duplicates."""
    return (edge.source, edge.target, edge.kind, edge.param, edge.field if edge.kind == "data" else None)


def _identity(edge: ProposedEdge) -> tuple[Any, ...]:
    """The graph edge a proposal would add: a data edge per target parameter, one logic edge per pair."""
    return (edge.source, edge.target, edge.kind, edge.param if edge.kind == "data" else None)


def _repeat(edge: ProposedEdge, asked: dict[tuple[Any, ...], int], added: dict[tuple[Any, ...], int]) -> str:
    """Why ``edge`` repeats an earlier proposal or a kept edge ("" if it does not)."""
    if _terms(edge) in asked:
        return f"duplicate of proposal {asked[_terms(edge)]}"
    if _identity(edge) in added:
        return f"the same edge as proposal {added[_identity(edge)]}, already kept"
    return ""


def _names_problem(app: App, edge: ProposedEdge) -> str:
    """Why the tools an edge names make it impossible: an unknown tool, or a self-loop ("" if neither)."""
    for name in (edge.source, edge.target):
        if name not in app.spec_by_name:
            return f"unknown tool {name!r}"
    return "self-loop" if edge.source == edge.target else ""


def write_augmented_graph(app_dir: str | Path, graph: ToolGraph) -> Path:
    """Write ``graph`` as the app folder's ``graph.json`` (replacing the static one); returns the path."""
    out = Path(app_dir) / GRAPH_FILE
    out.write_text(graph.to_json(), encoding="utf-8")
    return out


# --- checking one edge --------------------------------------------------------------------


def check_edge(app: App, graph: ToolGraph, edge: ProposedEdge, *, seed: int = 0) -> tuple[dict[str, Any] | None, str]:
    """Whether a proposed edge is new and executes.

    Returns:
        ``(edge attrs, "")`` for an edge to keep, else ``(None, why)``.
    """
    why = _names_problem(app, edge)
    if why:
        return None, why
    src, tgt = app.spec_by_name[edge.source], app.spec_by_name[edge.target]
    if edge.kind == "data":
        return _check_data(app, graph, src, tgt, edge, seed)
    return _check_logic(app, graph, src, tgt, edge, seed)


def _result_entity(spec: ToolSpec) -> str | None:
    """The entity whose row a tool returns (None: a list, an aggregate, custom data or nothing)."""
    if spec.returns == "new":
        return next((ef.entity for ef in spec.effects if ef.op == "insert"), None)
    if spec.returns == "query":
        return spec.query.entity if spec.query is not None and spec.query.op == "get" else None
    aliases = {b.alias: b.entity for b in spec.bindings} | {ef.alias: ef.entity for ef in spec.effects}
    return aliases.get(spec.returns)


def _source_field(app: App, src: ToolSpec, tgt: ToolSpec, edge: ProposedEdge) -> tuple[str | None, str]:
    """The field of the source's result that fills ``edge.param``, or ``(None, why)``."""
    p = next(x for x in tgt.params if x.name == edge.param)
    ent = _result_entity(src)
    fields = {f.name for f in app.blueprint.entity(ent).fields} if ent else None
    if edge.field:
        if fields is not None and edge.field not in fields:
            return None, f"{src.name} returns a {ent} row, which has no field {edge.field!r}"
        name = edge.field
    elif ent is None:
        name = edge.param or ""
    else:
        name = _filling_field(app, p, ent, edge.param, fields)
    if not name:
        return None, f"no field of {src.name}'s result fills {edge.param!r}"
    if p.ref and ent is not None:
        carried = schema_from_blueprint(app.blueprint).carried(f"{ent}.{name}")
        if carried != p.ref:
            return None, f"{ent}.{name} does not carry a {p.ref} id, which {tgt.name}.{edge.param} takes"
    return name, ""


def _filling_field(app: App, p: ParamSpec, ent: str, param: str | None, fields: set[str] | None) -> str:
    """The field of an ``ent`` row that fills parameter ``p`` (the field it copies, the id or a ref to what it takes); "" if none."""
    if p.field and p.field.split(".", 1)[0] == ent:
        return p.field.split(".", 1)[1]
    if p.ref == ent:
        return app.blueprint.entity(ent).id_field
    if p.ref:
        refs = [f.name for f in app.blueprint.entity(ent).fields if f.type == "ref" and f.ref == p.ref]
        return refs[0] if refs else ""
    return param if param is not None and fields is not None and param in fields else ""


def _check_data(
    app: App, graph: ToolGraph, src: ToolSpec, tgt: ToolSpec, edge: ProposedEdge, seed: int
) -> tuple[dict[str, Any] | None, str]:
    if not edge.param:
        return None, "a data edge needs the target parameter (param)"
    p = next((x for x in tgt.params if x.name == edge.param), None)
    if p is None:
        return None, f"{tgt.name} has no parameter {edge.param!r}"
    if graph.has_edge(src.name, tgt.name, "data", param=edge.param):
        return None, "already in the graph"
    fname, why = _source_field(app, src, tgt, edge)
    if fname is None:
        return None, why
    steps = [Step(src), Step(tgt, refs={edge.param: Ref(step=0, field=fname)})]
    ok, why = _runs(app, steps, seed, need_source=False)
    if not ok:
        return None, why
    ent = _result_entity(src) or src.entity
    return {
        "kind": "data",
        "param": edge.param,
        "entity": p.ref or (p.field.split(".", 1)[0] if p.field else ent),
        "via": f"{ent}.{fname}",
        "fresh": src.returns == "new",
        "required": p.required,
        "origin": "llm",
        "reason": edge.reason,
    }, ""


def _shared_row(app: App, src: ToolSpec, tgt: ToolSpec, param: str | None) -> tuple[str, Step] | None:
    """``(entity, target step)`` with the target acting on the row the source created or bound."""
    created = {ef.entity for ef in src.effects if ef.op == "insert"} if src.returns == "new" else set()
    bound = {b.entity: b.alias for b in src.bindings if b.param is not None}
    options = [(b.param, b.entity) for b in tgt.bindings if b.param is not None and tgt.param(b.param).required]
    options.sort(key=lambda o: (o[0] != param, o[1] != tgt.entity))
    for p, entity in options:
        if entity in created:
            return entity, Step(tgt, refs={p: Ref(step=0, field=app.blueprint.entity(entity).id_field)})
        if entity in bound:
            return entity, Step(tgt, pins={p: (0, bound[entity])})
    return None


def _check_logic(
    app: App, graph: ToolGraph, src: ToolSpec, tgt: ToolSpec, edge: ProposedEdge, seed: int
) -> tuple[dict[str, Any] | None, str]:
    if graph.has_edge(src.name, tgt.name, "logic"):
        return None, "already in the graph"
    shared = _shared_row(app, src, tgt, edge.param)
    if shared is None:
        return None, f"{tgt.name} takes no row that {src.name} creates or acts on"
    entity, step = shared
    ok, why = _runs(app, [Step(src), step], seed, need_source=True)
    if not ok:
        return None, why
    return {
        "kind": "logic",
        "how": "llm",
        "entity": entity,
        "field": None,
        "value": None,
        "check": " and ".join(c.check for c in tgt.pre),
        "origin": "llm",
        "reason": edge.reason,
    }, ""


def _runs(app: App, steps: list[Step], seed: int, *, need_source: bool) -> tuple[bool, str]:
    """Whether the chain can be instantiated on a fresh world and runs (and, for logic, needs its first call)."""
    last = "no attempt"
    for attempt in range(ATTEMPTS):
        s = seed * 7 + attempt
        world = (
            StateBuilder(app.blueprint, s, app.order).use_pool(value_pool(app)).fill({e.name: WORLD_ROWS for e in app.blueprint.entities})
        )
        try:
            s0, calls, _ = instantiate(app, steps, world, s)
            execute(app, s0, calls)
        except ChainFailed as exc:
            last = f"does not execute: {exc}"
            continue
        if need_source and not calls[1].refs and _alone_runs(app, s0, calls[1]):
            last = f"{calls[1].tool} runs without {calls[0].tool} on the same state: no dependency"
            continue
        return True, ""
    return False, last


def _alone_runs(app: App, s0: Any, call: Call) -> bool:
    try:
        execute(app, s0, [call])
    except ChainFailed:
        return False
    return True


# --- what the model sees --------------------------------------------------------------------


def compact_tools_text(app: App) -> str:
    """Every tool on one line: its name, parameters (``?``: optional) and what it returns."""
    lines = []
    for s in app.specs:
        params = ", ".join(p.name + ("" if p.required else "?") for p in s.params)
        ent = _result_entity(s)
        lines.append(f"- {s.name}({params}) -> {f'the {ent} row' if ent else s.returns}")
    return "\n".join(lines)


def _param_text(p: ParamSpec) -> str:
    """A parameter as a signature shows it: ``name?: type`` (``?``: optional), what it takes, its values."""
    what = f"{p.ref} id" if p.ref else p.type + (f" ={p.field}" if p.field else "")
    values = " " + "/".join(p.enum) if p.enum else ""
    return f"{p.name}{'' if p.required else '?'}: {what}{values}"


def _effect_text(ef: Any) -> str:
    """An effect without what is plain from the signature (a column set from its own parameter, a new id)."""
    vals = ", ".join(f"{k}={v}" for k, v in ef.values.items() if v not in (k, "new_id()"))
    return f"{ef.op} {ef.entity}" + (f" ({vals})" if vals else "")


def tools_text(app: App, only: set[str] | None = None) -> str:
    """Each tool (of ``only``, default all) as a signature, its mode and description, then its rules and effects.

    ``- name(param: type, optional?: member id) [write] -> the task row: description``, then
    ``pre:`` (the conditions beyond the rows existing), ``effect:`` and declared ``post:``.
    """
    out = []
    for s in app.specs:
        if only is not None and s.name not in only:
            continue
        ent = _result_entity(s)
        returns = f"the {ent} row" if ent else (s.returns_doc or s.returns)
        lines = [f"- {s.name}({', '.join(_param_text(p) for p in s.params)}) [{s.mode}] -> {returns}: {s.description}"]
        rules = [c.check for c in s.pre if not c.check.endswith(" is not None") or " " in c.check.removesuffix(" is not None")]
        if rules:
            lines.append("  pre: " + "; ".join(rules))
        effects = [_effect_text(ef) for ef in s.effects]
        if effects:
            lines.append("  effect: " + "; ".join(effects))
        declared = [c.check for c in s.post if c.origin == "declared"]
        if declared:
            lines.append("  post: " + "; ".join(declared))
        out.append("\n".join(lines))
    return "\n".join(out)


MAX_LISTED_SOURCES = 5
"""A target parameter fed by more sources than this shows how many, of which entity, and the first few."""


def edges_text(graph: ToolGraph, targets: set[str] | None = None) -> str:
    """The found edges (into ``targets``, default all), compactly: data by target parameter, logic one a line, state per table.

    A parameter fed by many tools (an id every tool returning that row carries) shows their
    number, the entity and the first :data:`MAX_LISTED_SOURCES`, not every name.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    carried: dict[tuple[str, str], str] = {}
    for u, v, _, a in graph.edges("data"):
        if targets is None or v in targets:
            groups.setdefault((v, a["param"]), []).append(u)
            carried[(v, a["param"])] = str(a.get("entity") or "")
    lines = ["data (target.param <- sources):"]
    lines += [f"  {v}.{p} <- {_sources_text(sorted(us), carried[(v, p)])}" for (v, p), us in sorted(groups.items())]
    lines.append("logic (source -> target: what the source establishes):")
    for u, v, _, a in graph.edges("logic"):
        if targets is not None and v not in targets:
            continue
        what = f"{a.get('field') or a.get('entity')}" + (f"={a['value']!r}" if a.get("value") is not None else f" {a.get('how')}")
        lines.append(f"  {u} -> {v}: {what}")
    tables: dict[str, set[str]] = {}
    for u, _, _, a in graph.edges("state"):
        tables.setdefault(a["table"], set()).add(u)
    lines.append(
        "state (a writer of the table -> every reader of it): "
        + "; ".join(f"{t} written by {len(w)} tools" for t, w in sorted(tables.items()))
    )
    return "\n".join(lines)


def _sources_text(sources: list[str], entity: str) -> str:
    """The sources of one parameter: every name, or how many (of which entity's rows) and the first few."""
    if len(sources) <= MAX_LISTED_SOURCES:
        return ", ".join(sources)
    rows = f" returning {entity} ids" if entity else ""
    return f"{len(sources)} tools{rows} ({', '.join(sources[:MAX_LISTED_SOURCES])}, ...)"
