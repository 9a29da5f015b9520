"""Synthesis does not depend on Python's string hashing: set and frozenset iteration order
changes with PYTHONHASHSEED from one process to the next, so two processes with different
hash seeds must synthesize the same records (the corpus build's "deterministic per seed"
holds across runs and across pool workers)."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import hashlib
from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize
digest = hashlib.sha256()
for name in catalog.names():
    app = compile_app(catalog.load(name), 0)
    graph = build_graph(app)
    for depth, states in ((0, 1), (4, 2)):
        for i in range(12):
            r = synthesize(app, graph, app_index=0, task_index=i, states=states, depth=depth, seed=0)
            for line in [r.model_dump_json()] if isinstance(r, Rejection) else [t.hash for t in r]:
                digest.update(line.encode())
print(digest.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.strip()


def test_synthesis_is_the_same_under_other_hash_seeds() -> None:
    first = _digest("1")
    assert len(first) == 64
    assert _digest("2") == first
    assert _digest("3") == first
