"""run_batch resumes without duplicates; summarize gives hand-checkable numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envsynth.agents import OracleAgent
from envsynth.corpus import Corpus
from envsynth.rollout import RunError, Trajectory, pass_at_k, read_trajectories, run_batch, summarize, summarize_records


class Stop(Exception):
    pass


def _pairs(run_dir: Path) -> list[tuple[str, int]]:
    return [(r["task_id"], r["attempt"]) for r in read_trajectories(run_dir)]


def test_resume_after_interruption_writes_no_duplicates(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    tasks = corpus.tasks[:5]

    def stop_after_4(done: int, total: int, traj: Trajectory) -> None:
        if done == 4:
            raise Stop

    with pytest.raises(Stop):
        run_batch(corpus, lambda t, a: OracleAgent(t), tasks, attempts=3, concurrency=3, out=out, progress=stop_after_4)
    first = _pairs(out)
    assert 4 <= len(first) < 15 and len(first) == len(set(first))  # episodes in flight may finish
    with (out / "trajectories.jsonl").open("a") as f:  # a write torn by a crash
        f.write('{"task_id": "' + tasks[0].id + '", "attempt": 2, "mess')
    seen: list[int] = []
    res = run_batch(corpus, lambda t, a: OracleAgent(t), tasks, attempts=3, concurrency=3, out=out, progress=lambda d, n, t: seen.append(n))
    pairs = _pairs(out)
    assert (res.skipped, res.written) == (len(first), 15 - len(first)) and set(seen) == {15 - len(first)}
    assert len(pairs) == 15 == len(set(pairs)) and set(pairs) == {(t.id, a) for t in tasks for a in range(3)}
    assert pairs[: len(first)] == first
    again = run_batch(corpus, lambda t, a: OracleAgent(t), tasks, attempts=3, out=out)
    assert (again.skipped, again.written) == (15, 0) and len(_pairs(out)) == 15
    assert summarize(out).to_dict()["pass@3"] == 1.0
    cfg = json.loads((out / "run.json").read_text())
    assert cfg["attempts"] == 3 and cfg["corpus_digest"] == corpus.manifest.digest


def test_a_run_folder_of_another_task_version_is_refused(corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / "run"
    task = corpus.tasks[0]
    run_batch(corpus, lambda t, a: OracleAgent(t), [task], out=out)
    path = out / "trajectories.jsonl"
    rec = json.loads(path.read_text())
    rec["task_hash"] = "0" * 64
    path.write_text(json.dumps(rec) + "\n")
    with pytest.raises(RunError, match="another version"):
        run_batch(corpus, lambda t, a: OracleAgent(t), [task], out=out)


def _rec(task: str, attempt: int, passed: bool, **kw: Any) -> dict[str, Any]:
    base = {
        "task_id": task,
        "attempt": attempt,
        "kind": kw.pop("kind", "action"),
        "app": "a",
        "turns": kw.pop("turns", 2),
        "stop_reason": "complete_task",
        "reward": {"score": float(passed), "passed": passed, "breakdown": []},
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "requests": 2, "retries": 0},
        "tool_calls": kw.pop("tool_calls", [{"turn": 1, "tool": "t", "outcome": "success", "code": None}]),
        "timings": {"model": 1.0, "tools": 0.5, "finish": 0.25, "total": 2.0},
        "tainted": False,
        "error": None,
    }
    base.update(kw)
    return base


def test_summary_numbers_by_hand() -> None:
    bad = [
        {"turn": 1, "tool": "u", "outcome": "anticipated_rejection", "code": "unknown_tool"},
        {"turn": 2, "tool": "t", "outcome": "malformed", "code": "invalid_json"},
        {"turn": 3, "tool": "w", "outcome": "unexpected_failure", "code": "unexpected_failure"},
    ]
    err = {"type": "LLMError", "kind": "rate_limit", "status": 429, "message": "x"}
    recs = [
        # task A: 1 of 4 passes; task B: 0 of 4; task C: 4 of 4 (info)
        _rec("A", 0, True),
        _rec("A", 1, False, tool_calls=bad, tainted=True),
        _rec("A", 2, False, error=err, stop_reason="model_error", turns=0),
        _rec("A", 3, False),
        *[_rec("B", a, False, turns=4) for a in range(4)],
        *[_rec("C", a, True, kind="info") for a in range(4)],
    ]
    s = summarize_records(recs).to_dict()
    assert (s["tasks"], s["episodes"], s["attempts_per_task"]) == (3, 12, 4)
    assert s["pass@1"] == pytest.approx((0.25 + 0 + 1) / 3, abs=1e-6)
    assert s["pass@4"] == pytest.approx((1 + 0 + 1) / 3, abs=1e-6)
    assert s["mean_score"] == pytest.approx(5 / 12, abs=1e-6)
    assert s["mean_turns"] == pytest.approx((2 + 2 + 0 + 2 + 16 + 8) / 12, abs=1e-6)
    assert s["tokens"]["total_tokens"] == 180 and s["tokens"]["mean_per_episode"] == 15
    assert s["tool_calls"] == {"success": 11, "anticipated_rejection": 1, "malformed": 1, "unexpected_failure": 1}
    assert s["rejection_codes"] == {"unknown_tool": 1, "invalid_json": 1, "unexpected_failure": 1}
    assert s["unexpected_failures"]["calls"] == 1 and s["unexpected_failures"]["tainted_episodes"] == 1
    assert s["unexpected_failures"]["where"] == [{"task_id": "A", "attempt": 1, "tool": "w", "turn": 3}]
    assert s["errors"]["episodes"] == 1 and s["errors"]["by_kind"] == {"rate_limit": 1}
    assert s["stop_reasons"] == {"complete_task": 11, "model_error": 1}
    assert s["pass@1_by_kind"] == {"action": pytest.approx(1 / 8), "info": 1.0}
    assert s["mean_seconds"]["total"] == 2.0


def test_pass_at_k_estimator() -> None:
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)  # 1 - C(3,3)/C(5,3)
    assert pass_at_k(3, 0, 3) == 0.0 and pass_at_k(3, 3, 1) == 1.0 and pass_at_k(10, 3, 1) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_summary_of_an_empty_or_missing_run(tmp_path: Path) -> None:
    s = summarize(tmp_path).to_dict()
    assert s["episodes"] == 0 and s["pass@1"] is None


def test_rerun_errors_and_max_errors(corpus: Corpus, tmp_path: Path) -> None:
    from envsynth.agents import ChatAgent
    from envsynth.llm import Fail, ScriptedProvider

    out = tmp_path / "run"
    tasks = corpus.tasks[:3]

    def broken(t: Any, a: int) -> ChatAgent:
        return ChatAgent(ScriptedProvider([Fail(401)]))

    with pytest.raises(RunError, match="stopped after 2 failed episodes"):
        run_batch(corpus, broken, tasks, concurrency=1, out=out, max_errors=2)
    assert len(_pairs(out)) == 2
    kept = run_batch(corpus, lambda t, a: OracleAgent(t), tasks, out=out)
    assert (kept.skipped, kept.written) == (2, 1)
    assert summarize(out).to_dict()["pass@1"] == pytest.approx(1 / 3, abs=1e-6)
    redone = run_batch(corpus, lambda t, a: OracleAgent(t), tasks, out=out, rerun_errors=True)
    assert (redone.skipped, redone.written) == (1, 2)
    s = summarize(out).to_dict()
    assert s["pass@1"] == 1.0 and s["episodes"] == 3 and s["errors"]["episodes"] == 0
    again = run_batch(corpus, lambda t, a: OracleAgent(t), tasks, out=out, rerun_errors=True)
    assert again.written == 0
