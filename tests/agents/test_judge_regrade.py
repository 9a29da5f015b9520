"""The LLM judge, regrading and simulated-user failures, end to end against a local chat-completions server.

The judge's model replies as a capable model does on a bad day: a 503 first, then prose with no
verdict, then a fenced JSON verdict; or it keeps failing. Runs go through run_batch and the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from chat_server import chat_server, completion
from envsynth.agents import OracleAgent
from envsynth.corpus import Corpus
from envsynth.export import export_sft
from envsynth.grading.judge import Judge
from envsynth.llm import OpenAIChat, RetryPolicy
from envsynth.rollout import read_trajectories, run_batch, summarize
from envsynth.rollout.regrade import regrade
from envsynth.rollout.trajectory import REGRADED

pytest.importorskip("openai")

FAST = RetryPolicy(max_retries=2, base=0.001, cap=0.01)


class JudgeServer:
    """The judge's model: per case, a 503, then a reply without a verdict, then a fenced verdict.

    ``fail_on``: requests containing this text get "fail"; every other case "pass".
    ``broken``: every request gets a 500.
    """

    def __init__(self, fail_on: str | None = None, broken: bool = False) -> None:
        self.fail_on, self.broken = fail_on, broken
        self.seen: dict[str, int] = {}
        self.requests = 0
        self.lock = threading.Lock()

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        case = body["messages"][1]["content"]
        with self.lock:
            self.requests += 1
            n = self.seen[case] = self.seen.get(case, 0) + 1
        if self.broken or n == 1:
            return (500 if self.broken else 503), {"error": {"message": "overloaded", "type": "server_error"}}
        if len(body["messages"]) == 2 and n == 2:
            text = "Let me look at this carefully. The assistant seems to have handled the request."
        else:
            verdict = "fail" if self.fail_on and self.fail_on in case else "pass"
            text = (
                f'```json\n{{"verdict": "{verdict}", "explanation": "Checked the changes and the answer against the expected ones."}}\n```'
            )
        return 200, completion(body["model"], {"role": "assistant", "content": text})


def _oracle(corpus: Corpus):
    return lambda task, attempt: OracleAgent(task)


def test_the_judge_grades_after_the_rule_its_verdict_is_the_reward_and_it_is_cached(corpus: Corpus, tmp_path: Path) -> None:
    tasks = list(corpus.tasks)
    failing = tasks[0]
    failed = {t.id for t in tasks if t.instruction == failing.instruction}  # (the same request in another state)
    n = len(tasks)
    server = JudgeServer(fail_on=failing.instruction)
    with chat_server(server.reply) as url:
        judge = Judge(OpenAIChat("judge", base_url=url, retry=FAST))
        run_batch(corpus, _oracle(corpus), out=tmp_path / "run", judge=judge, concurrency=1)
        recs = {r["task_id"]: r for r in read_trajectories(tmp_path / "run")}
        assert len(recs) == len(tasks)
        bad = recs[failing.id]
        assert bad["judge"]["passed"] is False and bad["reward"]["rule_passed"] is True and bad["reward"]["score"] == 0.0
        assert bad["reward"]["breakdown"][0]["kind"] == "judge" and "Checked the changes" in bad["reward"]["breakdown"][0]["message"]
        assert all(r["judge"]["passed"] is (tid not in failed) and r["reward"]["rule_passed"] for tid, r in recs.items())
        assert all(r["label"] is None for r in recs.values())
        s = summarize(tmp_path / "run")
        assert s.pass_at[1] == pytest.approx((n - len(failed)) / n, abs=1e-6)
        assert s.judge is not None and (s.judge.both_pass, s.judge.rule_pass_judge_fail, s.judge.errors) == (
            n - len(failed),
            len(failed),
            0,
        )
        assert s.judge.agreement == pytest.approx((n - len(failed)) / n, abs=1e-6)
        asked = server.requests
        cases = len(server.seen)  # the same request, effects and answer in two states is one case
        assert asked == 3 * cases  # each: a 503, a reply without a verdict, the verdict
        assert sum(bool(r["judge"]["cached"]) for r in recs.values()) == n - cases
        assert len((tmp_path / "run" / "judge_cache.jsonl").read_text().splitlines()) == cases

        result = regrade(tmp_path / "run", judge=Judge(OpenAIChat("judge", base_url=url, retry=FAST)))
        assert server.requests == asked  # every verdict came from the cache
        assert result.judged == n and result.agree == n - len(failed)
        regraded = [json.loads(line) for line in (tmp_path / "run" / REGRADED).read_text().splitlines()]
        assert all(r["judge"]["cached"] for r in regraded)


def test_a_judge_that_keeps_failing_labels_the_episode_and_never_scores_it_zero(corpus: Corpus, tmp_path: Path) -> None:
    server = JudgeServer(broken=True)
    tasks = list(corpus.tasks)[:3]
    with chat_server(server.reply) as url:
        judge = Judge(OpenAIChat("judge", base_url=url, retry=FAST), attempts=2)
        run_batch(corpus, _oracle(corpus), tasks, out=tmp_path / "run", judge=judge)
    recs = read_trajectories(tmp_path / "run")
    assert [r["label"] for r in recs] == ["judge_error"] * 3
    assert all("no verdict after 2 attempts" in r["label_detail"] for r in recs)
    assert all(r["reward"]["passed"] for r in recs)  # the rule's reward stays; the label keeps it out
    s = summarize(tmp_path / "run")
    assert s.episodes == 0 and s.pass_at == {1: None}
    assert s.labelled.by_label == {"judge_error": 3} and s.judge is not None and s.judge.errors == 3
    out = export_sft(tmp_path / "run", tmp_path / "sft.jsonl", corpus=corpus)
    assert out.rows == 0 and out.skipped["judge_error"] == 3


def _old_grader_run(corpus: Corpus, run: Path) -> str:
    """An oracle run whose first information task was answered in a sentence and scored 0 by a grader that knew bare values only,
    with no effects recorded (as runs before the grader had parts)."""
    info = next(t for t in corpus.tasks if t.expected_answer is not None and not isinstance(t.expected_answer, list | dict))
    run_batch(corpus, _oracle(corpus), out=run)
    recs = read_trajectories(run)
    for r in recs:
        r.pop("effects")
        if r["task_id"] == info.id:
            r["answer"] = f"I checked for you: it is {info.expected_answer}."
            r["reward"] = {"score": 0.0, "passed": False, "breakdown": [{"kind": "wrong_answer", "message": "old grader"}]}
    (run / "trajectories.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return info.id


def test_regrade_replays_old_runs_and_flips_a_right_sentence_to_pass(corpus: Corpus, tmp_path: Path) -> None:
    run = tmp_path / "run"
    flipped = _old_grader_run(corpus, run)
    before = summarize(run).pass_at[1]
    assert before is not None and before < 1.0
    result = regrade(run)
    assert result.fail_to_pass == [f"{flipped}#0"] and result.pass_to_fail == []
    assert result.replayed == result.episodes == len(corpus.tasks)
    assert summarize(run).pass_at[1] == 1.0  # the summary reads the regrade
    old = {r["task_id"]: r for r in read_trajectories(run)}
    assert old[flipped]["reward"]["passed"] is False  # the original is kept as it was
    rows = [json.loads(line) for line in Path(export_sft(run, tmp_path / "sft.jsonl", corpus=corpus).out_file).read_text().splitlines()]
    assert flipped in {r["task_id"] for r in rows}


def test_regrade_catches_a_wrong_effect_on_replay(corpus: Corpus, tmp_path: Path) -> None:
    """A trajectory claiming to pass whose recorded calls do not reach the expected state flips to fail."""
    run = tmp_path / "run"
    action = next(t for t in corpus.tasks if t.expected_effects)
    run_batch(corpus, _oracle(corpus), [action], out=run)
    recs = read_trajectories(run)
    recs[0].pop("effects")
    recs[0]["tool_calls"] = [c for c in recs[0]["tool_calls"] if c["tool"] == "complete_task"]  # its writes never happened
    (run / "trajectories.jsonl").write_text(json.dumps(recs[0]) + "\n")
    result = regrade(run)
    assert result.pass_to_fail == [f"{action.id}#0"]
    new = json.loads((run / REGRADED).read_text())
    assert new["reward"]["parts"]["state"]["passed"] is False and new["old"]["passed"] is True


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, env=env, timeout=300)


def test_the_cli_runs_with_a_judge_and_regrades(corpus_path: Path, corpus: Corpus, tmp_path: Path) -> None:
    server = JudgeServer(fail_on=corpus.tasks[0].instruction)
    with chat_server(server.reply) as url:
        run = tmp_path / "run"
        proc = _cli("run", str(corpus_path), "--agent", "oracle", "--out", str(run), "--judge", "openai", "--judge-model", "judge",
                    "--judge-base-url", url, "--limit", "3")  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert "rule vs judge" in proc.stdout and "agreement" in proc.stdout
        cfg = json.loads((run / "run.json").read_text())
        assert cfg["judge_model"] == "judge" and cfg["score_rule"] == {"mode": "all"}
    proc = _cli("regrade", str(run), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["episodes"] == 3
    bad = _cli("run", str(corpus_path), "--agent", "oracle", "--out", str(tmp_path / "r2"), "--judge", "openai")
    assert bad.returncode != 0 and "judge" in bad.stderr.lower() and "model" in bad.stderr.lower()
    weights = _cli("run", str(corpus_path), "--agent", "oracle", "--out", str(tmp_path / "r3"), "--score-rule", "weighted",
                   "--weights", "state=1,answr=2")  # fmt: skip
    assert weights.returncode != 0 and "answr" in weights.stderr
    other_rule = _cli("run", str(corpus_path), "--agent", "oracle", "--out", str(run), "--score-rule", "weighted")
    assert other_rule.returncode != 0 and "regrade" in other_rule.stderr


def test_a_weighted_rule_scores_parts(corpus_path: Path, tmp_path: Path) -> None:
    proc = _cli("run", str(corpus_path), "--agent", "oracle", "--out", str(tmp_path / "run"), "--score-rule", "weighted",
                "--weights", "state=0.7,answer=0.3", "--limit", "2", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    recs = read_trajectories(tmp_path / "run")
    assert all(r["reward"]["rule"] == {"mode": "weighted", "weights": {"state": 0.7, "answer": 0.3}} for r in recs)
    assert json.loads((tmp_path / "run" / "run.json").read_text())["score_rule"]["mode"] == "weighted"


class LeakyUser:
    """The agent answers in plain text; the user simulator (model ``user``) states the answer it asked for, then stops."""

    def __init__(self, corpus: Corpus) -> None:
        self.tasks = list(corpus.tasks)

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body["messages"]
        if body["model"] == "user":
            system = messages[0]["content"]
            task = next(t for t in self.tasks if (t.scenario.request if t.scenario else t.instruction) in system)
            text = f"I believe the answer is {task.expected_answer}, right?" if len(messages) == 2 else "Thanks! ###STOP###"
        else:
            text = "Let me confirm that for you: yes."
        return 200, completion(body["model"], {"role": "assistant", "content": text})


def test_a_user_simulator_that_leaks_the_answer_is_a_user_failure_left_out(corpus: Corpus, tmp_path: Path) -> None:
    from envsynth.agents import ChatAgent, UserSimulator

    info = [t for t in corpus.tasks if t.expected_answer is not None and not isinstance(t.expected_answer, list | dict)][:2]
    server = LeakyUser(corpus)
    with chat_server(server.reply) as url:
        llm, user_llm = OpenAIChat("agent", base_url=url, retry=FAST), OpenAIChat("user", base_url=url, retry=FAST)
        run_batch(
            corpus,
            lambda task, attempt: ChatAgent(llm),
            info,
            out=tmp_path / "run",
            user_factory=lambda task, attempt: UserSimulator(user_llm, task),
            meta={"user_sim": True},
        )
    recs = read_trajectories(tmp_path / "run")
    assert [r["label"] for r in recs] == ["user_failure"] * len(info)
    assert all("stated the answer" in r["label_detail"] for r in recs)
    assert all(r["reward"]["parts"]["communication"]["passed"] is False for r in recs)
    s = summarize(tmp_path / "run")
    assert s.episodes == 0 and s.labelled.by_label == {"user_failure": len(info)}
    assert summarize(tmp_path / "run", include_user_failures=True).episodes == len(info)
    result = regrade(tmp_path / "run", corpus=corpus)
    assert result.labels == {"user_failure": len(info)}
