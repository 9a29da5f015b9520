"""RL rows labelled from a run (pass@k, mean reward, reward parts) and the --min-reward / --tier filters of both exports."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from envsynth import load_corpus
from envsynth.export import ExportError, export_rl, export_sft, rl_rows
from envsynth.rollout import read_trajectories, run_batch

LABELS = ("attempts", "pass_at_k", "reward_mean", "reward_parts")


class DoNothing:
    """A baseline policy: says it is done without calling a tool."""

    name = model = "nothing"
    system_prompt = ""
    max_turns = 1
    max_tokens = None

    async def next_message(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": "Done."}


@pytest.fixture(scope="module")
def nothing_run(oracle_run, tmp_path_factory) -> Path:
    corpus, _ = oracle_run
    out = tmp_path_factory.mktemp("labels") / "nothing"
    run_batch(corpus, lambda task, attempt: DoNothing(), attempts=2, out=out, meta={"agent": "nothing"})
    return out


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _edited_run(run: Path, dst: Path, edit) -> Path:
    """A copy of ``run`` whose records went through ``edit`` (None drops a record)."""
    dst.mkdir()
    shutil.copy(run / "run.json", dst / "run.json")
    recs = [r for r in (edit(r) for r in read_trajectories(run)) if r is not None]
    (dst / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return dst


def _fail(task_id: str, attempt: int):
    def edit(r):
        if r["task_id"] == task_id and r["attempt"] == attempt:
            parts = {k: {**v, "passed": False} for k, v in r["reward"]["parts"].items()}
            r["reward"] = {**r["reward"], "score": 0.0, "passed": False, "parts": parts}
        return r

    return edit


def test_oracle_run_labels_every_row_solved(oracle_run):
    corpus, run = oracle_run
    rows = rl_rows(corpus, run=run)
    assert len(rows) == len(load_corpus(corpus).tasks)
    for r in rows:
        assert r["attempts"] == 2
        assert r["pass_at_k"] == {"1": 1.0, "2": 1.0}
        assert r["reward_mean"] == 1.0
        assert r["reward_parts"] and set(r["reward_parts"]) <= {"state", "answer", "policy", "communication"}
        assert all(v == 1.0 for v in r["reward_parts"].values())


def test_rows_without_a_run_have_no_labels(oracle_run):
    corpus, _ = oracle_run
    assert not set(LABELS) & set(rl_rows(corpus)[0])


def test_do_nothing_run_labels_every_row_failed(oracle_run, nothing_run):
    corpus, _ = oracle_run
    rows = rl_rows(corpus, run=nothing_run)
    assert rows
    for r in rows:
        assert r["attempts"] == 2 and r["pass_at_k"] == {"1": 0.0, "2": 0.0} and r["reward_mean"] == 0.0
        assert "state" in r["reward_parts"] or "answer" in r["reward_parts"]


def test_min_reward_keeps_the_tasks_a_run_did_well_on(oracle_run, nothing_run, tmp_path):
    corpus, run = oracle_run
    first = read_trajectories(run)[0]["task_id"]
    half = _edited_run(run, tmp_path / "half", _fail(first, 0))
    rows = {r["task_id"]: r for r in rl_rows(corpus, run=half)}
    assert rows[first]["pass_at_k"] == {"1": 0.5, "2": 1.0} and rows[first]["reward_mean"] == 0.5
    assert all(v == 0.5 for v in rows[first]["reward_parts"].values())
    kept = [r["task_id"] for r in rl_rows(corpus, run=half, min_reward=0.75)]
    assert first not in kept and len(kept) == len(rows) - 1
    assert len(rl_rows(corpus, run=half, min_reward=0.5)) == len(rows)
    assert rl_rows(corpus, run=nothing_run, min_reward=0.01) == []
    s = export_rl(corpus, tmp_path / "rl.jsonl", run=half, min_reward=0.75)
    assert s.rows == len(rows) - 1 and s.skipped == {"below_min_reward": 1}
    assert [r["task_id"] for r in _rows(tmp_path / "rl.jsonl")] == kept


def test_a_task_the_run_never_played(oracle_run, tmp_path):
    corpus, run = oracle_run
    first = read_trajectories(run)[0]["task_id"]
    partial = _edited_run(run, tmp_path / "partial", lambda r: None if r["task_id"] == first else r)
    rows = {r["task_id"]: r for r in rl_rows(corpus, run=partial)}
    assert rows[first]["attempts"] == 0 and rows[first]["reward_mean"] is None and rows[first]["pass_at_k"] == {}
    assert first not in {r["task_id"] for r in rl_rows(corpus, run=partial, min_reward=0.0)}


def test_labels_refuse_another_version_and_min_reward_without_run(oracle_run, tmp_path):
    corpus, run = oracle_run
    other = _edited_run(run, tmp_path / "other", lambda r: {**r, "task_hash": "0" * 16})
    with pytest.raises(ExportError, match="another version"):
        rl_rows(corpus, run=other)
    with pytest.raises(ValueError, match="needs a run"):
        rl_rows(corpus, min_reward=0.5)
    with pytest.raises(ValueError, match="needs a run"):
        export_rl(corpus, tmp_path / "x.jsonl", min_reward=0.5)
    with pytest.raises(ExportError, match="no trajectories"):
        rl_rows(corpus, run=tmp_path)


def test_labelled_parquet_round_trip(oracle_run, tmp_path):
    datasets = pytest.importorskip("datasets")
    corpus, run = oracle_run
    export_rl(corpus, tmp_path / "rl.parquet", format="parquet", run=run)
    got = datasets.load_dataset("parquet", data_files=str(tmp_path / "rl.parquet"), split="train").to_list()
    want = rl_rows(corpus, run=run)
    assert [{k: r[k] for k in LABELS} for r in got] == [{k: r[k] for k in LABELS} for r in want]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=600)


def test_cli_export_rl_with_run_and_min_reward(oracle_run, nothing_run, tmp_path):
    corpus, run = oracle_run
    res = _cli("export", "rl", str(corpus), "--run", str(run), "--min-reward", "1", "--out", str(tmp_path / "rl.jsonl"), "--json")
    assert res.returncode == 0, res.stderr
    rows = _rows(tmp_path / "rl.jsonl")
    assert json.loads(res.stdout)["rows"] == len(rows) == len(load_corpus(corpus).tasks)
    assert all(r["reward_mean"] == 1.0 and r["pass_at_k"]["1"] == 1.0 for r in rows)
    res = _cli("export", "rl", str(corpus), "--run", str(nothing_run), "--min-reward", "0.5", "--out", str(tmp_path / "none.jsonl"))
    assert res.returncode == 0, res.stderr
    assert _rows(tmp_path / "none.jsonl") == []
    res = _cli("export", "rl", str(corpus), "--min-reward", "0.5", "--out", str(tmp_path / "x.jsonl"))
    assert res.returncode != 0 and "--run" in res.stderr + res.stdout


def test_sft_min_reward_and_tier(oracle_run, tmp_path):
    corpus, run = oracle_run
    c = load_corpus(corpus)
    first = read_trajectories(run)[0]["task_id"]
    half = _edited_run(run, tmp_path / "half", _fail(first, 0))
    s = export_sft(half, tmp_path / "all.jsonl", min_reward=0.5)
    assert s.rows == len(c.tasks)  # attempt 1 of the first task still passed
    s = export_sft(half, tmp_path / "strict.jsonl", min_reward=0.75)
    assert s.rows == len(c.tasks) - 1 and s.skipped["below_min_reward"] == 1
    assert first not in {r["task_id"] for r in _rows(tmp_path / "strict.jsonl")}
    tier = c.task(first).tier
    s = export_sft(run, tmp_path / "tier.jsonl", tiers=[tier])
    assert {r["task_id"] for r in _rows(tmp_path / "tier.jsonl")} == {t.id for t in c.tasks if t.tier == tier}
    assert s.skipped["other_tier"] == sum(t.tier != tier for t in c.tasks)
    with pytest.raises(ValueError, match="unknown tier"):
        export_sft(run, tmp_path / "bad.jsonl", tiers=["impossible"])


def test_cli_export_sft_filters(oracle_run, nothing_run, tmp_path):
    corpus, run = oracle_run
    res = _cli(
        "export",
        "sft",
        str(run),
        "--min-reward",
        "1",
        "--tier",
        "easy",
        "--tier",
        "medium",
        "--tier",
        "hard",
        "--out",
        str(tmp_path / "s.jsonl"),
    )
    assert res.returncode == 0, res.stderr
    assert len(_rows(tmp_path / "s.jsonl")) == len(load_corpus(corpus).tasks)
    res = _cli("export", "sft", str(nothing_run), "--min-reward", "0.5", "--out", str(tmp_path / "n.jsonl"))
    assert res.returncode == 0, res.stderr
    assert _rows(tmp_path / "n.jsonl") == []
