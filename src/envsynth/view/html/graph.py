"""An app's tool dependency graph as Cytoscape.js elements, tools grouped by entity at fixed positions.

The drawing stays legible at 50+ tools and hundreds of edges: tools sit in one box per entity
(laid out on a grid in the blueprint's entity order), parallel edges between two tools are
merged into one (carrying every kind and detail), and the page fades all edges until a tool
is picked, then shows only that tool's edges and neighbours (see ``assets/graph.js``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from envsynth.graph.model import ToolGraph

NODE_W = 210
"""Horizontal room of one tool inside an entity box (pixels of the drawing)."""
NODE_H = 46
"""Vertical room of one tool."""
PER_COLUMN = 6
"""Tools stacked in one column of an entity box before a new column starts."""
GAP = 90
"""Space between entity boxes."""


def _clusters(graph: ToolGraph, entity_order: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for name in graph.nodes:
        groups[str(graph.node(name).get("entity") or "other")].append(name)
    rank = {e: i for i, e in enumerate(entity_order)}
    return {e: groups[e] for e in sorted(groups, key=lambda e: (rank.get(e, len(rank)), e))}


def _positions(clusters: dict[str, list[str]]) -> dict[str, tuple[float, float]]:
    """Tool -> (x, y): entity boxes on a grid, tools in columns of :data:`PER_COLUMN` inside each box."""
    if not clusters:
        return {}
    widest = max(math.ceil(len(t) / PER_COLUMN) for t in clusters.values())
    tallest = min(PER_COLUMN, max(len(t) for t in clusters.values()))
    cell_w, cell_h = widest * NODE_W + GAP, tallest * NODE_H + GAP
    per_row = max(1, math.ceil(math.sqrt(len(clusters) * cell_h / cell_w)))
    out: dict[str, tuple[float, float]] = {}
    for i, tools in enumerate(clusters.values()):
        x0, y0 = (i % per_row) * cell_w, (i // per_row) * cell_h
        for j, tool in enumerate(tools):
            out[tool] = (x0 + (j // PER_COLUMN) * NODE_W, y0 + (j % PER_COLUMN) * NODE_H)
    return out


def _edges(graph: ToolGraph) -> list[dict[str, Any]]:
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for source, target, key, attrs in graph.edges():
        e = merged.setdefault((source, target), {"source": source, "target": target, "kinds": set(), "details": []})
        e["kinds"].add(str(attrs.get("kind", key.split(":")[0])))
        e["details"].append(key)
    out = []
    for i, ((source, target), e) in enumerate(sorted(merged.items())):
        kinds = sorted(e["kinds"])
        out.append(
            {
                "group": "edges",
                "data": {
                    "id": f"e{i}",
                    "source": source,
                    "target": target,
                    "kinds": " ".join(kinds),
                    "main": "logic" if "logic" in kinds else "state" if "state" in kinds else "data",
                    "details": e["details"],
                },
            }
        )
    return out


def graph_elements(graph: ToolGraph, entity_order: list[str]) -> dict[str, Any]:
    """Cytoscape.js elements of ``graph`` with preset positions, and counts.

    Args:
        graph: the app's tool graph (``graph.json``).
        entity_order: the blueprint's entity names, in the order the boxes are laid out.

    Returns:
        ``elements`` (entity boxes, tools, merged edges), ``tools``, ``edges`` (typed edges of the
        graph) and ``pairs`` (tool pairs with at least one edge: the drawn edges).
    """
    clusters = _clusters(graph, entity_order)
    pos = _positions(clusters)
    elements: list[dict[str, Any]] = [{"group": "nodes", "data": {"id": f"entity:{e}", "label": e, "type": "entity"}} for e in clusters]
    for entity, tools in clusters.items():
        for tool in tools:
            attrs = graph.node(tool)
            x, y = pos[tool]
            elements.append(
                {
                    "group": "nodes",
                    "data": {
                        "id": tool,
                        "label": tool,
                        "type": "tool",
                        "parent": f"entity:{entity}",
                        "mode": attrs.get("mode", ""),
                        "kind": attrs.get("kind", ""),
                    },
                    "position": {"x": x, "y": y},
                }
            )
    edges = _edges(graph)
    return {"elements": elements + edges, "tools": len(graph), "edges": graph.g.number_of_edges(), "pairs": len(edges)}
