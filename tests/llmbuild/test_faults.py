"""The LLM builder against a faulty endpoint: every fault ends in a corpus or a clean, resumable stop.

A local OpenAI-compatible server (loopback only) plays every builder role with the
scripted builder and injects faults by role: a lasting 503, a 200 whose body is an HTML
page, a 400 "maximum context length" for a prompt (plus ``max_tokens``) over its context.
It counts every request it receives, and ``llm_build.json``'s cumulative request count
must equal it across a stop, a resume and a cached rerun.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_server import Raw, chat_server, completion
from envsynth.corpus import load_corpus
from envsynth.llm import OpenAIChat, RetryPolicy
from envsynth.llmbuild.client import BuilderClient, EndpointUnavailable
from envsynth.llmbuild.pipeline import METRICS_FILE, build_llm_corpus
from envsynth.llmbuild.scripted import ScriptedBuilder, role_of

pytest.importorskip("openai")

HTML = "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"


class FaultServer:
    """Answers as the scripted builder, with the faults the test sets per role.

    Attributes:
        count: requests received (every attempt, retries included).
        statuses: the status of each answer, in order.
        lasting_503: roles always answered 503.
        html_once: role -> the content type of one 200 reply whose body is an HTML page.
        context: tokens (4 characters a token); a longer prompt plus ``max_tokens`` gets a 400.
    """

    def __init__(self) -> None:
        self.builder = ScriptedBuilder()
        self.lock = threading.Lock()
        self.count = 0
        self.statuses: list[int] = []
        self.roles: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.lasting_503: set[str] = set()
        self.html_once: dict[str, str] = {}
        self.context: int | None = None

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | Raw]:
        role = role_of(body["messages"])
        with self.lock:
            self.count += 1
            self.roles[role] += 1
            self.bodies.append(body)
            status, payload = self._answer(role, body)
            self.statuses.append(status)
        return status, payload

    def _answer(self, role: str, body: dict[str, Any]) -> tuple[int, dict[str, Any] | Raw]:
        if role in self.lasting_503:
            return 503, {"error": {"message": "Service Unavailable: the model is overloaded", "type": "server_error"}}
        if role in self.html_once:
            return 200, Raw(HTML, self.html_once.pop(role))
        prompt = len(json.dumps(body["messages"])) // 4
        asked = prompt + int(body.get("max_tokens") or 0)
        if self.context is not None and asked > self.context:
            message = (
                f"This model's maximum context length is {self.context} tokens. However, you requested {asked} tokens "
                f"({prompt} in the messages, {body.get('max_tokens')} in the completion). Please reduce the length of the messages or completion."
            )
            return 400, {"error": {"message": message, "type": "BadRequestError", "param": None, "code": 400}}
        text = self.builder(body["messages"])
        return 200, completion(
            body["model"], {"role": "assistant", "content": text}, prompt_tokens=prompt, completion_tokens=len(text) // 4
        )


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, FaultServer]]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    faults = FaultServer()
    with chat_server(lambda path, body: faults.reply(body)) as url:
        yield url, faults


def client(url: str, out: Path, **options: Any) -> BuilderClient:
    chat = OpenAIChat("fault-model", base_url=url, retry=RetryPolicy(max_retries=2, base=0.001, cap=0.005))
    return BuilderClient(chat, cache_dir=out / ".llm-cache", temperature=0.2, seed=0, **options)


def build(url: str, out: Path, **options: Any) -> Any:
    return build_llm_corpus(out, ["Job Seeking"], client(url, out, **options), tasks_per_app=2, states=1, distractors=0)


def recorded(out: Path) -> dict[str, Any]:
    return json.loads((out / METRICS_FILE).read_text())


def test_faults_end_in_a_stop_or_a_corpus_and_the_counts_match_the_endpoint(server: tuple[str, FaultServer], tmp_path: Path) -> None:
    url, faults = server
    out = tmp_path / "corpus"

    # run 1: the designer's first reply is an HTML page (retried); the coder gets a lasting 503: a clean stop
    faults.html_once["designer"] = "application/json"  # JSONDecodeError in the SDK
    faults.lasting_503.add("coder")
    with pytest.raises(EndpointUnavailable, match=r"HTTP 503.*coder"):
        build(url, out)
    first = recorded(out)
    assert first["runs"][0]["status"].startswith("stopped: the model endpoint failed (HTTP 503) for the coder role")
    assert first["cumulative"]["total"]["requests"] == faults.count == first["client"]["total"]["requests"]
    assert first["client"]["roles"]["designer"]["retries"] >= 1 and faults.roles["coder"] >= 3
    assert first["domains"] == {} and not (out / "apps").exists()

    # run 2: the coder works again; the gating role has a lasting 503 (its fallback: the procedural tools),
    # the task writer's first reply is a text/html page (retried)
    faults.lasting_503 = {"gating"}
    faults.html_once["task_writer"] = "text/html"
    res = build(url, out)
    second = recorded(out)
    assert len(load_corpus(out).tasks) == 2 and res.metrics["app_names"] == {"Job Seeking": "job_seeking"}
    assert second["task_stage"]["gating_failed"] == 2 and second["task_stage"]["instructions_rewritten"] == 2
    assert [r["status"] for r in second["runs"]] == [first["runs"][0]["status"], "done"]
    assert second["cumulative"]["total"]["requests"] == faults.count
    assert second["cumulative"]["runs"] == 2
    assert second["cumulative"]["total"]["calls"] == sum(r["total"]["calls"] for r in second["runs"])

    # run 3: everything is cached, the endpoint sees nothing, and the totals keep every run
    before = faults.count
    build(url, out)
    third = recorded(out)
    assert faults.count == before and third["client"]["total"]["calls"] == 0
    paid = ("calls", "requests", "retries", "failures", "prompt_tokens", "completion_tokens")
    assert {k: third["cumulative"]["total"][k] for k in paid} == {k: second["cumulative"]["total"][k] for k in paid}
    assert third["cumulative"]["total"]["requests"] == faults.count and len(third["runs"]) == 3
    # every request carried the sampling parameters and a max_tokens that fits the context with its prompt
    assert all(b["temperature"] == 0.2 and b["seed"] == 0 and b["max_tokens"] <= 8192 for b in faults.bodies)


def test_a_small_context_server_gets_fitted_prompts_and_its_400s_end_cleanly(server: tuple[str, FaultServer], tmp_path: Path) -> None:
    url, faults = server
    out = tmp_path / "corpus"
    faults.context = 4600  # the model has 4600 tokens; the client is told 8192, so long prompts get a 400
    res = build(url, out, max_output_tokens=2048)
    assert 400 in faults.statuses  # the server did refuse prompts as too long
    m = res.metrics
    assert m["client"]["structured_mode"] == "json_schema"  # a context-length 400 is not a response_format rejection
    cached = [json.loads(p.read_text()) for p in (out / ".llm-cache").glob("*/*.json")]
    assert cached and not any("rejected" in c for c in cached)  # nor cached as one
    assert m["client"]["total"]["failures"] == faults.statuses.count(400)
    assert len(load_corpus(out).tasks) == 2  # the build ended with a corpus
    deps = m["domains"]["Job Seeking"]["dependencies"]
    assert deps["groups"] > 1 and all("does not fit the model's context" in f for f in deps["failures"])
    assert m["cumulative"]["total"]["requests"] == faults.count


def test_prompts_fit_an_8k_context(server: tuple[str, FaultServer], tmp_path: Path) -> None:
    url, faults = server
    faults.context = 8192
    res = build(url, tmp_path / "corpus")
    assert set(faults.statuses) == {200}  # no prompt (with its max_tokens) went over 8192 tokens
    assert all(len(json.dumps(b["messages"])) // 4 + b["max_tokens"] <= 8192 for b in faults.bodies)
    designer = [b for b in faults.bodies if role_of(b["messages"]) == "designer"]
    assert len(designer) == 2 and len(designer[1]["messages"][2]["content"]) <= 4000  # the correction does not resend the design
    assert res.metrics["domains"]["Job Seeking"]["dependencies"]["groups"] > 1  # the dependency prompt was split
    assert res.metrics["domains"]["Job Seeking"]["custom_tools"]["shipped"] == 2
