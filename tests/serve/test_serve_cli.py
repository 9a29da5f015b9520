"""`envsynth serve http CORPUS` starts a real server on loopback."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from serve_helpers import read_line  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_http_command(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    build = subprocess.run(
        [sys.executable, "-m", "envsynth.cli", "build", str(corpus), "-d", "tempo_music", "-T", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "envsynth.cli", "serve", "http", str(corpus), "--port", str(port)], stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        health = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    health = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.2)
        assert health is not None and health["status"] == "ok" and health["tasks"] == 2
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_serve_http_bad_corpus(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "envsynth.cli", "serve", "http", str(tmp_path / "none")], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2 and "Traceback" not in res.stderr


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENVSYNTH_TOKEN", "ENVSYNTH_USER_TOKEN")}
    return {**env, **extra}


def test_serve_http_token_reaping_and_clean_shutdown(corpus_path: Path) -> None:
    """The issue's run: 300 episodes with --idle-timeout 3 are all reaped; Ctrl-C ends 300 more cleanly."""
    cmd = [sys.executable, "-m", "envsynth.cli", "serve", "http", str(corpus_path), "--port", "0", "--idle-timeout", "3"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=_env(ENVSYNTH_TOKEN="trainer-secret"))
    try:
        line = read_line(proc.stderr)
        m = re.fullmatch(r"envsynth serve http: listening on (http://127\.0\.0\.1:\d+) \(8 tasks, token required\)\n", line)
        assert m, line
        with httpx.Client(base_url=m.group(1), timeout=30) as c:
            assert c.get("/health").status_code == 401
            c.headers["Authorization"] = "Bearer trainer-secret"
            tasks = [t["id"] for t in c.get("/tasks").json()["tasks"]]

            def start(task_id: str) -> str:
                r = c.post("/episodes", json={"task_id": task_id})
                assert r.status_code == 201, r.text
                return str(r.json()["episode_id"])

            c.post(f"/episodes/{start(tasks[0])}/finish")
            start(tasks[0])  # (its pooled connection is taken: the trap of the IndexError)
            for i in range(299):
                start(tasks[1 + i % 7])
            deadline = time.monotonic() + 20
            while c.get("/health").json()["live_episodes"] and time.monotonic() < deadline:
                time.sleep(0.25)
            h = c.get("/health").json()
            assert (h["live_episodes"], h["reaped"], h["errors"]) == (0, 300, 0), h
            for i in range(300):
                start(tasks[i % 8])
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err and "ERROR" not in err, err[-3000:]
    assert re.search(r"envsynth serve http: stopped \(\d+ live episodes ended, 0 errors\)", err), err[-3000:]
    assert proc.returncode in (0, 130, -signal.SIGINT)


def test_serve_http_refuses_an_open_non_loopback_host(corpus_path: Path) -> None:
    cmd = [sys.executable, "-m", "envsynth.cli", "serve", "http", str(corpus_path), "--host", "0.0.0.0"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "needs a token" in res.stderr and "--insecure" in res.stderr


def test_serve_http_port_in_use(corpus_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "envsynth.cli", "serve", "http", str(corpus_path), "--port", str(port)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=_env())
    assert res.returncode == 2 and "Traceback" not in res.stderr and f"cannot listen on 127.0.0.1:{port}" in res.stderr
