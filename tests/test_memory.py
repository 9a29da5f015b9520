"""Derived lookups live on the objects they derive from and die with them (issue 14).

Building (compile + procedural tests + tool graph) and synthesising tasks for the same
catalogue blueprint again and again in one process, each round with fresh objects whose
references are dropped, must not grow memory after the first round: a module-level cache
keyed by ``id()`` of an app, a blueprint, a tool spec or a graph keeps every one of them
(about 3 MB per round) alive for the life of the process.
"""

from __future__ import annotations

import gc
import tracemalloc
import weakref

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize
from envsynth.testing.procedural import test_app

ROUNDS = 10
DOMAIN = "taskboard"  # the quickest catalogue app to test procedurally
GROWTH_BOUND = 300_000  # bytes over rounds 2..10; every id()-keyed cache made it grow ~3 MB per round


def _one_round() -> tuple[int, list[weakref.ref[object]]]:
    """Compile, test, graph and synthesise one app from a freshly loaded blueprint; the admitted
    count, and weak references to the app, its blueprint, a tool spec and the graph."""
    app = compile_app(catalog.load(DOMAIN), 0)
    report = test_app(app, 0)
    if not report.passed:
        raise AssertionError(f"{DOMAIN}: procedural tests failed")
    graph = build_graph(app)
    admitted = 0
    for i in range(4):
        res = synthesize(app, graph, app_index=0, task_index=i, states=2, depth=4, seed=0)
        admitted += 0 if isinstance(res, Rejection) else 1
    return admitted, [weakref.ref(app), weakref.ref(app.blueprint), weakref.ref(app.specs[0]), weakref.ref(graph)]


def traced_rounds(rounds: int = ROUNDS) -> tuple[list[int], list[int], list[int]]:
    """Per round: traced memory after a full collection, the admitted count, and how many of the
    round's app, blueprint, tool spec and graph were still alive then."""
    sizes: list[int] = []
    admitted: list[int] = []
    alive: list[int] = []
    tracemalloc.start()
    try:
        for _ in range(rounds):
            n, refs = _one_round()
            gc.collect()
            sizes.append(tracemalloc.get_traced_memory()[0])
            admitted.append(n)
            alive.append(sum(r() is not None for r in refs))
    finally:
        tracemalloc.stop()
    return sizes, admitted, alive


def test_building_the_same_blueprint_again_does_not_grow_memory() -> None:
    sizes, admitted, alive = traced_rounds()
    assert admitted[0] > 0 and len(set(admitted)) == 1  # every round did the same, real work
    assert alive == [0] * ROUNDS, f"app, blueprint, spec, graph still alive after each round: {alive}"
    growth = sizes[-1] - sizes[1]
    mb = [round(s / 1e6, 2) for s in sizes]
    assert growth < GROWTH_BOUND, f"traced memory after each round (MB): {mb}; grew {growth} bytes over rounds 2..{ROUNDS}"
