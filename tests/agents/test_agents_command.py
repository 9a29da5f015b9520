"""The function behind ``envsynth run``."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth.rollout.command import run_command, summary_rows


def test_run_command_oracle(corpus_path: Path, tmp_path: Path) -> None:
    seen: list[int] = []
    s = run_command(corpus_path, out=tmp_path / "run", agent="oracle", attempts=2, limit=3, progress=lambda d, n, t: seen.append(d))
    assert s["episodes"] == 6 and s["pass@1"] == 1.0 and s["pass@2"] == 1.0 and seen == [1, 2, 3, 4, 5, 6]
    rows = dict(summary_rows(s))
    assert rows["pass@1"] == "100.0%" and rows["episodes"] == "6"


def test_run_command_bad_settings(corpus_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        run_command(corpus_path, out=tmp_path, agent="openai", model="m")
    with pytest.raises(ValueError, match="unknown agent"):
        run_command(corpus_path, out=tmp_path, agent="gpt")
    with pytest.raises(ValueError, match="a model name is required"):
        run_command(corpus_path, out=tmp_path, agent="openai")
    with pytest.raises(ValueError, match="at least 1"):
        run_command(corpus_path, out=tmp_path, agent="oracle", attempts=0)
