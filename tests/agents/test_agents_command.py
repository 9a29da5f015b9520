"""The function behind ``envsynth run``."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from envsynth.rollout import RunConfig, summarize
from envsynth.rollout.command import run_command, summary_rows
from envsynth.rollout.summary import ThisRun


def test_run_command_oracle(corpus_path: Path, tmp_path: Path) -> None:
    seen: list[int] = []
    config = RunConfig(corpus=corpus_path, out=tmp_path / "run", agent="oracle", attempts=2, limit=3)
    s = run_command(config, progress=lambda d, n, t: seen.append(d))
    assert s.episodes == 6 and s.pass_at == {1: 1.0, 2: 1.0} and seen == [1, 2, 3, 4, 5, 6]
    assert s.this_run == ThisRun(written=6, skipped=0, failed=0) and s.errors.episodes == 0 and s.user_simulator is None
    rows = dict(summary_rows(s))
    assert rows["pass@1"] == "100.0%" and rows["pass@2"] == "100.0%" and rows["episodes"] == "6"
    # the JSON form (`envsynth run --json`) keeps its keys, in their order, and the dict the summary was before
    d = s.to_dict()
    assert list(d) == [
        "tasks",
        "episodes",
        "attempts_per_task",
        "pass@1",
        "pass@2",
        "mean_score",
        "mean_turns",
        "mean_tool_calls",
        "tokens",
        "retries",
        "tool_calls",
        "rejection_codes",
        "stop_reasons",
        "pass@1_by_kind",
        "pass@1_by_app",
        "unexpected_failures",
        "user_simulator",
        "errors",
        "mean_seconds",
        "labelled",
        "judge",
        "this_run",
    ]
    assert list(d["tokens"]) == ["prompt_tokens", "completion_tokens", "total_tokens", "mean_per_episode"]
    assert list(d["mean_seconds"]) == ["model", "tools", "finish", "total"] and d["this_run"] == {"written": 6, "skipped": 0, "failed": 0}
    assert d["unexpected_failures"] == {"calls": 0, "tainted_episodes": 0, "where": []} and d["pass@1_by_kind"]
    assert summarize(config.out).to_dict() == {k: v for k, v in d.items() if k != "this_run"}


def test_run_command_bad_settings(corpus_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        run_command(RunConfig(corpus=corpus_path, out=tmp_path, agent="openai", model="m"))
    bad = [
        ({"agent": "gpt"}, "agent", "'openai', 'code' or 'oracle'"),
        ({"agent": "openai"}, "model", "agent 'openai' needs a model name"),
        ({"agent": "oracle", "attempts": 0}, "attempts", "greater than or equal to 1"),
        ({"agent": "oracle", "seed": -1}, "seed", "greater than or equal to 0"),
        ({"agent": "oracle", "temperature": -0.5}, "temperature", "greater than or equal to 0"),
        ({"agent": "oracle", "max_errors": -1}, "max_errors", "greater than or equal to 0"),
        ({"agent": "oracle", "limit": 0}, "limit", "greater than or equal to 1"),
    ]
    for settings, field, message in bad:
        with pytest.raises(ValidationError) as refused:
            RunConfig(corpus=corpus_path, out=tmp_path, **settings)
        (problem,) = refused.value.errors()
        assert problem["loc"] == (field,) and message in problem["msg"] and "--" not in problem["msg"]  # named by field, not flag


def test_run_config_normalises_the_code_agent(tmp_path: Path) -> None:
    config = RunConfig(corpus=tmp_path, out=tmp_path / "r", agent="code", model="m")
    assert (config.agent, config.mode) == ("openai", "code")
    assert RunConfig(corpus=tmp_path, out=tmp_path / "r", agent="oracle").mode == "function"
    assert "k-secret" not in repr(RunConfig(corpus=tmp_path, out=tmp_path / "r", agent="oracle", api_key="k-secret"))
    with pytest.raises(ValidationError, match="acts in code mode"):
        RunConfig(corpus=tmp_path, out=tmp_path / "r", agent="code", mode="function", model="m")
