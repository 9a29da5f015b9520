"""Graph statistics and the structural complexity c(H) of a tool sub-graph."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    from envsynth.graph.model import ToolGraph

LAMBDA = 0.5
S_SAT = 50.0


def structural_complexity(
    graph: ToolGraph, nodes: Iterable[str] | None = None, *, lam: float = LAMBDA, s_sat: float = S_SAT, kinds: Iterable[str] | None = None
) -> float:
    """c(H) = |V| + lam * |E| / s_sat for the sub-graph H induced by ``nodes``.

    |E| counts dependency pairs: ordered pairs ``(u, v)``, ``u != v``, joined by at least
    one edge of ``kinds`` (all kinds by default), so parallel edges of the multigraph
    count once.

    Args:
        graph: the tool graph.
        nodes: the tools of H (default: the whole graph).
        lam: weight of the edge term (ScaleEnv: 0.5).
        s_sat: edge-count normaliser (ScaleEnv: 50).
        kinds: edge kinds to count.

    Returns:
        The complexity score.
    """
    proj = graph.projection(kinds)
    keep = set(graph.nodes if nodes is None else nodes)
    h = proj.subgraph(keep)
    n_edges = sum(1 for u, v in h.edges if u != v)
    return len(keep) + lam * n_edges / s_sat


def longest_simple_path(g: nx.DiGraph, budget: int = 20000) -> tuple[list[str], bool]:
    """Longest simple path found by a depth-first search with a step budget.

    Starts from nodes with the fewest predecessors first; the budget is shared evenly
    between start nodes, so every start gets explored a little.

    Args:
        g: a simple directed graph (self-loops are ignored).
        budget: total number of DFS steps.

    Returns:
        ``(path, exhaustive)``; ``exhaustive`` is True when no start ran out of budget,
        i.e. the path is a true longest simple path.
    """
    nodes = sorted(g.nodes, key=lambda n: (sum(1 for p in g.predecessors(n) if p != n), n))
    succ = {n: sorted(s for s in g.successors(n) if s != n) for n in nodes}
    best: list[str] = []
    exhaustive = True
    per_start = max(1, budget // max(1, len(nodes)))
    for start in nodes:
        steps = 0
        path, on_path = [start], {start}
        stack = [iter(succ[start])]
        while stack:
            if steps >= per_start:
                exhaustive = False
                break
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
                continue
            if nxt in on_path:
                continue
            steps += 1
            path.append(nxt)
            on_path.add(nxt)
            stack.append(iter(succ[nxt]))
            if len(path) > len(best):
                best = list(path)
                if len(best) == len(nodes):
                    return best, True
        if not best:
            best = [start]
    return best, exhaustive


def graph_stats(graph: ToolGraph, path_budget: int = 20000) -> dict[str, Any]:
    """Summary numbers of a tool graph.

    Args:
        graph: the tool graph.
        path_budget: DFS steps for the longest data path estimate.

    Returns:
        ``nodes``, ``edges``, ``edges_by_kind``, ``density`` (of the simple projection,
        all kinds), ``mean_out_degree`` (multigraph edges per tool), ``weak_components``,
        ``entry_tools`` (tools without an incoming data edge from another tool) and
        ``longest_data_path`` (``length`` in edges, ``path``, ``exhaustive``).
    """
    n = len(graph)
    proj = graph.projection()
    data = graph.projection(["data"])
    entries = [v for v in graph.nodes if not any(u != v for u in data.predecessors(v))]
    path, exhaustive = longest_simple_path(data, path_budget) if n else ([], True)
    counts = graph.edge_counts()
    total = sum(counts.values())
    return {
        "nodes": n,
        "edges": total,
        "edges_by_kind": counts,
        "density": round(nx.density(proj), 6) if n > 1 else 0.0,
        "mean_out_degree": round(total / n, 6) if n else 0.0,
        "weak_components": nx.number_weakly_connected_components(graph.g) if n else 0,
        "entry_tools": len(entries),
        "longest_data_path": {"length": max(0, len(path) - 1), "path": path, "exhaustive": exhaustive},
    }
