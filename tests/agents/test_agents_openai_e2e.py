"""End to end against a local scripted chat-completions server: run_batch with the real openai
client, and `envsynth run` as a subprocess, with and without the user simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_server import chat_server, completion
from envsynth.agents import USER_STOP, ChatAgent, OracleAgent
from envsynth.corpus import Corpus
from envsynth.llm import OpenAIChat, RetryPolicy
from envsynth.rollout import read_trajectories, run_batch, summarize
from envsynth.tasks.model import Task

pytest.importorskip("openai")


USER_MODEL = "scripted-user"
OPENING = "Hi, I need a hand with something."
QUESTION = "Sure, what exactly would you like me to do?"


class ScriptedServer:
    """Serves /v1/chat/completions on 127.0.0.1, playing the agent and (model ``scripted-user``) the user.

    The agent, per conversation (keyed by the instruction once the user has said it): asks
    what to do while it does not know the task, gets a 429 on its first request, answers
    first with a tool call with malformed JSON arguments, then takes the oracle's steps
    (results read from the conversation sent). The user (the simulator's prompt names the
    request): opens vaguely, says the request when asked a question, else stops.
    """

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks = {t.instruction: t for t in tasks}
        self.requests: list[dict[str, Any]] = []
        self.rate_limited: set[str] = set()
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
        messages = body["messages"]
        if body["model"] == USER_MODEL:
            message = {"role": "assistant", "content": self.user_reply(messages)}
        else:
            instruction = next((m["content"] for m in messages if m["role"] == "user" and m["content"] in self.tasks), None)
            if instruction is None:
                message = {"role": "assistant", "content": QUESTION}
            else:
                with self.lock:
                    if instruction not in self.rate_limited:
                        self.rate_limited.add(instruction)
                        return 429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit"}}
                message = self.agent_reply(self.tasks[instruction], messages)
        return 200, completion(body["model"], message, finish="tool_calls")

    @staticmethod
    def agent_reply(task: Task, messages: list[dict[str, Any]]) -> dict[str, Any]:
        if not any(m["role"] == "assistant" and m.get("tool_calls") for m in messages):
            bad = {"id": "call_bad", "type": "function", "function": {"name": task.oracle[0].tool, "arguments": '{"broken": '}}
            return {"role": "assistant", "content": None, "tool_calls": [bad]}
        with_user = messages[1]["content"] == OPENING  # a simulated user: tell it the answer (the communication part)
        return OracleAgent(task, tell=with_user).reply(messages)

    def user_reply(self, messages: list[dict[str, Any]]) -> str:
        request = next(i for i in self.tasks if i in messages[0]["content"])
        if not any(m["role"] == "assistant" for m in messages):
            return OPENING
        return request if messages[-1]["content"].endswith("?") else f"Thanks! {USER_STOP}"


@pytest.fixture
def server(corpus: Corpus) -> Iterator[tuple[str, ScriptedServer, list[Task]]]:
    seen: dict[str, Task] = {}
    for t in corpus.tasks:  # one task per instruction (states of a task share it)
        seen.setdefault(t.instruction, t)
    tasks = list(seen.values())[:4]
    scripted = ScriptedServer(tasks)

    def route(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path == "/v1/chat/completions":
            return scripted.reply(body)
        if path.startswith("/down/"):
            return 503, {"error": {"message": "overloaded", "type": "server_error"}}
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}

    with chat_server(route) as url:
        yield url, scripted, tasks


def test_run_batch_with_the_openai_client(
    corpus: Corpus, server: tuple[str, ScriptedServer, list[Task]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, scripted, tasks = server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = OpenAIChat("scripted-model", base_url=url, concurrency=2, retry=RetryPolicy(base=0.01, cap=0.05), temperature=0.0)
    res = run_batch(corpus, lambda t, a: ChatAgent(llm, max_turns=20), tasks, attempts=1, concurrency=4, out=tmp_path / "run")
    assert (res.written, res.errors) == (len(tasks), 0)
    s = summarize(tmp_path / "run").to_dict()
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


def cli_run(url: str, tmp: Path, name: str, tasks: list[Task], *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`envsynth run` in a subprocess, as a user types it; the summary and the trajectories."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"NO_PROXY": "127.0.0.1,localhost"}
    picks = [a for t in tasks for a in ("--task", t.id)]
    cmd = [sys.executable, "-m", "envsynth.cli", "run", str(tmp / "corpus"), "--agent", "openai", "--model", "scripted-model"]
    cmd += ["--base-url", url, "--concurrency", "4", "--out", str(tmp / name), "--json", *picks, *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), read_trajectories(tmp / name)


@pytest.fixture
def cli_corpus(corpus_path: Path, tmp_path: Path) -> Path:
    (tmp_path / "corpus").symlink_to(corpus_path)
    return tmp_path


def test_envsynth_run_cli_against_the_local_server(
    cli_corpus: Path, corpus: Corpus, server: tuple[str, ScriptedServer, list[Task]]
) -> None:
    url, scripted, tasks = server
    summary, recs = cli_run(url, cli_corpus, "run", tasks)
    assert summary["pass@1"] == 1.0 and summary["episodes"] == len(tasks) and summary["retries"] == len(tasks)
    assert summary["tool_calls"]["malformed"] == len(tasks) and summary["user_simulator"] is None
    for r in recs:
        task = corpus.task(r["task_id"])
        assert r["messages"][1] == {"role": "user", "content": task.instruction}
        assert r["turns"] == len(task.oracle) + 2 and r["usage"]["retries"] == 1 and r["user_usage"] is None
    assert {b["model"] for b in scripted.requests} == {"scripted-model"}
    again, same = cli_run(url, cli_corpus, "run", tasks)  # resume: nothing left to do
    assert same == recs and again["pass@1"] == 1.0


def test_envsynth_run_cli_with_the_user_simulator(cli_corpus: Path, corpus: Corpus, server: tuple[str, ScriptedServer, list[Task]]) -> None:
    url, scripted, tasks = server
    summary, recs = cli_run(url, cli_corpus, "run-user", tasks, "--user-sim", "--user-model", USER_MODEL)
    assert summary["pass@1"] == 1.0 and summary["user_simulator"]["episodes"] == len(tasks)
    questions = sum(t.expected_answer is not None for t in tasks)  # their answer is told to the user, who then stops
    user_turns = 2 * len(tasks) + questions
    assert summary["user_simulator"]["mean_turns"] == round(user_turns / len(tasks), 6)
    assert summary["user_simulator"]["total_tokens"] == 110 * user_turns
    for r in recs:
        task = corpus.task(r["task_id"])
        msgs = r["messages"]
        assert [m["content"] for m in msgs[1:4]] == [OPENING, QUESTION, task.instruction]
        told = task.expected_answer is not None
        assert r["turns"] == len(task.oracle) + 3 and r["user_turns"] == 2 + told  # (the answer in words, or complete_task)
        assert r["stop_reason"] == ("user_stop" if told else "complete_task")
        if told:  # answered in words: the last message is graded, and it reached the user
            assert r["answer"].startswith("Here is what I found:") and r["reward"]["parts"]["communication"]["passed"]
    user_requests = [b for b in scripted.requests if b["model"] == USER_MODEL]
    assert len(user_requests) == user_turns
    for b in user_requests:  # the simulator never sees tools, tool calls or tool results
        assert "tools" not in b and all(m["role"] in ("system", "user", "assistant") and not m.get("tool_calls") for m in b["messages"])
        assert b["messages"][1]["content"] == "Hi! How can I help you today?"
    config = json.loads((cli_corpus / "run-user" / "run.json").read_text())
    assert config["user_sim"] is True and config["user_model"] == USER_MODEL
