"""ToolGraph: a typed MultiDiGraph of tools, with deterministic JSON and DOT output."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cached_property
from typing import Any

import networkx as nx

from envsynth.memo import Index

EDGE_KINDS = ("data", "logic", "state")
FORMAT = "envsynth-tool-graph"
VERSION = 1

Edge = tuple[str, str, str, dict[str, Any]]


class GraphIndex(Index):
    """Lookups derived from a tool graph (it is not changed once built), kept on it as ``ToolGraph.index``."""

    def __init__(self) -> None:
        super().__init__()
        self.edges: dict[tuple[str | None, str | None, str | None], list[Edge]] = {}  # (kind, source, target) -> edges
        self.inputs: dict[str, tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]] = {}  # tool -> inputs
        self.neighbours: dict[tuple[str, str | None], list[str]] = {}  # (tool, kind) -> neighbours


class ToolGraph:
    """Tools as nodes, typed dependency edges ``A -> B`` (see :func:`build_graph`).

    Node attributes: ``kind``, ``entity``, ``mode``, ``outputs`` (entities whose ids the
    result carries), ``requires`` (required id parameter -> entity). Edge keys are
    ``'<kind>:<detail>'`` and every edge has a ``kind`` attribute.
    """

    def __init__(self, graph: nx.MultiDiGraph | None = None, name: str | None = None) -> None:
        self.g: nx.MultiDiGraph = graph if graph is not None else nx.MultiDiGraph()
        self.name = name

    @cached_property
    def index(self) -> GraphIndex:
        """Lookups derived from this graph (built on first use, freed with it)."""
        return GraphIndex()

    # -- queries -------------------------------------------------------------
    def __len__(self) -> int:
        return self.g.number_of_nodes()

    def __contains__(self, node: object) -> bool:
        return node in self.g

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={n}" for k, n in self.edge_counts().items())
        return f"ToolGraph({self.name!r}, {len(self)} tools, {counts})"

    @property
    def nodes(self) -> list[str]:
        """Tool names, sorted."""
        return sorted(self.g.nodes)

    def node(self, name: str) -> dict[str, Any]:
        """Attributes of one tool."""
        return self.g.nodes[name]

    def edges(self, kind: str | None = None, source: str | None = None, target: str | None = None) -> list[Edge]:
        """``(source, target, key, attrs)`` edges, optionally filtered, sorted.

        Results are memoised: a ToolGraph is not changed after it is built.
        """
        memo = self.index.edges
        hit = memo.get((kind, source, target))
        if hit is not None:
            return hit
        if source is not None:
            it = self.g.out_edges(source, keys=True, data=True)
        elif target is not None:
            it = self.g.in_edges(target, keys=True, data=True)
        else:
            it = self.g.edges(keys=True, data=True)
        out = [(u, v, k, d) for u, v, k, d in it if (kind is None or d["kind"] == kind) and (target is None or v == target)]
        out.sort(key=lambda e: (e[0], e[1], e[2]))
        memo[(kind, source, target)] = out
        return out

    def inputs(self, tool: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
        """``(required id params as (param, entity), sorted; data suppliers as (source tool, param))`` (memoised)."""
        memo = self.index.inputs
        hit = memo.get(tool)
        if hit is None:
            requires = tuple(sorted(self.node(tool).get("requires", {}).items()))
            suppliers = tuple((u, d["param"]) for u, _, _, d in self.edges("data", target=tool))
            hit = memo[tool] = (requires, suppliers)
        return hit

    def requirements(self) -> dict[str, tuple[tuple[str, str, frozenset[str]], ...]]:
        """Per tool: its required id parameters, sorted, as ``(param, entity, suppliers)``, where
        ``suppliers`` are the other tools with a ``data`` edge to it for that parameter (memoised).
        """
        return self.index.of(ToolGraph._find_requirements, self)

    def _find_requirements(self) -> dict[str, tuple[tuple[str, str, frozenset[str]], ...]]:
        out = {}
        for tool in self.g.nodes:
            requires, suppliers = self.inputs(tool)
            out[tool] = tuple((p, e, frozenset(u for u, q in suppliers if q == p and u != tool)) for p, e in requires)
        return out

    def has_edge(self, source: str, target: str, kind: str | None = None, **attrs: Any) -> bool:
        """Whether an edge ``source -> target`` of ``kind`` with all of ``attrs`` exists."""
        return any(all(d.get(a) == v for a, v in attrs.items()) for *_, d in self.edges(kind, source, target))

    def edge_counts(self) -> dict[str, int]:
        """Number of edges of each kind."""
        counts = dict.fromkeys(EDGE_KINDS, 0)
        for *_, d in self.g.edges(data=True):
            counts[d["kind"]] = counts.get(d["kind"], 0) + 1
        return counts

    def successors(self, node: str, kind: str | None = None) -> list[str]:
        return sorted({v for _, v, _, _ in self.edges(kind, source=node)})

    def predecessors(self, node: str, kind: str | None = None) -> list[str]:
        return sorted({u for u, _, _, d in self.g.in_edges(node, keys=True, data=True) if kind is None or d["kind"] == kind})

    def neighbours(self, node: str, kind: str | None = None) -> list[str]:
        """Successors and predecessors (both directions), sorted (memoised)."""
        memo = self.index.neighbours
        hit = memo.get((node, kind))
        if hit is None:
            hit = memo[(node, kind)] = sorted(set(self.successors(node, kind)) | set(self.predecessors(node, kind)))
        return hit

    def adjacency(self) -> dict[str, frozenset[str]]:
        """Per tool: its :meth:`neighbours` over any edge kind, as a set (memoised)."""
        return self.index.of(ToolGraph._find_adjacency, self)

    def _find_adjacency(self) -> dict[str, frozenset[str]]:
        return {tool: frozenset(self.neighbours(tool)) for tool in self.g.nodes}

    def projection(self, kinds: Iterable[str] | None = None) -> nx.DiGraph:
        """Simple DiGraph with an edge ``u -> v`` when some edge of ``kinds`` joins them."""
        keep = set(kinds) if kinds is not None else set(EDGE_KINDS)
        d = nx.DiGraph()
        d.add_nodes_from(self.nodes)
        d.add_edges_from((u, v) for u, v, k in self.g.edges(data="kind") if k in keep)
        return d

    def subgraph(self, nodes: Iterable[str]) -> ToolGraph:
        """The induced sub-graph on ``nodes`` (a copy)."""
        return ToolGraph(nx.MultiDiGraph(self.g.subgraph(list(nodes))), self.name)

    def stats(self, path_budget: int = 20000) -> dict[str, Any]:
        """Summary numbers; see :func:`envsynth.graph.metrics.graph_stats`."""
        from envsynth.graph.metrics import graph_stats

        return graph_stats(self, path_budget=path_budget)

    # -- serialisation ---------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, sorted data (nodes by name, edges by source, target, key)."""
        nodes = [{"name": n, **_sorted_attrs(self.g.nodes[n])} for n in self.nodes]
        edges = [{"source": u, "target": v, "key": k, **_sorted_attrs(d)} for u, v, k, d in self.edges()]
        return {"format": FORMAT, "version": VERSION, "app": self.name, "edge_counts": self.edge_counts(), "nodes": nodes, "edges": edges}

    def to_json(self) -> str:
        """Deterministic JSON text (sorted keys, two-space indent, trailing newline)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, data: str | bytes | dict[str, Any]) -> ToolGraph:
        """Rebuild a graph from :meth:`to_json` text (or its parsed dict).

        Raises:
            ValueError: if the data is not a tool graph of a known version.
        """
        d = json.loads(data) if isinstance(data, str | bytes) else data
        if d.get("format") != FORMAT or d.get("version") != VERSION:
            raise ValueError(f"not a {FORMAT} v{VERSION} document (format={d.get('format')!r}, version={d.get('version')!r})")
        g = nx.MultiDiGraph()
        for n in d["nodes"]:
            attrs = dict(n)
            g.add_node(attrs.pop("name"), **attrs)
        for e in d["edges"]:
            attrs = dict(e)
            u, v, k = attrs.pop("source"), attrs.pop("target"), attrs.pop("key")
            g.add_edge(u, v, key=k, **attrs)
        return cls(g, d.get("app"))

    def to_dot(self, kinds: Iterable[str] | None = None) -> str:
        """Graphviz DOT text; write tools are shaded, edges coloured by kind."""
        keep = set(kinds) if kinds is not None else set(EDGE_KINDS)
        colours = {"data": "#1f77b4", "logic": "#d62728", "state": "#7f7f7f"}
        lines = [f"digraph {_q(self.name or 'tools')} {{", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
        for n in self.nodes:
            a = self.g.nodes[n]
            fill = "#fde0c5" if a.get("mode") == "write" else "#e8f1fb"
            lines.append(f"  {_q(n)} [label={_q(n + chr(10) + str(a.get('kind', '')))}, style=filled, fillcolor={_q(fill)}];")
        for u, v, k, d in self.edges():
            if d["kind"] not in keep:
                continue
            label = (
                d.get("param")
                or d.get("table")
                or (
                    f"{d.get('field') or d.get('entity')}={d.get('value')}"
                    if d.get("value") is not None
                    else d.get("field") or d.get("entity")
                )
            )
            style = "dashed" if d["kind"] == "state" else "solid"
            lines.append(
                f"  {_q(u)} -> {_q(v)} [color={_q(colours.get(d['kind'], 'black'))}, style={style}, label={_q(str(label))}, tooltip={_q(k)}];"
            )
        lines.append("}")
        return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _sorted_attrs(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (dict(sorted(v.items())) if isinstance(v, dict) else v) for k, v in sorted(d.items())}
