"""A tiny corpus (one app, T=2) and a sandbox with short limits, shared by the sandbox tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import FORCE_FALLBACK

from envsynth import catalog
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.sandbox import CodeSandbox, Limits, WorkerPool, fallback_mode


@pytest.fixture(scope="session")
def sbx_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out: Path = tmp_path_factory.mktemp("sandbox") / "corpus"
    build_corpus(out, blueprints=[catalog.load("harbor_market")], tasks_per_app=2, states=1, seed=0)
    return load_corpus(out)


@pytest.fixture(scope="session")
def sandbox() -> Iterator[CodeSandbox]:
    limits = Limits(wall=3.0, cpu=1.0, memory=256 << 20, output=2000)
    with CodeSandbox(workers=2, limits=limits) as sb:
        if FORCE_FALLBACK:
            sb.pool.close()
            sb.pool = WorkerPool(size=2, limits=limits, mode=fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1"))
        yield sb
        sb.pool.close()
