"""The LLM builder end to end with the scripted provider: keyword -> tested app -> admitted tasks.

One build (module fixture) is checked from every side: the debug loop repaired one tool
and dropped another, the invalid design reply was corrected, the LLM-written bodies are
only string constants in tools.py, every task passes the corpus contract, the metrics add
up; then a rerun replays every call from the cache and rebuilds the same bytes, and a
token budget stops a build that a rerun finishes.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from envsynth.agents import OracleAgent
from envsynth.corpus import load_corpus
from envsynth.llm import ScriptedProvider
from envsynth.llmbuild.client import BudgetExceeded, BuilderClient
from envsynth.llmbuild.pipeline import METRICS_FILE, LLMBuildResult, build_llm_corpus
from envsynth.llmbuild.scripted import scripted_builder
from envsynth.runtime.app import App

T, S, D = 3, 2, 1
APP = "job_seeking"


def build(out: Path, client: BuilderClient) -> LLMBuildResult:
    return build_llm_corpus(out, ["Job Seeking"], client, tasks_per_app=T, states=S, distractors=D, seed=0)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LLMBuildResult, ScriptedProvider]:
    out = tmp_path_factory.mktemp("llm") / "corpus"
    provider = scripted_builder()
    return out, build(out, BuilderClient(provider, cache_dir=out / ".llm-cache")), provider


def test_keyword_to_a_tested_app(first: tuple[Path, LLMBuildResult, ScriptedProvider]) -> None:
    out, res, _ = first
    app = App.load(out / "apps" / APP)
    names = {s.name for s in app.specs}
    assert {"withdraw_application", "schedule_interview"} <= names and "score_candidate_match" not in names
    assert all(s.untrusted for s in app.specs if s.code is not None)
    summary = json.loads((out / "apps" / APP / "tests.json").read_text())["summary"]
    assert summary["failed"] == 0 and summary["unexpected_failure"] == 0 and summary["cases"] > 100
    (domain,) = res.domains
    assert domain.error is None and res.metrics["generation_success_rate"] == 1.0


def test_the_debug_loop_repairs_and_drops(first: tuple[Path, LLMBuildResult, ScriptedProvider]) -> None:
    _, res, _ = first
    m = res.metrics["domains"]["Job Seeking"]
    assert m["debug_rounds"] == {"withdraw_application": 1, "schedule_interview": 0, "score_candidate_match": 3}
    assert m["custom_tools"] == {"designed": 3, "shipped": 2, "success_rate": 0.6667}
    assert "still fail after 3 debug round(s)" in m["tools_dropped"]["score_candidate_match"]
    repaired = m["tools"]["withdraw_application"]
    assert repaired["passed"] and repaired["history"][0]["failing"] >= 1 and "applicant_count" in repaired["history"][0]["diagnosis"]
    assert m["roles"]["designer"]["invalid_outputs"] == 1  # the cut-off design was sent back and corrected


def test_llm_code_is_only_data_in_the_main_process(first: tuple[Path, LLMBuildResult, ScriptedProvider]) -> None:
    out, _, _ = first
    tree = ast.parse((out / "apps" / APP / "tools.py").read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "withdraw_application")
    calls = [ast.unparse(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)]
    assert not any(c == "db.execute" for c in calls), calls  # the body's SQL is not code here
    consts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert any('UPDATE "job_posting" SET "applicant_count"' in c for c in consts)


def test_every_task_passes_the_corpus_contract(first: tuple[Path, LLMBuildResult, ScriptedProvider]) -> None:
    out, res, _ = first
    corpus = load_corpus(out)
    corpus.verify()
    assert len(corpus.tasks) == T * S
    for task in corpus.tasks:
        ep = corpus.start(task, seed=2)
        oracle = OracleAgent(task)
        messages: list[dict[str, Any]] = []
        while True:
            msg = oracle.reply(messages)
            call = msg["tool_calls"][0]["function"]
            if call["name"] == "complete_task":
                reward = ep.finish(json.loads(call["arguments"]).get("answer"))
                break
            r = ep.call(call["name"], json.loads(call["arguments"]))
            assert r.outcome == "success", (task.id, call, r.content)
            messages += [msg, {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": r.content}]
        assert reward.score == 1.0, (task.id, reward.breakdown)
        assert corpus.start(task).finish().score == 0.0, task.id
        assert len(task.visible_tools) >= 20
    assert res.metrics["task_stage"] is not None


def test_metrics_add_up(first: tuple[Path, LLMBuildResult, ScriptedProvider]) -> None:
    out, res, provider = first
    client = res.metrics["client"]
    roles = client["roles"]
    for key in ("calls", "prompt_tokens", "completion_tokens", "cache_hits"):
        assert sum(r[key] for r in roles.values()) == client["total"][key]
    assert client["total"]["calls"] == len(provider.requests)  # (a repeated debug request is already a cache hit)
    domain = res.metrics["domains"]["Job Seeking"]
    for role in ("designer", "coder", "tester", "debugger"):
        assert domain["roles"][role]["calls"] == roles[role]["calls"]
    app_json = json.loads((out / "apps" / APP / "app.json").read_text())
    assert app_json["provenance"]["llm_builder"]["tools_dropped"] == domain["tools_dropped"]
    assert json.loads((out / METRICS_FILE).read_text())["client"]["total"] == client["total"]


def _files(root: Path) -> dict[str, Any]:
    """Every artifact's bytes; app.json without the LLM metrics (a rerun's say: all cache hits)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or ".llm-cache" in p.parts or p.name == METRICS_FILE:
            continue
        rel = str(p.relative_to(root))
        if p.name == "app.json":
            data = json.loads(p.read_text())
            data["provenance"].pop("llm_builder")
            out[rel] = data
        else:
            out[rel] = p.read_bytes()
    return out


def test_a_rerun_hits_the_cache_for_every_call_and_rebuilds_the_same_bytes(
    first: tuple[Path, LLMBuildResult, ScriptedProvider], tmp_path: Path
) -> None:
    out, res, _ = first
    again = tmp_path / "again"
    offline = ScriptedProvider([], model="scripted-builder")  # any real call would fail: the script is empty
    res2 = build(again, BuilderClient(offline, cache_dir=out / ".llm-cache"))
    total = res2.metrics["client"]["total"]
    assert total["calls"] == 0 and total["total_tokens"] == 0 and offline.requests == []
    was = res.metrics["client"]["total"]
    assert total["cache_hits"] == was["calls"] + was["cache_hits"]  # every request of the first run, now from the cache
    assert _files(again) == _files(out)
    rerun = json.loads((again / "apps" / APP / "app.json").read_text())["provenance"]["llm_builder"]
    assert rerun["calls"] == 0 and rerun["tokens"] == 0 and rerun["cache_hits"] > 0


def test_a_spent_budget_stops_cleanly_and_a_rerun_finishes(tmp_path: Path) -> None:
    out = tmp_path / "c"
    provider = scripted_builder()
    budget = 20_000
    with pytest.raises(BudgetExceeded):
        build(out, BuilderClient(provider, cache_dir=out / ".llm-cache", max_tokens_total=budget))
    paid = len(provider.requests)
    stopped = json.loads((out / METRICS_FILE).read_text())
    assert paid > 0 and stopped["client"]["total"]["calls"] == paid
    assert stopped["client"]["spent_tokens"] <= budget  # reserved before sending: never over
    assert stopped["runs"][0]["status"].startswith("stopped: token budget spent")
    provider2 = scripted_builder()
    res = build(out, BuilderClient(provider2, cache_dir=out / ".llm-cache"))
    assert res.metrics["client"]["total"]["cache_hits"] >= paid  # every paid reply is replayed: none was lost
    assert len(load_corpus(out).tasks) == T * S
    assert res.metrics["cumulative"]["total"]["calls"] == paid + len(provider2.requests)
    assert [r["status"] for r in res.metrics["runs"]][1] == "done"
