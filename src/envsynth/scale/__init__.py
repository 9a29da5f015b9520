"""Executors: this machine's processes or a Ray cluster, for builds and runs to spread their work over (docs/scale.md).

A leaf package: the stages that spread work over an executor hold that logic themselves
(:mod:`envsynth.corpus.spread`, :mod:`envsynth.rollout.spread`).

Usage::

    from envsynth import catalog
    from envsynth.corpus import build_corpus
    from envsynth.scale import open_executor

    with open_executor("ray", address="auto") as ex:     # or "local", workers=4
        build_corpus("corpus/", blueprints=[catalog.load(n) for n in catalog.names()], tasks_per_app=10, executor=ex)
"""

from __future__ import annotations

from envsynth.scale.executor import EXECUTORS, Executor, ExecutorError, LocalExecutor, RayExecutor, open_executor

__all__ = ["EXECUTORS", "Executor", "ExecutorError", "LocalExecutor", "RayExecutor", "open_executor"]
