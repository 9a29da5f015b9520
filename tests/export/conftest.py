"""A small corpus and an oracle run (2 attempts), made once through the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="session")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(corpus folder, run folder)."""
    root = tmp_path_factory.mktemp("export")
    corpus, run = root / "corpus", root / "run"
    _cli("build", str(corpus), "-d", "tempo_music", "-T", "2", "-S", "2")
    _cli("run", str(corpus), "--agent", "oracle", "--attempts", "2", "--out", str(run))
    return corpus, run
