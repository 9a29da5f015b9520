"""`envsynth serve http CORPUS` starts a real server on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")


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
