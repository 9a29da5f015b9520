"""`envsynth build OUT -T ...` and `envsynth inspect OUT --json` on a corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus_helpers import DATA, snapshot

from envsynth import catalog
from envsynth.corpus import load_corpus
from envsynth.report import CLASSES


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envsynth.cli", *args], capture_output=True, text=True, timeout=600)


def test_build_corpus_and_inspect(tmp_path: Path) -> None:
    out = tmp_path / "c"
    args = ("build", str(out), "-b", str(DATA / "bookshop.yaml"), "-T", "2", "-S", "2", "-D", "1", "--seed", "3", "--json")
    res = run(*args)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["composition"] == {"apps": 1, "tasks_per_app": 2, "states": 2, "distractors": 1} and summary["seed"] == 3
    assert summary["tasks"] == 4 and summary["synthesized"] == 4
    assert summary["admission"]["admitted"] == 2 and 0 < summary["admission"]["rate"] <= 1
    assert (out / "apps" / "corner_bookshop" / "graph.json").is_file() and (out / "corpus.json").is_file()
    before = snapshot(out)
    res = run(*args)  # a rerun does nothing
    assert res.returncode == 0 and json.loads(res.stdout)["synthesized"] == 0
    assert snapshot(out) == before

    res = run("inspect", str(out), "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    [app] = data["apps"]
    assert app["name"] == "corner_bookshop" and app["tools"] == 16
    c = data["corpus"]
    corpus = load_corpus(out)
    assert c["tasks"] == 4 and sum(c["tasks_by_kind"].values()) == 4
    assert c["tasks_by_kind"] == {k: sum(t.kind == k for t in corpus.tasks) for k in c["tasks_by_kind"]}
    assert sum(c["chain_length"].values()) == 4 and all(int(k) >= 1 for k in c["chain_length"])
    assert set(c["distractor_rows"]["total"]) <= {"d1"}
    assert c["admission"]["admitted"] == 2 and isinstance(c["admission"]["rejections"], dict)
    [capp] = c["apps"]
    graph = json.loads((out / "apps" / "corner_bookshop" / "graph.json").read_text())
    assert capp["graph"]["nodes"] == len(graph["nodes"]) == 16 and capp["graph"]["edges"] == len(graph["edges"]) > 0
    coherence = c["coherence"]  # the state linter, a share per class
    assert coherence["tasks"] == 4 and list(coherence["rates"]) == list(CLASSES)
    assert all(coherence["rates"][k] == coherence["counts"][k] / 4 for k in CLASSES)

    res = run("inspect", str(out))
    assert res.returncode == 0 and "chain length" in res.stdout and "corner_bookshop" in res.stdout
    assert "state coherence" in res.stdout and "derived arithmetic" in res.stdout


def test_bad_corpus_options_are_one_line(tmp_path: Path) -> None:
    for extra in (("-T", "-1"), ("-T", "1", "-D", "9"), ("--apps", "0")):
        res = run("build", str(tmp_path / "c"), "-b", str(DATA / "bookshop.yaml"), *extra)
        assert res.returncode == 2, extra
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in res.stderr, res.stderr


def test_inspect_of_a_broken_corpus_is_one_line(with_apps: Callable[[str], Path]) -> None:
    out = with_apps("c")
    (out / "corpus.json").write_text("[]")
    res = run("inspect", str(out), "--json")
    assert res.returncode == 2 and "corpus.json" in res.stderr and "Traceback" not in res.stderr


def test_force_reaches_a_corpus_build(with_apps: Callable[[str], Path]) -> None:
    out = with_apps("c")
    app = out / "apps" / "corner_bookshop"
    manifest = json.loads((app / "app.json").read_text())
    manifest["provenance"]["seed"] = 99  # built with another seed: this build must rebuild it
    (app / "app.json").write_text(json.dumps(manifest))
    (app / "notes.txt").write_text("mine")
    args = ("build", str(out), "-b", str(DATA / "bookshop.yaml"), "-T", "1")
    res = run(*args)
    lines = [x for x in res.stderr.splitlines() if x.strip() and not x.startswith(("building", "tasks of"))]
    assert res.returncode == 2 and len(lines) == 1 and "notes.txt" in lines[0] and "--force" in lines[0], res.stderr
    assert (app / "notes.txt").read_text() == "mine"
    res = run(*args, "--force")
    assert res.returncode == 0, res.stderr
    assert (app / "notes.txt").read_text() == "mine"
    assert json.loads((app / "app.json").read_text())["provenance"]["seed"] == 0


def test_more_apps_than_blueprints_is_an_error_naming_the_catalogue(tmp_path: Path) -> None:
    shipped = len(catalog.names())
    res = run("build", str(tmp_path / "c"), "--apps", str(shipped + 54), "-T", "1")
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert f"apps is {shipped + 54} but there are only {shipped} blueprints" in lines[0], lines[0]
    assert f"catalogue holds {shipped} domains" in lines[0] and not (tmp_path / "c").exists()

    res = run("build", str(tmp_path / "c"), "-b", str(DATA / "bookshop.yaml"), "--apps", "2")
    assert res.returncode == 2 and "there are only 1 blueprints" in res.stderr, res.stderr
    res = run("build", str(tmp_path / "c"), "--builder", "llm", "--domain", "vet clinic", "--model", "m", "--apps", "3")
    assert res.returncode == 2 and "1 --domain keywords" in res.stderr, res.stderr
    assert not (tmp_path / "c").exists()


def test_build_refuses_more_apps_than_blueprints_in_the_python_api(tmp_path: Path) -> None:
    from envsynth.pipeline import ProceduralBuilder, build
    from envsynth.pipeline.config import BuildConfig

    with pytest.raises(ValueError, match="apps is 2 but there are only 1 blueprints to build"):
        build(BuildConfig.of(out=tmp_path / "c", apps=2), ProceduralBuilder([catalog.load("tempo_music")]))
    assert not (tmp_path / "c").exists()
