"""The MCP server of one task episode: in-memory sessions, then real stdio and streamable HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from envsynth.blueprint.policy import policy_text

pytest.importorskip("mcp")

import anyio
from mcp import Client, StdioServerParameters
from serve_helpers import distinctive, read_line, says

from envsynth.corpus import Corpus
from envsynth.runtime.answerpath import answer_in
from envsynth.serve.mcp import COMPLETED, build_server
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve


def _instructions(corpus: Corpus, task: Any) -> str:
    """What the server's instructions say: the task's instruction, after the app's policy when it has one."""
    policy = policy_text(corpus.apps[task.app].blueprint)
    return f"## Policy\n\n{policy}\n\n## Request\n\n{task.instruction}" if policy else task.instruction


def _tool_names(corpus: Corpus, task: Any) -> list[str]:
    """The episode's tools, in order: the visible ones, ask_user for a must-ask task, complete_task."""
    ep = corpus.start(task)
    try:
        return [t["function"]["name"] for t in ep.tools]
    finally:
        ep.finish()


def text(result: Any) -> str:
    """The text of a tool result's single content block."""
    assert len(result.content) == 1
    return result.content[0].text


async def play_oracle(client: Client, task: Task) -> str:
    """Run the task's oracle through ``client`` (refs resolved from the returned JSON), then complete."""
    results: list[Any] = []
    for call in task.oracle:
        args = {**call.args, **{p: resolve(ref, results) for p, ref in call.refs.items()}}
        res = await client.call_tool(call.tool, args)
        assert not res.is_error, (task.id, call.tool, text(res))
        results.append(json.loads(text(res)))
    args = {}
    if task.answer_step is not None and task.answer_field:
        answer = answer_in(results[task.answer_step], task.answer_field)
        args["answer"] = answer if isinstance(answer, str) else json.dumps(answer)
    done = await client.call_tool("complete_task", args)
    assert not done.is_error
    return text(done)


def run_with(server: Any, body: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server) as client:
            await body(client)

    anyio.run(main)


def test_lists_exactly_the_visible_tools_and_the_instruction(corpus: Corpus) -> None:
    task = corpus.tasks[0]
    server = build_server(corpus, task.id)
    app_schemas = {s["function"]["name"]: s["function"] for s in corpus.apps[task.app].tool_schemas(task.visible_tools)}

    async def body(client: Client) -> None:
        assert client.instructions == _instructions(corpus, task)
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == _tool_names(corpus, task)
        for t in tools[:-1]:
            assert t.description == app_schemas[t.name]["description"]
            assert t.input_schema == app_schemas[t.name]["parameters"]
        assert set(tools[-1].input_schema["properties"]) == {"answer"}
        assert [p.name for p in (await client.list_prompts()).prompts] == ["task"]
        prompt = await client.get_prompt("task")
        assert prompt.messages[0].content.text == task.instruction

    run_with(server, body)


def test_every_oracle_scores_one(corpus: Corpus, tmp_path: Path) -> None:
    for task in corpus.tasks:
        reward_file = tmp_path / f"{task.id}.json"
        got: list[dict[str, Any]] = []
        server = build_server(corpus, task.id, reward_file=reward_file, on_reward=got.append)

        async def body(client: Client, task: Task = task) -> None:
            assert await play_oracle(client, task) == COMPLETED

        run_with(server, body)
        reward = json.loads(reward_file.read_text())
        assert reward["score"] == 1.0 and reward["passed"] and reward["breakdown"] == [], reward
        assert reward["task_id"] == task.id and got == [reward]


def test_errors_are_tool_results_and_the_session_goes_on(corpus: Corpus, tmp_path: Path) -> None:
    task = corpus.tasks[0]
    hidden = next(n for n in corpus.apps[task.app].spec_by_name if n not in task.visible_tools)
    reward_file = tmp_path / "reward.json"
    server = build_server(corpus, task.id, reward_file=reward_file)

    async def body(client: Client) -> None:
        for name, args in [("no_such_tool", {}), (hidden, {}), (task.oracle[0].tool, {"bogus": 1}), ("complete_task", {"x": 1})]:
            res = await client.call_tool(name, args)
            assert res.is_error and text(res), (name, res)
        assert "Unknown tool" in text(await client.call_tool(hidden, {}))
        assert await play_oracle(client, task) == COMPLETED  # the errors changed nothing
        after = await client.call_tool("complete_task", {})
        assert after.is_error and "already completed" in text(after)

    run_with(server, body)
    assert json.loads(reward_file.read_text())["score"] == 1.0


def test_an_exception_in_a_tool_is_an_error_result(corpus: Corpus) -> None:
    task = corpus.tasks[0]
    server = build_server(corpus, task.id)

    class Broken:
        finished = False

        def call(self, name: str, arguments: Any) -> Any:
            raise RuntimeError("disk on fire")

    server.envsynth_episode.episode = Broken()

    async def body(client: Client) -> None:
        res = await client.call_tool(task.visible_tools[0], {})
        assert res.is_error and "disk on fire" in text(res)
        assert [t.name for t in (await client.list_tools()).tools][-1] == "complete_task"

    run_with(server, body)


def test_doing_nothing_scores_zero_and_the_agent_only_sees_completed(corpus: Corpus, tmp_path: Path) -> None:
    task = corpus.tasks[0]
    reward_file = tmp_path / "reward.json"
    server = build_server(corpus, task.id, reward_file=reward_file)

    async def body(client: Client) -> None:
        assert text(await client.call_tool("complete_task", {})) == COMPLETED

    run_with(server, body)
    reward = json.loads(reward_file.read_text())
    assert reward["score"] == 0.0 and reward["breakdown"]


def _launch(corpus_path: Path, task_id: str, reward_file: Path, **kwargs: Any) -> list[str]:
    call = f"run({str(corpus_path)!r}, {task_id!r}, reward_file={str(reward_file)!r}, **{kwargs!r})"
    return ["-c", f"from envsynth.serve.mcp import run; {call}"]


def test_stdio_transport(corpus_path: Path, corpus: Corpus, tmp_path: Path) -> None:
    task = corpus.tasks[-1]
    reward_file = tmp_path / "reward.json"
    params = StdioServerParameters(command=sys.executable, args=_launch(corpus_path, task.id, reward_file, transport="stdio"))

    async def body(client: Client) -> None:
        assert client.instructions == _instructions(corpus, task)
        assert [t.name for t in (await client.list_tools()).tools] == _tool_names(corpus, task)
        assert (await client.call_tool("no_such_tool", {})).is_error
        assert await play_oracle(client, task) == COMPLETED

    run_with(params, body)
    assert json.loads(reward_file.read_text())["score"] == 1.0


def test_streamable_http_transport(corpus_path: Path, corpus: Corpus, tmp_path: Path) -> None:
    task = corpus.tasks[1]
    reward_file = tmp_path / "reward.json"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = _launch(corpus_path, task.id, reward_file, transport="http", host="127.0.0.1", port=port)
    proc = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "the MCP HTTP server did not start"
                time.sleep(0.05)

        async def body(client: Client) -> None:
            assert client.instructions == _instructions(corpus, task)
            assert [t.name for t in (await client.list_tools()).tools] == _tool_names(corpus, task)
            assert (await client.call_tool("no_such_tool", {})).is_error
            assert await play_oracle(client, task) == COMPLETED

        run_with(f"http://127.0.0.1:{port}/mcp", body)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert json.loads(reward_file.read_text())["score"] == 1.0
    assert f"task {task.id} completed, score 1.0" in err.decode()


def test_the_reward_record_holds_no_ground_truth_by_default(corpus: Corpus, tmp_path: Path) -> None:
    for task in corpus.tasks:
        records: dict[bool, dict[str, Any]] = {}
        for reveal in (False, True):
            reward_file = tmp_path / f"{task.id}-{reveal}.json"
            server = build_server(corpus, task.id, reward_file=reward_file, reveal_expected=reveal)

            async def body(client: Client) -> None:
                assert text(await client.call_tool("complete_task", {"answer": "no idea"})) == COMPLETED

            run_with(server, body)
            records[reveal] = json.loads(reward_file.read_text())
        hidden, shown = records[False], records[True]
        assert hidden["score"] == shown["score"] == 0.0 and hidden["breakdown"]
        assert all(set(m) == {"kind", "table", "count"} for m in hidden["breakdown"]), hidden
        assert sum(m["count"] for m in hidden["breakdown"]) == len(shown["breakdown"])
        assert all("expected" in m and "message" in m for m in shown["breakdown"])
        if distinctive(task.expected_answer):
            assert not says(hidden, task.expected_answer) and says(shown, task.expected_answer)


def test_a_huge_tool_name_is_not_echoed(corpus: Corpus) -> None:
    server = build_server(corpus, corpus.tasks[0].id)

    async def body(client: Client) -> None:
        res = await client.call_tool("x" * 100_000, {})
        assert res.is_error and "Unknown tool" in text(res) and len(text(res)) < 200
        extra = await client.call_tool("complete_task", {"y" * 100_000: 1})
        assert extra.is_error and len(text(extra)) < 300

    run_with(server, body)


def test_streamable_http_with_a_token(corpus_path: Path, corpus: Corpus, tmp_path: Path) -> None:
    import os
    import re

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    task = corpus.tasks[2]
    reward_file = tmp_path / "reward.json"
    cmd = [sys.executable, "-m", "envsynth.cli", "serve", "mcp", str(corpus_path), "--task", task.id, "--transport", "http"]
    env = {**os.environ, "ENVSYNTH_TOKEN": "agent-secret"}
    proc = subprocess.Popen([*cmd, "--port", "0", "--reward-file", str(reward_file)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = read_line(proc.stderr)  # the startup line comes once the port is bound
        m = re.fullmatch(r"envsynth serve mcp: listening on (http://127\.0\.0\.1:\d+/mcp) \(task (\S+), token required\)\n", line)
        assert m and m.group(2) == task.id, line
        url = m.group(1)
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"accept": "application/json"})
        assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
        _deep_body_is_a_parse_error(url, {"Authorization": "Bearer agent-secret"})

        async def body(client: Client) -> None:
            assert await play_oracle(client, task) == COMPLETED

        async def main() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": "Bearer agent-secret"}, timeout=30)
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                await body(client)

        anyio.run(main)
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert json.loads(reward_file.read_text())["score"] == 1.0


def test_streamable_http_refuses_an_open_non_loopback_host(corpus_path: Path, corpus: Corpus) -> None:
    cmd = [sys.executable, "-m", "envsynth.cli", "serve", "mcp", str(corpus_path), "--task", corpus.tasks[0].id, "--transport", "http"]
    res = subprocess.run([*cmd, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=120, env=_without_token())
    assert res.returncode == 2 and "needs a token" in res.stderr and "Traceback" not in res.stderr


def _without_token() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "ENVSYNTH_TOKEN"}


def _deep_body_is_a_parse_error(url: str, auth: dict[str, str]) -> None:
    """A session whose tools/call bodies nest 5000 deep: a JSON-RPC parse error each, and the session goes on."""
    import httpx2

    headers = {**auth, "accept": "application/json, text/event-stream", "content-type": "application/json"}
    with httpx2.Client(timeout=30, headers=headers) as c:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
        r = c.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert r.status_code == 200, r.text[:300]
        c.headers.update({"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"})
        assert c.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
        deep = "[" * 5000 + "]" * 5000
        for args in ('{"a": ' + deep + "}", '{"answer": ' + deep + "}"):
            for name in ("search_x", "complete_task"):
                body = '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "' + name + '", "arguments": ' + args + "}}"
                r = c.post(url, content=body)
                assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text[:300]
        r = c.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
        assert r.status_code == 200 and "complete_task" in r.text


def test_an_environment_bug_is_logged_with_its_traceback(
    corpus: Corpus, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that raises past the episode is an error result for the agent, and the operator's log keeps the traceback."""
    server = build_server(corpus, corpus.tasks[0].id)
    tools = server.envsynth_episode
    name = tools.tools[0].name

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in the environment")

    monkeypatch.setattr(type(tools.episode), "call", broken)
    with caplog.at_level("ERROR", logger="envsynth.serve.mcp"):
        res = tools.call(name, {})
    assert res.is_error and "RuntimeError: a bug in the environment" in res.content[0].text
    [record] = caplog.records
    assert name in record.getMessage() and record.exc_info is not None and record.exc_info[0] is RuntimeError
