"""The tool dependency graph: typed edges between an app's tools, and K(C) expansion.

Usage::

    from envsynth.graph import build_graph, expand_subgraph, structural_complexity
    g = build_graph(app)                       # App, or a list of ToolSpecs
    g.edges("data", source="place_order")      # (source, target, key, attrs)
    tools = expand_subgraph(g, ["place_order", "pay_order"], min_size=20, rng=7)
    c = structural_complexity(g, tools)
    text = g.to_json(); same = ToolGraph.from_json(text)

Edge kinds: ``data`` (an output id of A fills a parameter of B), ``logic`` (A's effect
establishes B's pre-condition), ``state`` (A writes a table B reads).
"""

from __future__ import annotations

from envsynth.graph.build import build_graph
from envsynth.graph.expansion import expand_subgraph, missing_inputs
from envsynth.graph.io import GRAPH_FILE, read_graph, write_graph
from envsynth.graph.metrics import LAMBDA, S_SAT, graph_stats, longest_simple_path, structural_complexity
from envsynth.graph.model import EDGE_KINDS, ToolGraph

__all__ = [
    "EDGE_KINDS",
    "GRAPH_FILE",
    "LAMBDA",
    "S_SAT",
    "ToolGraph",
    "build_graph",
    "expand_subgraph",
    "graph_stats",
    "longest_simple_path",
    "missing_inputs",
    "read_graph",
    "structural_complexity",
    "write_graph",
]
