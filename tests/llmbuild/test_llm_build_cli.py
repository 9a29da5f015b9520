"""`envsynth build --builder llm` end to end: a subprocess against a local OpenAI-compatible server.

The server plays every builder role with the scripted builder, refuses JSON-schema
``response_format`` (so the client falls back to prompt mode, as with many local servers)
and answers the first request with a 429. The app it builds must pass its procedural tests
(`envsynth test`) and its tasks the corpus contract (`envsynth run --agent oracle`).
"""

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
from envsynth.llmbuild.scripted import ScriptedBuilder, role_of

pytest.importorskip("openai")


class Server:
    def __init__(self) -> None:
        self.builder = ScriptedBuilder()
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.bodies.append(body)
            first = len(self.bodies) == 1
        if first:
            return 429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
        if "response_format" in body:
            return 400, {"error": {"message": "response_format json_schema is not supported", "type": "invalid_request_error"}}
        text = self.builder(body["messages"])
        message = {"role": "assistant", "content": text}
        return 200, completion(
            body["model"], message, prompt_tokens=len(json.dumps(body["messages"])) // 4, completion_tokens=len(text) // 4
        )


@pytest.fixture
def server() -> Iterator[tuple[str, Server]]:
    scripted = Server()

    with chat_server(lambda path, body: scripted.reply(body)) as url:
        yield url, scripted


def envsynth(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")} | {"NO_PROXY": "127.0.0.1,localhost"}
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=900, env=env)


def test_build_llm_against_a_local_server(server: tuple[str, Server], tmp_path: Path) -> None:
    url, scripted = server
    out = tmp_path / "out"
    args = ["build", str(out), "--builder", "llm", "--domain", "Job Seeking", "--description", "A job board for graduates."]
    args += ["--model", "local-model", "--base-url", url]
    res = envsynth(*args, "-T", "3", "-S", "2", "-D", "1", "--json")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    metrics = report["llm_build"]
    assert metrics["app_names"] == {"Job Seeking": "job_seeking"} and report["corpus"]["tasks"] == 6
    assert metrics["client"]["structured_mode"] == "prompt"  # the server refused response_format
    assert metrics["client"]["total"]["retries"] >= 1  # the 429
    roles = {role_of(b["messages"]) for b in scripted.bodies}
    design = next(b for b in scripted.bodies if role_of(b["messages"]) == "designer")
    assert "Description: A job board for graduates." in design["messages"][-1]["content"]
    assert {"designer", "coder", "tester", "debugger", "dependency", "task_writer", "gating"} <= roles
    # the app passes its procedural tests, re-run from the folder
    tested = envsynth("test", str(out / "apps" / "job_seeking"), "--show", "failed")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    # the tasks pass the corpus contract: the oracle scores 1 on every task
    ran = envsynth("run", str(out), "--agent", "oracle", "--out", str(tmp_path / "run"), "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["pass@1"] == 1.0
    # inspect shows the operational metrics
    shown = json.loads(envsynth("inspect", str(out), "--json").stdout)
    assert shown["llm_build"]["domains"]["Job Seeking"]["tools_dropped"].keys() == {"score_candidate_match"}
    assert shown["apps"][0]["provenance"]["llm_builder"]["custom_tools"]["shipped"] == 2
    # a rerun costs nothing: every call is a cache hit, and the server sees no request
    before = len(scripted.bodies)
    again = envsynth(*args, "-T", "3", "-S", "2", "-D", "1", "--json")
    assert again.returncode == 0, again.stderr
    assert len(scripted.bodies) == before
    rerun = json.loads(again.stdout)["llm_build"]
    assert rerun["client"]["total"]["calls"] == 0
    # the totals keep both runs, and match what the server received (the 429 included)
    assert rerun["cumulative"]["runs"] == 2 and rerun["cumulative"]["total"]["requests"] == len(scripted.bodies)
    assert all(b["temperature"] == 0.2 and b["seed"] == 0 and 0 < b["max_tokens"] <= 8192 for b in scripted.bodies)


def test_build_llm_needs_a_model(tmp_path: Path) -> None:
    res = envsynth("build", str(tmp_path / "o"), "--builder", "llm", "--domain", "Job Seeking")
    assert res.returncode == 2 and "--model" in res.stderr and "Traceback" not in res.stderr
    res = envsynth("build", str(tmp_path / "o"), "--builder", "magic")
    assert res.returncode == 2 and "unknown builder" in res.stderr
    res = envsynth("build", str(tmp_path / "o"), "--builder", "llm", "--domain", "A", "--domain", "B", "--description", "x", "--model", "m")
    assert res.returncode == 2 and "one --description per --domain" in res.stderr


def test_build_llm_stops_cleanly_when_the_endpoint_refuses(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def route(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        bodies.append(body)
        return 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}

    out = tmp_path / "out"
    with chat_server(route) as url:
        args = ["build", str(out), "--builder", "llm", "--domain", "Job Seeking", "--model", "m", "--base-url", url]
        res = envsynth(*args, "--temperature", "0.7", "--llm-seed", "5", "--max-output-tokens", "1000")
    assert res.returncode == 3 and "Traceback" not in res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.strip()]
    assert line.startswith("stopped: the model endpoint failed (HTTP 401) for the designer role") and "rerun" in line
    recorded = json.loads((out / "llm_build.json").read_text())
    assert recorded["runs"][0]["status"].startswith("stopped: the model endpoint failed (HTTP 401)")
    assert recorded["cumulative"]["total"]["requests"] == len(bodies) == 1
    assert (bodies[0]["temperature"], bodies[0]["seed"], bodies[0]["max_tokens"]) == (0.7, 5, 1000)
    bad = envsynth(*args, "--max-output-tokens", "9000")
    assert bad.returncode == 2 and "--max-output-tokens: must be 16 to 7680" in bad.stderr
