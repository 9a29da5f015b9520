"""The CLI as a user runs it: real subprocesses, real folders."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    assert not (out / "corner_bookshop").exists()
    assert [p.name for p in out.iterdir()] == []


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
    app_dir = out / "corner_bookshop"
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
