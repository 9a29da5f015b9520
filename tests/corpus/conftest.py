"""A small reference corpus (2 apps, T=3, S=2, D=2), built once; tests copy it or its apps."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus_helpers import COMPOSITION, DATA

from envsynth import catalog, load_blueprint
from envsynth.blueprint.models import Blueprint
from envsynth.corpus import CorpusSummary, build_corpus


@pytest.fixture(scope="session")
def blueprints() -> list[Blueprint]:
    return [catalog.load("tempo_music"), load_blueprint(DATA / "bookshop.yaml")]


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory, blueprints: list[Blueprint]) -> CorpusSummary:
    """The reference corpus, built serially from nothing."""
    return build_corpus(tmp_path_factory.mktemp("corpus") / "ref", blueprints=blueprints, **COMPOSITION)


@pytest.fixture
def with_apps(tmp_path: Path, reference: CorpusSummary) -> Callable[[str], Path]:
    """A fresh corpus folder holding only the reference's built apps (so the app build is skipped)."""

    def make(name: str = "out") -> Path:
        out = tmp_path / name
        shutil.copytree(reference.path / "apps", out / "apps")
        return out

    return make
