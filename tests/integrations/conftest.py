"""A small corpus built once for the trainer-integration tests (offline: harbor_market, 3 tasks in 2 states)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.corpus import Corpus, build_corpus, load_corpus


@pytest.fixture(scope="session")
def integration_corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("integrations") / "corpus"
    build_corpus(out, blueprints=[catalog.load("harbor_market")], tasks_per_app=3, states=2, distractors=1, seed=0)
    return out


@pytest.fixture(scope="session")
def integration_corpus(integration_corpus_path: Path) -> Corpus:
    """The tests' own view of the corpus (oracles come from here)."""
    return load_corpus(integration_corpus_path)
