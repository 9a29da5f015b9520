"""A small corpus (harbor_market with its 41 tools, tempo_music; T=3, S=2, D=4) and an oracle run on it, built once."""

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
    from envsynth.rollout.command import run_command

    root = tmp_path_factory.mktemp("report")
    bps = [catalog.load("harbor_market"), catalog.load("tempo_music")]
    summary = build_corpus(root / "corpus", blueprints=bps, tasks_per_app=3, states=2, distractors=4, seed=0)
    run_command(summary.path, out=root / "oracle", agent="oracle")
    return CorpusAndRun(corpus=summary.path, run=root / "oracle")
