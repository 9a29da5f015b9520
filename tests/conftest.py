"""Shared fixtures: catalogue apps are built once per test session."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.compiler.build import BuiltApp, build_app

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def built_catalog(tmp_path_factory: pytest.TempPathFactory) -> dict[str, BuiltApp]:
    """Every shipped blueprint compiled and procedurally tested into one folder."""
    out = tmp_path_factory.mktemp("catalog")
    return {name: build_app(catalog.load(name), out, seed=0) for name in catalog.names()}


@pytest.fixture(scope="session")
def bookshop_blueprint_path() -> Path:
    return DATA / "bookshop.yaml"
