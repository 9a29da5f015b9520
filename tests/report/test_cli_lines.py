"""Long commands end with a one-line summary: ``envsynth run``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from envsynth.cli import app as cli


def test_run_ends_with_a_one_line_summary(corpus_and_run: Any, tmp_path: Path) -> None:
    out = tmp_path / "run"
    got = CliRunner().invoke(cli, ["run", str(corpus_and_run.corpus), "--agent", "oracle", "--out", str(out), "--limit", "2", "-k", "2"])
    assert got.exit_code == 0, got.output
    last = got.output.strip().splitlines()[-1]
    assert re.fullmatch(rf"run: 4 episodes of 2 tasks, pass@1 1\.000, pass@2 1\.000 in \d+\.\ds -> {re.escape(str(out))}", last), last
    as_json = CliRunner().invoke(
        cli, ["run", str(corpus_and_run.corpus), "--agent", "oracle", "--out", str(out), "--limit", "2", "-k", "2", "--json"]
    )
    assert "run: " not in as_json.output  # --json prints JSON only
