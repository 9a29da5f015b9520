"""The tools a task shows the agent: the chain, the tools that supply its ids, then neighbours to 20.

Part of the core stage; which tool supplies a parameter is memoised on the graph's index.
"""

from __future__ import annotations

import random

from envsynth.graph import expand_subgraph, missing_inputs
from envsynth.graph.model import ToolGraph

MIN_VISIBLE = 20


def visible_tools(graph: ToolGraph, chain: list[str], rng: random.Random) -> list[str]:
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
