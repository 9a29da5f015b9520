"""Dependency-aware BFS expansion of a task chain into a tool sub-graph (ScaleEnv's K(C))."""

from __future__ import annotations

import random
from collections.abc import Iterable

from envsynth.graph.model import ToolGraph


def missing_inputs(graph: ToolGraph, tool: str, selected: Iterable[str]) -> dict[str, str]:
    """Required id parameters of ``tool`` that no other selected tool can fill.

    A parameter is fillable when some tool of ``selected`` (other than ``tool``) has a
    ``data`` edge to ``tool`` for that parameter.

    Args:
        graph: the tool graph.
        tool: the candidate tool.
        selected: the tools already in the set.

    Returns:
        param -> entity for each unfillable required id parameter (empty: all satisfied).
    """
    requires = graph.requirements()[tool]
    if not requires:
        return {}
    chosen = selected if isinstance(selected, (set, frozenset)) else set(selected)
    return {p: e for p, e, suppliers in requires if suppliers.isdisjoint(chosen)}


def expand_subgraph(graph: ToolGraph, chain: list[str], min_size: int = 20, rng: random.Random | int | None = None) -> list[str]:
    """Grow a chain's tools into a dependency-closed tool set.

    Breadth-first: each round collects the neighbours (both directions, any edge kind)
    of the current set, shuffles them with ``rng`` and adds, in that order, every one
    whose required id parameters can all be filled by a data edge from a tool already
    in the set (see :func:`missing_inputs`). Stops at ``min_size`` tools or when a round
    adds nothing.

    Args:
        graph: the tool graph.
        chain: the task chain's tools (kept first, in order, duplicates dropped).
        min_size: target number of tools.
        rng: a ``random.Random`` or a seed (None: seed 0); same seed, same result.

    Returns:
        The selected tools in the order they were added.

    Raises:
        KeyError: if a chain tool is not in the graph.
    """
    adjacency = graph.adjacency()
    unknown = [t for t in chain if t not in adjacency]
    if unknown:
        raise KeyError(f"tools not in the graph: {unknown}")
    r = rng if isinstance(rng, random.Random) else random.Random(0 if rng is None else rng)
    selected = list(dict.fromkeys(chain))
    in_set = set(selected)
    requirements = graph.requirements()
    around: set[str] = set()  # neighbours of the selected tools (the set itself included)
    for t in selected:
        around |= adjacency[t]
    while len(selected) < min_size:
        frontier = sorted(around - in_set)
        r.shuffle(frontier)
        added = False
        for v in frontier:
            for _, _, suppliers in requirements[v]:
                if suppliers.isdisjoint(in_set):
                    break  # a required input no selected tool supplies
            else:
                selected.append(v)
                in_set.add(v)
                around |= adjacency[v]
                added = True
                if len(selected) >= min_size:
                    break
        if not added:
            break
    return selected
