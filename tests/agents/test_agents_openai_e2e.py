"""End to end: run_batch with the real openai client against a local scripted chat-completions server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from envsynth.agents import ChatAgent, OracleAgent
from envsynth.corpus import Corpus
from envsynth.llm import OpenAIChat, RetryPolicy
from envsynth.rollout import read_trajectories, run_batch, summarize
from envsynth.tasks.model import Task

pytest.importorskip("openai")


class ScriptedServer:
    """Serves /v1/chat/completions on 127.0.0.1: per conversation (keyed by its instruction), the
    first request gets a 429, the first reply is a tool call with malformed JSON arguments, then
    the oracle's steps (results read from the conversation sent)."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = {t.instruction: t for t in tasks}
        self.requests: list[dict[str, Any]] = []
        self.rate_limited: set[str] = set()
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body["messages"]
        instruction = next(m["content"] for m in messages if m["role"] == "user")
        with self.lock:
            self.requests.append(body)
            if instruction not in self.rate_limited:
                self.rate_limited.add(instruction)
                return 429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit"}}
        task = self.tasks[instruction]
        if not any(m["role"] == "assistant" for m in messages):
            bad = {"id": "call_bad", "type": "function", "function": {"name": task.oracle[0].tool, "arguments": '{"broken": '}}
            message = {"role": "assistant", "content": None, "tool_calls": [bad]}
        else:
            message = OracleAgent(task).reply(messages)
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }


@pytest.fixture
def server(corpus: Corpus) -> Iterator[tuple[str, ScriptedServer, list[Task]]]:
    seen: dict[str, Task] = {}
    for t in corpus.tasks:  # one task per instruction (states of a task share it)
        seen.setdefault(t.instruction, t)
    tasks = list(seen.values())[:4]
    scripted = ScriptedServer(tasks)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/chat/completions":
                status, payload = scripted.reply(body)
            elif self.path.startswith("/down/"):
                status, payload = 503, {"error": {"message": "overloaded", "type": "server_error"}}
            else:
                status, payload = 404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", scripted, tasks
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_run_batch_with_the_openai_client(
    corpus: Corpus, server: tuple[str, ScriptedServer, list[Task]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, scripted, tasks = server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = OpenAIChat("scripted-model", base_url=url, concurrency=2, retry=RetryPolicy(base=0.01, cap=0.05), temperature=0.0)
    res = run_batch(corpus, lambda t, a: ChatAgent(llm, max_turns=20), tasks, attempts=1, concurrency=4, out=tmp_path / "run")
    assert (res.written, res.errors) == (len(tasks), 0)
    s = summarize(tmp_path / "run")
    assert s["pass@1"] == 1.0 and s["retries"] == len(tasks)
    assert s["tool_calls"]["malformed"] == len(tasks) and s["rejection_codes"] == {"invalid_json": len(tasks)}
    for r in read_trajectories(tmp_path / "run"):
        task = corpus.task(r["task_id"])
        assert r["model"] == "scripted-model" and r["turns"] == len(task.oracle) + 2
        assert r["usage"]["prompt_tokens"] == 100 * r["turns"] and r["usage"]["retries"] == 1
        assert r["messages"][3]["role"] == "tool" and "not valid JSON" in r["messages"][3]["content"]
    assert llm.usage.requests == sum(len(t.oracle) + 2 for t in tasks) and llm.usage.retries == len(tasks)
    sent = scripted.requests[-1]
    assert sent["temperature"] == 0.0 and sent["tools"][-1]["function"]["name"] == "complete_task"
    names = {t.oracle[0].tool for t in tasks}
    assert any(m.get("tool_call_id") == "call_bad" and m["name"] in names for r in scripted.requests for m in r["messages"])


def test_a_server_that_keeps_failing_is_recorded(
    corpus: Corpus, server: tuple[str, ScriptedServer, list[Task]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _scripted, tasks = server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    down = OpenAIChat("m", base_url=url.replace("/v1", "/down/v1"), retry=RetryPolicy(max_retries=2, base=0.01, cap=0.01))
    wrong = OpenAIChat("m", base_url=url.replace("/v1", "/nowhere/v1"), retry=RetryPolicy(max_retries=2, base=0.01, cap=0.01))
    res = run_batch(corpus, lambda t, a: ChatAgent(down if t is tasks[0] else wrong), tasks[:2], out=tmp_path / "run")
    assert (res.written, res.errors) == (2, 2)
    recs = {r["task_id"]: r for r in read_trajectories(tmp_path / "run")}
    assert all(r["stop_reason"] == "model_error" and r["reward"]["score"] == 0.0 for r in recs.values())
    first, second = recs[tasks[0].id], recs[tasks[1].id]
    assert (first["error"]["kind"], first["error"]["status"], first["usage"]["retries"]) == ("server", 503, 2)
    assert (second["error"]["kind"], second["error"]["status"], second["usage"]["retries"]) == ("client", 404, 0)


def test_connection_refused_is_retried_then_recorded(corpus: Corpus, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_retries=2, base=0.01, cap=0.01))
    res = run_batch(corpus, lambda t, a: ChatAgent(llm), corpus.tasks[:1], out=tmp_path / "run")
    (rec,) = read_trajectories(tmp_path / "run")
    assert res.errors == 1 and rec["error"]["kind"] == "connection" and rec["usage"]["retries"] == 2
