"""A small real corpus (harbor_market + tempo_music, T=3, S=2, D=1), built once for the agent tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.corpus import Corpus, build_corpus, load_corpus


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agents") / "corpus"
    build_corpus(
        out, blueprints=[catalog.load("harbor_market"), catalog.load("tempo_music")], tasks_per_app=3, states=2, distractors=1, seed=0
    )
    return out


@pytest.fixture(scope="session")
def corpus(corpus_path: Path) -> Corpus:
    return load_corpus(corpus_path)
