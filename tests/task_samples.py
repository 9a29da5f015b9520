"""Catalogue apps compiled once and the task indexes of each synthesized once, shared by the construct tests."""

from __future__ import annotations

from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize


@cache
def compiled(name: str) -> App:
    """The catalogue app ``name``, compiled (seed 0)."""
    return compile_app(catalog.load(name), 0)


@cache
def synthesized(name: str, states: int, indexes: int = 40, depth: int = 4) -> list[list[Task]]:
    """The admitted tasks (every state) of the first ``indexes`` task indexes of app ``name``, at its catalogue index."""
    app = compiled(name)
    graph = build_graph(app)
    out = []
    for t in range(indexes):
        made = synthesize(app, graph, app_index=catalog.names().index(name), task_index=t, states=states, depth=depth)
        if not isinstance(made, Rejection):
            out.append(made)
    return out
