"""``--executor``, ``--address`` and ``--workers`` as a user meets them on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scale_helpers import hashes

NO_RAY = "import sys; sys.modules['ray'] = None; from envsynth.cli import main; sys.argv[0] = 'envsynth'; main()"
"""The CLI in a Python where ``import ray`` fails, as where the extra is not installed."""


def cli_without_ray(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", NO_RAY, *args], capture_output=True, text=True, timeout=300)


def test_executor_ray_without_ray_is_a_one_line_error(tmp_path: Path) -> None:
    build = cli_without_ray("build", str(tmp_path / "c"), "-d", "taskboard", "-T", "1", "--executor", "ray")
    (tmp_path / "corpus").mkdir()
    run = cli_without_ray("run", str(tmp_path / "corpus"), "--out", str(tmp_path / "r"), "--agent", "oracle", "--executor", "ray")
    for res in (build, run):
        assert res.returncode == 2, res.stderr
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert lines == [
            "error: --executor: the ray executor needs the ray package, which is not installed: pip install 'envsynth[ray]'"
        ], res.stderr
    assert not (tmp_path / "c" / "apps").exists()


def test_bad_executor_settings_are_refused_before_building(tmp_path: Path) -> None:
    out = tmp_path / "c"
    for args, words in (
        (["--executor", "dask"], "--executor: Input should be 'local' or 'ray', got 'dask'"),
        (["--address", "auto"], "--address: an address is for the ray executor"),
        (["--executor", "ray", "--builder", "llm", "--domain", "x"], "--executor and --workers are for --builder procedural"),
        (["--workers", "2", "--builder", "llm", "--domain", "x"], "--executor and --workers are for --builder procedural"),
    ):
        res = cli_without_ray("build", str(out), "-d", "taskboard", *args)
        assert res.returncode == 2 and words in res.stderr, res.stderr
    assert not out.exists()


def test_workers_2_on_an_apps_only_build_uses_2_processes_and_the_same_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from envsynth import cli
    from envsynth.compiler import build

    pids = tmp_path / "pids"
    pids.mkdir()
    real = build.build_app

    def counted(*args: object, **kwargs: object) -> object:
        (pids / str(os.getpid())).touch()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "build_app", counted)  # pool processes are forked: they see it too
    names = ["-d", "taskboard", "-d", "tempo_music"]
    runner = CliRunner()
    one = runner.invoke(cli.app, ["build", str(tmp_path / "one"), *names, "--json"])
    assert one.exit_code == 0, one.output
    assert [p.name for p in pids.iterdir()] == [str(os.getpid())]  # -w 1 (the default): this process
    (pids / str(os.getpid())).unlink()
    two = runner.invoke(cli.app, ["build", str(tmp_path / "two"), *names, "--workers", "2", "--json"])
    assert two.exit_code == 0, two.output
    used = {int(p.name) for p in pids.iterdir()}
    assert len(used) == 2 and os.getpid() not in used
    assert hashes(tmp_path / "two") == hashes(tmp_path / "one")
    rows = json.loads(two.stdout)
    assert [r["name"] for r in rows] == ["taskboard", "tempo_music"] and all(r["ok"] for r in rows)
    assert rows[0]["path"] == str(tmp_path / "two" / "apps" / "taskboard")
    assert [{k: v for k, v in r.items() if k != "path"} for r in rows] == [
        {k: v for k, v in r.items() if k != "path"} for r in json.loads(one.stdout)
    ]
