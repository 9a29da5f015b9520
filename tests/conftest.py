"""Shared fixtures: catalogue apps are built once per test session."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.compiler.build import BuiltApp, build_app

DATA = Path(__file__).parent / "data"


class BuiltCatalog(Mapping[str, BuiltApp]):
    """The shipped apps by name, each compiled and procedurally tested into one folder the first time
    it is asked for: a run selecting one app's tests (``-k name``) builds that app only."""

    def __init__(self, out: Path) -> None:
        self._out, self._built = out, dict[str, BuiltApp]()

    def __getitem__(self, name: str) -> BuiltApp:
        if name not in self._built:
            if name not in catalog.names():
                raise KeyError(name)
            self._built[name] = build_app(catalog.load(name), self._out, seed=0)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(catalog.names())

    def __len__(self) -> int:
        return len(catalog.names())


@pytest.fixture(scope="session")
def built_catalog(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, BuiltApp]:
    """Every shipped blueprint, compiled and procedurally tested on first use (:class:`BuiltCatalog`)."""
    return BuiltCatalog(tmp_path_factory.mktemp("catalog"))


@pytest.fixture(scope="session")
def bookshop_blueprint_path() -> Path:
    return DATA / "bookshop.yaml"
