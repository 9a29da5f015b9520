"""SFT and RL exports: first success per task, TRL's tool-calling shape, JSONL/Parquet round trips."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envsynth import load_corpus
from envsynth.export import ExportError, export_rl, export_sft
from envsynth.export.messages import MalformedMessage, to_trl_messages
from envsynth.rollout import read_trajectories

META = ("task_id", "task_hash", "app", "kind", "attempt", "score")
SRC = Path(__file__).parent.parent.parent / "src"
FORBIDDEN = ("oracle", "oracle_program", "expected_effects", "expected_answer", "answer", "answer_step", "answer_field", "state")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _copy_run(run: Path, dst: Path, edit=None) -> Path:
    dst.mkdir()
    shutil.copy(run / "run.json", dst / "run.json")
    recs = read_trajectories(run)
    if edit is not None:
        recs = [edit(r) for r in recs]
    (dst / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return dst


def test_sft_one_row_per_task_first_success(oracle_run, tmp_path):
    corpus, run = oracle_run
    s = export_sft(run, tmp_path / "sft.jsonl")
    rows = _rows(tmp_path / "sft.jsonl")
    c = load_corpus(corpus)
    assert s.rows == len(rows) == s.tasks == len(c.tasks)
    assert sorted(r["task_id"] for r in rows) == sorted(t.id for t in c.tasks)
    for r in rows:
        assert set(r) == {"messages", "tools", *META}
        assert r["attempt"] == 0 and r["score"] == 1.0
        task = c.task(r["task_id"])
        assert r["task_hash"] == task.hash and r["app"] == task.app and r["kind"] == task.kind
        ep = c.start(task)
        assert r["tools"] == ep.tools  # the schemas the episode exposed
        ep.finish()


def test_sft_messages_are_trl_tool_calling(oracle_run, tmp_path):
    _, run = oracle_run
    export_sft(run, tmp_path / "sft.jsonl")
    for r in _rows(tmp_path / "sft.jsonl"):
        names = {t["function"]["name"] for t in r["tools"]}
        calls = 0
        for m in r["messages"]:
            assert m["role"] in ("system", "user", "assistant", "tool")
            assert isinstance(m["content"], str)
            for c in m.get("tool_calls", []):
                calls += 1
                assert c["type"] == "function" and c["function"]["name"] in names
                assert isinstance(c["function"]["arguments"], dict)
            if m["role"] == "tool":
                assert m["name"] in names
        assert calls >= 1
        assert r["messages"][-1]["role"] == "tool" and r["messages"][-1]["name"] == "complete_task"


def test_sft_keeps_first_success_when_attempt_0_failed(oracle_run, tmp_path):
    _, run = oracle_run
    first = read_trajectories(run)[0]["task_id"]

    def fail_first(r):
        if r["task_id"] == first and r["attempt"] == 0:
            r["reward"] = {**r["reward"], "score": 0.0, "passed": False}
        return r

    export_sft(_copy_run(run, tmp_path / "run", fail_first), tmp_path / "sft.jsonl")
    rows = {r["task_id"]: r for r in _rows(tmp_path / "sft.jsonl")}
    assert rows[first]["attempt"] == 1
    assert all(r["attempt"] == 0 for tid, r in rows.items() if tid != first)


def test_sft_skips_tainted_and_tasks_without_success(oracle_run, tmp_path):
    _, run = oracle_run
    recs = read_trajectories(run)
    tainted, failed = recs[0]["task_id"], recs[1]["task_id"]

    def edit(r):
        if r["task_id"] == tainted and r["attempt"] == 0:
            r["tainted"] = True
        if r["task_id"] == failed:
            r["reward"] = {**r["reward"], "score": 0.0, "passed": False}
        return r

    s = export_sft(_copy_run(run, tmp_path / "run", edit), tmp_path / "sft.jsonl")
    rows = {r["task_id"]: r for r in _rows(tmp_path / "sft.jsonl")}
    assert rows[tainted]["attempt"] == 1 and failed not in rows
    assert s.skipped["tainted"] == 1 and s.skipped["no_success"] == 1 and s.rows == s.tasks - 1


def test_sft_tools_from_explicit_corpus_and_missing_corpus(oracle_run, tmp_path):
    corpus, run = oracle_run
    moved = _copy_run(run, tmp_path / "run")
    (moved / "run.json").write_text("{}", encoding="utf-8")
    with pytest.raises(ExportError, match="no corpus path"):
        export_sft(moved, tmp_path / "a.jsonl")
    assert export_sft(moved, tmp_path / "b.jsonl", corpus=corpus).rows > 0
    assert _rows(tmp_path / "b.jsonl") == _rows(export_sft(run, tmp_path / "c.jsonl").out_file)


def test_sft_errors(tmp_path, oracle_run):
    with pytest.raises(ExportError, match=r"no trajectories\.jsonl"):
        export_sft(tmp_path, tmp_path / "x.jsonl")
    with pytest.raises(ValueError, match="unknown export format"):
        export_sft(oracle_run[1], tmp_path / "x.csv", format="csv")


def test_to_trl_messages_conversion():
    msgs = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done", "reasoning": "dropped"},
    ]
    out = to_trl_messages(msgs)
    assert out[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
    }
    assert out[2] == {"role": "tool", "name": "f", "content": "ok", "tool_call_id": "c1"}
    assert out[3] == {"role": "assistant", "content": "done"}
    with pytest.raises(MalformedMessage):
        to_trl_messages([{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{oops"}}]}])


def test_rl_one_row_per_task_no_ground_truth(oracle_run, tmp_path):
    corpus, _ = oracle_run
    s = export_rl(corpus, tmp_path / "rl.jsonl")
    rows = _rows(tmp_path / "rl.jsonl")
    c = load_corpus(corpus)
    assert s.rows == len(rows) == len(c.tasks)
    for r, t in zip(rows, c.tasks):
        assert set(r) == {"prompt", "tools", "task_id", "task_hash", "app", "kind", "difficulty", "tier", "constructs"}
        assert (r["difficulty"], r["tier"], r["constructs"]) == (t.difficulty, t.tier, t.constructs)
        assert not set(r) & set(FORBIDDEN)
        assert [m["role"] for m in r["prompt"]] == ["system", "user"] and r["prompt"][1]["content"] == t.instruction
        assert r["task_id"] == t.id and r["tools"][-1]["function"]["name"] == "complete_task"
        assert {x["function"]["name"] for x in r["tools"]} == {*t.visible_tools, "complete_task"}
        text = json.dumps(r)
        assert t.oracle_program not in text and "expected" not in text
    export_rl(corpus, tmp_path / "bare.jsonl", system_prompt="")
    bare = _rows(tmp_path / "bare.jsonl")[0]["prompt"]  # no agent prompt: the app's policy alone, if it has one
    assert [m["role"] for m in bare][-1] == "user" and all(m["content"].startswith("## Policy") for m in bare[:-1])


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_sft_export_works_from_any_folder(oracle_run, tmp_path):
    # a run started in one folder with relative paths, exported from another
    corpus, _ = oracle_run
    work = tmp_path / "work"
    work.mkdir()
    shutil.copytree(corpus, work / "c")
    res = _cli(work, "run", "c", "--agent", "oracle", "--out", "runs/r", "--json")
    assert res.returncode == 0, res.stderr
    recorded = Path(json.loads((work / "runs" / "r" / "run.json").read_text())["corpus"])
    assert recorded.is_absolute() and recorded == (work / "c").absolute()
    res = _cli(tmp_path, "export", "sft", "work/runs/r", "--out", "sft.jsonl")
    assert res.returncode == 0, res.stderr
    rows = _rows(tmp_path / "sft.jsonl")
    assert len(rows) == len(load_corpus(corpus).tasks) and all(r["tools"] for r in rows)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    res = _cli(elsewhere, "export", "sft", str(work / "runs" / "r"), "--out", "sft.jsonl")
    assert res.returncode == 0, res.stderr
    assert _rows(elsewhere / "sft.jsonl") == rows


def test_sft_export_reads_an_old_run_json_with_a_cwd_relative_corpus(oracle_run, tmp_path):
    # run.json of earlier versions: the corpus path as given on the command line, relative to where the run started
    corpus, run = oracle_run
    work = tmp_path / "work"
    shutil.copytree(corpus, work / "data" / "c")
    (work / "runs").mkdir(parents=True)
    dst = _copy_run(run, work / "runs" / "r")
    cfg = json.loads((dst / "run.json").read_text())
    (dst / "run.json").write_text(json.dumps({**cfg, "corpus": "data/c"}))
    expected = export_sft(run, tmp_path / "expected.jsonl")
    for cwd in (tmp_path, work, dst, tmp_path.parent):
        res = _cli(cwd, "export", "sft", str(dst), "--out", str(tmp_path / "got.jsonl"))
        assert res.returncode == 0, (cwd, res.stderr)
        assert (tmp_path / "got.jsonl").read_bytes() == (tmp_path / "expected.jsonl").read_bytes()
    assert expected.rows > 0
    (dst / "run.json").write_text(json.dumps({**cfg, "corpus": "gone/c"}))
    res = _cli(tmp_path, "export", "sft", str(dst), "--out", str(tmp_path / "x.jsonl"))
    assert res.returncode == 2 and "gone/c" in res.stderr and "--corpus" in res.stderr and "Traceback" not in res.stderr, res.stderr
