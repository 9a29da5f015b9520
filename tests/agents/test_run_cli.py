"""`envsynth run` as a user runs it: a real corpus, a real subprocess, a resumable run folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real corpus of one app (3 tasks x 2 states), built once for the module."""
    out = tmp_path_factory.mktemp("run_cli") / "corpus"
    res = run("build", str(out), "--domain", "tempo_music", "--tasks-per-app", "3", "--states", "2", "--distractors", "1")
    assert res.returncode == 0, res.stderr
    return out


def test_oracle_run_scores_every_task_and_resumes(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = run("run", str(corpus), "--agent", "oracle", "--attempts", "2", "--out", str(out), "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["pass@1"] == 1.0
    lines = (out / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 6 * 2  # 3 tasks x 2 states, 2 attempts each
    first = json.loads(lines[0])
    assert first["messages"][0]["role"] in ("system", "user") and first["reward"]["score"] == 1.0
    # rerunning the finished run does no new work
    again = run("run", str(corpus), "--agent", "oracle", "--attempts", "2", "--out", str(out), "--json")
    assert again.returncode == 0
    assert (out / "trajectories.jsonl").read_text().splitlines() == lines


def test_run_needs_a_model_for_the_openai_agent(tmp_path: Path) -> None:
    res = run("run", str(tmp_path), "--agent", "openai", "--out", str(tmp_path / "r"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    # refused for the missing model (not for the empty corpus folder, which is read later), by its flag
    assert "error: --model: agent 'openai' needs a model name" in res.stderr and "corpus" not in res.stderr
    res = run("run", str(tmp_path), "--agent", "oracle", "--attempts", "0", "--seed", "-1", "--out", str(tmp_path / "r"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr  # one line, every problem on it
    assert "--attempts: Input should be greater than or equal to 1 (got 0)" in res.stderr and "--seed: " in res.stderr
