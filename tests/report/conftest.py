"""The demo corpus (`make demo`: every catalogue domain, T=10, S=2, D=2) and an oracle run on it, built once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.corpus import build_corpus


@dataclass
class CorpusAndRun:
    corpus: Path
    run: Path


@pytest.fixture(scope="session")
def corpus_and_run(tmp_path_factory: pytest.TempPathFactory) -> CorpusAndRun:
    from envsynth.rollout import RunConfig
    from envsynth.rollout.command import run_command

    root = tmp_path_factory.mktemp("report")
    bps = [catalog.load(e.name) for e in catalog.entries()]
    summary = build_corpus(root / "corpus", blueprints=bps, tasks_per_app=10, states=2, distractors=2, seed=0)
    run_command(RunConfig(corpus=summary.path, out=root / "oracle", agent="oracle"))
    return CorpusAndRun(corpus=summary.path, run=root / "oracle")
