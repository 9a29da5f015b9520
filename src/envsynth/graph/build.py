"""Build the typed tool dependency graph of an app (edges ``data``, ``logic``, ``state``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ToolSpec
from envsynth.graph import conditions as C
from envsynth.graph.facts import Output, inputs, outputs, required_inputs
from envsynth.graph.model import ToolGraph
from envsynth.graph.schema import Schema, schema_from_blueprint, schema_from_specs


def build_graph(app_or_specs: Any, blueprint: Blueprint | None = None, name: str | None = None) -> ToolGraph:
    """Build the dependency graph of an app's tools.

    Edges ``A -> B``:

    * ``data``: an id in A's result can fill an id parameter of B
      (attrs ``param``, ``entity``, ``via`` = output column, ``required``);
    * ``logic``: A's effects establish something a pre-condition of B needs
      (attrs ``how`` = state / exists / increase / decrease, ``entity``, ``field``,
      ``value``, ``check``);
    * ``state``: A writes a table B reads (attrs ``table``, ``ops``).

    Self-loops are dropped, except a ``data`` loop from a tool that creates a row whose
    new id it can then take as a parameter (reply to a new message, ...).

    Args:
        app_or_specs: an :class:`~envsynth.runtime.app.App` (anything with ``specs`` and
            ``blueprint``) or a sequence of :class:`ToolSpec`.
        blueprint: the blueprint, when ``app_or_specs`` is a list of specs; without it the
            entity references are inferred from the specs.
        name: graph name (default: the app or blueprint name).

    Returns:
        The graph; nodes are tool names.
    """
    if hasattr(app_or_specs, "specs"):
        specs: Sequence[ToolSpec] = list(app_or_specs.specs)
        blueprint = blueprint or getattr(app_or_specs, "blueprint", None)
    else:
        specs = list(app_or_specs)
    if name is None and blueprint is not None:
        name = blueprint.name
    schema = schema_from_blueprint(blueprint) if blueprint is not None else schema_from_specs(specs)
    g = nx.MultiDiGraph()
    for s in sorted(specs, key=lambda s: s.name):
        g.add_node(
            s.name,
            kind=s.kind,
            entity=s.entity,
            mode=s.mode,
            outputs=sorted({o.entity for o in outputs(s, schema)}),
            requires=required_inputs(s, schema),
        )
    _data_edges(g, specs, schema)
    _logic_edges(g, specs)
    _state_edges(g, specs)
    return ToolGraph(g, name)


def _pick(outs: list[Output], entity: str, schema: Schema) -> Output:
    """The canonical output column: a fresh id, then the entity's own id, then the first."""
    own = f"{entity}.{schema[entity].id_field}" if entity in schema else ""
    return sorted(outs, key=lambda o: (not o.fresh, o.via != own, o.via))[0]


def _data_edges(g: nx.MultiDiGraph, specs: Sequence[ToolSpec], schema: Schema) -> None:
    outs = {s.name: outputs(s, schema) for s in specs}
    for b in specs:
        for i in inputs(b, schema):
            for a in specs:
                cands = [o for o in outs[a.name] if o.entity == i.entity and (a.name != b.name or o.fresh)]
                if not cands:
                    continue
                o = _pick(cands, i.entity, schema)
                g.add_edge(
                    a.name,
                    b.name,
                    key=f"data:{i.param}",
                    kind="data",
                    param=i.param,
                    entity=i.entity,
                    via=o.via,
                    fresh=o.fresh,
                    required=i.required,
                )


def _logic_edges(g: nx.MultiDiGraph, specs: Sequence[ToolSpec]) -> None:
    est = {s.name: C.establishes(s) for s in specs}
    chg = {s.name: C.changes(s) for s in specs}
    ins = {s.name: C.inserted_values(s) for s in specs}
    for b in specs:
        for r in C.requirements(b):
            for a in specs:
                if a.name == b.name:
                    continue
                for how, field, value in _enables(r, est[a.name], chg[a.name], ins[a.name]):
                    qualified = f"{r.entity}.{field}" if field else None
                    key = f"logic:{how}:{qualified or r.entity}:{value!r}"
                    if not g.has_edge(a.name, b.name, key):
                        g.add_edge(
                            a.name, b.name, key=key, kind="logic", how=how, entity=r.entity, field=qualified, value=value, check=r.check
                        )


def _enables(
    r: C.Requirement, est: list[C.Sets], chg: list[C.Change], ins: dict[str, dict[str, set[C.Value] | None]]
) -> list[tuple[str, str | None, C.Value]]:
    """``(how, field, value)`` for each way tool A's facts meet requirement ``r`` of B."""
    if r.how == "state":
        wanted = {C.value_key(v) for v in r.values}
        return [("state", s.field, s.value) for s in est if (s.entity, s.field) == (r.entity, r.field) and C.value_key(s.value) in wanted]
    if r.how in ("increase", "decrease"):
        return [(r.how, r.field, None) for c in chg if (c.entity, c.field, c.direction) == (r.entity, r.field, r.how)]
    # exists(E, k=v, ...): A creates a compatible E row, or moves an E row to k=v
    if r.entity in ins:
        row = ins[r.entity]
        for k, v in r.values:
            possible = row.get(k)
            if possible is not None and C.value_key(v) not in {C.value_key(p) for p in possible}:
                return []
        k, v = r.values[0] if r.values else (None, None)
        return [("exists", k, v)]
    hits = {(k, v) for k, v in r.values for s in est if (s.entity, s.field) == (r.entity, k) and C.value_key(s.value) == C.value_key(v)}
    return [("exists", k, v) for k, v in sorted(hits, key=lambda kv: (kv[0], C.value_key(kv[1])))]


def written_tables(spec: ToolSpec) -> dict[str, list[str]]:
    """Table -> sorted ops ('delete', 'insert', 'update') the tool performs on it."""
    out: dict[str, set[str]] = {}
    for t in spec.writes:
        out.setdefault(t, set()).add("update")
    for t in spec.creates:
        out.setdefault(t, set()).add("insert")
    for t in spec.deletes:
        out.setdefault(t, set()).add("delete")
    return {t: sorted(ops) for t, ops in sorted(out.items())}


def read_tables(spec: ToolSpec) -> set[str]:
    """Tables the tool reads (a custom tool is assumed to read its own entity)."""
    return set(spec.reads) | ({spec.entity} if spec.kind == "custom" else set())


def _state_edges(g: nx.MultiDiGraph, specs: Sequence[ToolSpec]) -> None:
    reads = {s.name: read_tables(s) for s in specs}
    for a in specs:
        for table, ops in written_tables(a).items():
            for b in specs:
                if b.name != a.name and table in reads[b.name]:
                    g.add_edge(a.name, b.name, key=f"state:{table}", kind="state", table=table, ops=ops)
