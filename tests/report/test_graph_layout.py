"""The report's graph layout stays legible at 60 tools: one box per entity, no two tools on top of each other."""

from __future__ import annotations

import itertools

import networkx as nx

from envsynth.graph.model import ToolGraph
from envsynth.view.html.graph import NODE_H, NODE_W, graph_elements


def big_graph() -> ToolGraph:
    g = nx.MultiDiGraph()
    entities = [f"entity_{i}" for i in range(7)]
    tools = [(f"tool_{i:02d}", entities[i % 7 if i < 42 else 0]) for i in range(60)]  # entity_0 gets 24 tools
    for name, ent in tools:
        g.add_node(name, entity=ent, mode="read" if len(name) % 2 else "write", kind="get")
    for (a, _), (b, _) in itertools.product(tools[:30], tools[30:]):
        g.add_edge(a, b, key="data:x", kind="data")
        g.add_edge(a, b, key="state:y", kind="state")
    return ToolGraph(g, "big")


def test_sixty_tools_in_entity_boxes_without_overlap() -> None:
    out = graph_elements(big_graph(), [f"entity_{i}" for i in range(7)])
    tools = [e for e in out["elements"] if e["data"].get("type") == "tool"]
    edges = [e for e in out["elements"] if e["group"] == "edges"]
    assert out["tools"] == len(tools) == 60
    assert out["edges"] == 2 * 30 * 30 and out["pairs"] == len(edges) == 30 * 30  # parallel edges merged
    assert all(e["data"]["kinds"] == "data state" for e in edges)
    boxes: dict[str, list[tuple[float, float]]] = {}
    for t in tools:
        boxes.setdefault(t["data"]["parent"], []).append((t["position"]["x"], t["position"]["y"]))
    assert len(boxes) == 7
    points = [p for ps in boxes.values() for p in ps]
    assert len(set(points)) == 60  # no two tools at one place
    assert all(abs(x1 - x2) >= NODE_W or abs(y1 - y2) >= NODE_H for (x1, y1), (x2, y2) in itertools.combinations(points, 2))
    spans = {
        k: (min(x for x, _ in ps), max(x for x, _ in ps) + NODE_W, min(y for _, y in ps), max(y for _, y in ps) + NODE_H)
        for k, ps in boxes.items()
    }
    for (a, sa), (b, sb) in itertools.combinations(spans.items(), 2):  # entity boxes do not overlap
        assert sa[1] <= sb[0] or sb[1] <= sa[0] or sa[3] <= sb[2] or sb[3] <= sa[2], (a, b)
