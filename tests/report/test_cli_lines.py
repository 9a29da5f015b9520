"""Long commands end with a one-line summary: ``envsynth run``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from envsynth.cli import app as cli
from envsynth.corpus import load_corpus


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


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """Run ``envsynth ARGS`` with stderr on a pseudo-terminal (as a person sees it): (exit code, stdout, terminal text)."""
    master, slave = os.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "120", "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-m", "envsynth.cli", *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_long_commands_show_progress_on_a_terminal(corpus_and_run: Any, tmp_path: Path) -> None:
    code, out, term = _stderr_on_a_terminal(["report", str(corpus_and_run.corpus), str(corpus_and_run.run), "--out", str(tmp_path / "r")])
    assert code == 0 and out.startswith("report: ")
    n = len(load_corpus(corpus_and_run.corpus).tasks)
    assert "report" in term and "tasks" in term and f"{n}/{n}" in term  # the bar of the task pages, at its end
    app = corpus_and_run.corpus / "apps" / "tempo_music"
    code, out, term = _stderr_on_a_terminal(["test", str(app)])
    assert code == 0 and "cases:" in out
    assert "testing tempo_music: 40 tools" in term
