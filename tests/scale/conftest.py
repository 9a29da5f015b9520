"""The local build of the small catalogue corpus every scale test compares with, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from scale_helpers import COMPOSITION, blueprints

from envsynth.corpus import build_corpus


@pytest.fixture(scope="session")
def local_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus (2 catalogue apps, T=3, S=2, D=2) built locally, one process: the reference bytes."""
    out = tmp_path_factory.mktemp("scale") / "local"
    build_corpus(out, blueprints=blueprints(), **COMPOSITION)
    return out
