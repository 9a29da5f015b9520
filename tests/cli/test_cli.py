"""The CLI as a user runs it: real subprocesses, real folders."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from envsynth import catalog


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=600)


def test_catalog_json_lists_every_domain() -> None:
    res = run("catalog", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["name"] for r in rows] == catalog.names()
    assert all(r["tools"] >= 30 and 5 <= r["tables"] <= 20 for r in rows)


def test_build_test_inspect_roundtrip(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    out = tmp_path / "out"
    res = run("build", str(out), "--blueprint", str(bookshop_blueprint_path), "--json")
    assert res.returncode == 0, res.stderr
    [row] = json.loads(res.stdout)
    assert row["ok"] and row["unexpected_failures"] == 0
    assert row["path"] == str(out / "apps" / "corner_bookshop")  # one layout for every build
    assert json.loads((out / "corpus.json").read_text())["composition"]["tasks_per_app"] == 0
    res = run("test", str(out / "corner_bookshop"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 unexpected failure" in res.stdout
    res = run("inspect", str(out), "--json")
    assert res.returncode == 0, res.stderr
    [app] = json.loads(res.stdout)["apps"]
    assert app["tools"] == 16 and app["reads"] == 5 and app["writes"] == 11
    assert app["tests"]["unexpected_failure"] == 0 and app["tests"]["cases"] > 50
    assert "purchase" in app["table_names"]


def test_bad_blueprint_is_one_line_and_leaves_nothing(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(bookshop_blueprint_path.read_text().replace("type: quantity, min: 1, gen: {range: [1, 3]}", "type: quantitty"))
    out = tmp_path / "out"
    res = run("build", str(out), "--blueprint", str(bad))
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and "entities[2].fields[3].type" in lines[0], res.stderr
    assert not out.exists() or not any(out.iterdir())


def test_failing_app_leaves_no_half_written_folder(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    # a custom tool that writes a column it does not declare: its tests fail, nothing is written
    text = bookshop_blueprint_path.read_text().replace('SET "stock" = "stock" + ?', 'SET "price" = "price" + ?')
    bp = tmp_path / "broken.yaml"
    bp.write_text(text)
    out = tmp_path / "out"
    res = run("build", str(out), "--blueprint", str(bp))
    assert res.returncode == 1
    assert "restock_book" in res.stderr
    assert not (out / "apps" / "corner_bookshop").exists()
    assert [p.name for p in (out / "apps").iterdir()] == []  # nothing half-written (corpus.json records the failure)
    [record] = json.loads((out / "corpus.json").read_text())["apps"]
    assert record["name"] == "corner_bookshop" and "restock_book" in record["error"]


def test_missing_paths_and_unknown_domain(tmp_path: Path) -> None:
    for args in (("test", str(tmp_path / "nope")), ("inspect", str(tmp_path / "nope")), ("build", str(tmp_path), "--domain", "atlantis")):
        res = run(*args)
        assert res.returncode == 2, args
        assert "Traceback" not in res.stderr and "error:" in res.stderr


def test_help_explains_commands() -> None:
    res = run("--help")
    assert res.returncode == 0
    for cmd in ("catalog", "build", "test", "inspect"):
        assert cmd in res.stdout


def test_graph_command_writes_dot_and_json(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    out = tmp_path / "out"
    assert run("build", str(out), "--blueprint", str(bookshop_blueprint_path)).returncode == 0
    app_dir = out / "apps" / "corner_bookshop"
    res = run("graph", str(app_dir), "--json", "--format", "dot", "--out", str(tmp_path / "g.dot"))
    assert res.returncode == 0, res.stderr
    stats = json.loads(res.stdout)
    assert stats["nodes"] == 16 and stats["edges_by_kind"]["data"] > 0
    dot = (tmp_path / "g.dot").read_text()
    assert dot.startswith('digraph "corner_bookshop"') and '"place_purchase" -> "pay_purchase"' in dot
    res = run("graph", str(app_dir), "--out", str(tmp_path / "g.json"))
    assert res.returncode == 0
    assert json.loads((tmp_path / "g.json").read_text()) == json.loads((app_dir / "graph.json").read_text())
    assert run("graph", str(app_dir), "--format", "png").returncode == 2


def _one_line_error(res: subprocess.CompletedProcess[str]) -> str:
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in res.stderr, res.stderr
    return lines[0]


def test_bracketed_text_is_printed_as_it_is(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    # rich markup must not eat user or external text: the test case of a build failure, a domain
    # name, the extras of a help text
    bp = tmp_path / "broken.yaml"
    bp.write_text(bookshop_blueprint_path.read_text().replace('SET "stock" = "stock" + ?', 'SET "price" = "price" + ?'))
    res = run("build", str(tmp_path / "out"), "--blueprint", str(bp))
    assert res.returncode == 1
    assert re.search(r"first: restock_book \[[a-z_]+\] expected", res.stderr), res.stderr
    assert "corner_bookshop" in res.stdout  # the table of a non-terminal is not cut at 80 columns
    assert "no shipped domain '[bold]'" in _one_line_error(run("build", str(tmp_path / "o2"), "--domain", "[bold]"))
    for sub in ("sft", "rl"):
        res = run("export", sub, "--help")
        assert res.returncode == 0 and "pip install 'envsynth[datasets]'" in " ".join(res.stdout.split()), res.stdout


def test_tables_are_not_cut_when_stdout_is_not_a_terminal() -> None:
    res = run("catalog")
    assert res.returncode == 0
    assert "…" not in res.stdout, res.stdout
    for e in catalog.entries():
        assert f"│ {e.name} " in res.stdout and f"│ {e.title} " in res.stdout, e.name


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("build", "OUT", "-d", "harbor_market", "--seed", "-1"), "--seed"),
        (("build", "OUT", "-d", "harbor_market", "--workers", "-1"), "--workers"),
        (("build", "OUT", "-d", "harbor_market", "-T", "1", "--workers", "-1"), "--workers"),
        (("build", "OUT", "-d", "harbor_market", "-T", "1", "-S", "0"), "--states"),
        (("build", "OUT", "-d", "harbor_market", "-T", "1", "-D", "-1"), "--distractors"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--seed", "-1"), "--seed"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--limit", "0"), "--limit"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--requests", "0"), "--requests"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--max-tokens", "0"), "--max-tokens"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--max-errors", "-1"), "--max-errors"),
        (("run", "OUT", "--agent", "oracle", "--out", "RUN", "--temperature", "-0.5"), "--temperature"),
        (("test", "OUT", "--seed", "-2"), "--seed"),
    ],
)
def test_meaningless_counts_are_refused_by_flag_name(tmp_path: Path, args: tuple[str, ...], flag: str) -> None:
    argv = [str(tmp_path / "out") if a == "OUT" else str(tmp_path / "run") if a == "RUN" else a for a in args]
    line = _one_line_error(run(*argv))
    assert flag in line and "shard_size" not in line and "tasks_per_app" not in line, line
    assert not (tmp_path / "out").exists() and not (tmp_path / "run").exists()


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-app corpus (2 tasks) built once."""
    from envsynth.corpus import build_corpus

    out = tmp_path_factory.mktemp("small") / "corpus"
    build_corpus(out, blueprints=[catalog.load("tempo_music")], tasks_per_app=2)
    return out


def _closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_run_against_a_dead_endpoint_fails_with_the_error(small_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from envsynth import cli
    from envsynth.llm import openai_client
    from envsynth.llm.retry import RetryPolicy

    monkeypatch.setattr(openai_client, "RetryPolicy", lambda: RetryPolicy(max_retries=1, base=0.01))
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    args = ["run", str(small_corpus), "--model", "m", "--base-url", url, "--api-key", "k", "--out", str(tmp_path / "r")]
    runner = CliRunner()
    for extra, words in (
        ([], "all 2 episodes run now failed"),
        (["--json"], "all 2 episodes failed"),  # a rerun without the flag skips the failed episodes: still a failure
        (["--rerun-errors"], "all 2 episodes run now failed"),
    ):
        res = runner.invoke(cli.app, args + extra)
        assert res.exit_code == 1, res.output
        [line] = [x for x in res.stderr.splitlines() if x.startswith("error:")]
        assert words in line and "model error" in line and "Connection error" in line and "--rerun-errors" in line, line
    assert len((tmp_path / "r" / "trajectories.jsonl").read_text().splitlines()) == 3 * 2 - 2  # --rerun-errors ran both again
    # a run folder holding successes: the call whose new episodes all failed still fails
    mixed = ["run", str(small_corpus), "--out", str(tmp_path / "m")]
    assert runner.invoke(cli.app, [*mixed, "--agent", "oracle", "--limit", "1"]).exit_code == 0
    res = runner.invoke(cli.app, [*mixed, "--model", "m", "--base-url", url, "--api-key", "k"])
    assert res.exit_code == 1 and "the 1 episode run now failed" in res.stderr, res.output
    res = runner.invoke(cli.app, [*mixed, "--agent", "oracle", "--rerun-errors"])
    assert res.exit_code == 0 and "error" not in res.stderr, res.output


def test_rerun_errors_is_documented() -> None:
    root = Path(__file__).parents[2]
    for doc in (root / "README.md", root / "docs" / "agents.md"):
        assert "--rerun-errors" in doc.read_text(), doc
    assert "--rerun-errors" in run("run", "--help").stdout


def test_a_build_never_deletes_files_it_did_not_write(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    out = tmp_path / "out"
    build = ("build", str(out), "--blueprint", str(bookshop_blueprint_path))
    assert run(*build).returncode == 0
    app = out / "apps" / "corner_bookshop"
    before = {p.name: p.read_bytes() for p in app.iterdir()}
    assert run(*build).returncode == 0  # an app built from the same blueprint and seed is reused as it is
    assert {p.name: p.read_bytes() for p in app.iterdir()} == before
    (app / "notes.txt").write_text("mine")
    assert run(*build).returncode == 0  # reused: nothing is replaced, so the user's file is no obstacle
    assert (app / "notes.txt").read_text() == "mine"
    (app / "tools.py").write_text("# stale\n")  # now the app must be rebuilt, and its folder holds the user's file
    line = _one_line_error(run(*build))
    assert str(app) in line and "notes.txt" in line and "--force" in line, line
    assert (app / "notes.txt").read_text() == "mine" and (app / "app.json").read_bytes() == before["app.json"]
    res = run(*build, "--force")  # --force rebuilds the app's own files and keeps the user's
    assert res.returncode == 0, res.stderr
    assert (app / "notes.txt").read_text() == "mine"
    assert {p.name: p.read_bytes() for p in app.iterdir() if p.name != "notes.txt"} == before
    (app / "notes.txt").unlink()
    (app / "tools.py").write_text(before["tools.py"].decode() + "# my fix\n")  # an edit of a file the build wrote
    line = _one_line_error(run(*build))
    assert "tools.py was edited" in line and "--force" in line, line
    assert (app / "tools.py").read_text().endswith("# my fix\n")
    assert run(*build, "--force").returncode == 0
    assert {p.name: p.read_bytes() for p in app.iterdir()} == before
    # a folder envsynth did not write is never replaced, even with --force
    mine = out / "mine"
    mine.mkdir()
    (mine / "app.json").write_text('{"name": "mine"}')
    app.rename(out / "kept")
    (mine).rename(app)
    for extra in ((), ("--force",)):
        line = _one_line_error(run(*build, *extra))
        assert "not an app folder written by envsynth" in line, line
        assert [p.name for p in app.iterdir()] == ["app.json"]


def test_a_typo_in_a_top_level_key_is_named(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    bad = tmp_path / "typo.yaml"
    bad.write_text(bookshop_blueprint_path.read_text().replace("\nactions:", "\nacitons:"))
    line = _one_line_error(run("build", str(tmp_path / "out"), "--blueprint", str(bad)))
    assert line.startswith(f"error: {bad}: acitons: unknown key 'acitons'; did you mean actions? (allowed here: actions,"), line
