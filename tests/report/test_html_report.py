"""``envsynth report``: the pages open in headless Chromium (Debian's, driven by Playwright) without console errors,
every app's graph is drawn, the plots render and a task page opens from the index."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envsynth import catalog
from envsynth.cli import app as cli
from envsynth.corpus import load_corpus
from envsynth.report import CLASSES
from envsynth.view.html import ReportError, build_report
from envsynth.view.html.data import run_data
from envsynth.view.taskview import task_view

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    path = os.environ.get("ENVSYNTH_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("no chromium on PATH: .ci/run installs Debian's chromium package")
        pytest.skip("no chromium on PATH (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def report(corpus_and_run: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("html") / "report"
    result = CliRunner().invoke(cli, ["report", str(corpus_and_run.corpus), str(corpus_and_run.run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    corpus = load_corpus(corpus_and_run.corpus)
    assert f"({len(corpus.apps)} apps, {len(corpus.tasks)} task pages, 1 run)" in result.output
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=_chromium(), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Page:
    """A page with every console error and uncaught exception recorded."""

    def __init__(self, browser: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.errors.append(f"request failed: {r.url}"))

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")
        return self.page


def test_index_loads_without_errors_and_plots_render(report: Path, browser: Any) -> None:
    p = Page(browser)
    page = p.open(report / "index.html")
    charts = page.locator(".chart svg.pygal-chart")
    assert charts.count() == 7
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 150
    assert page.locator(".chart svg rect.rect").count() > 0  # bars were drawn, not just axes
    assert page.locator("#apps a").count() == len(catalog.entries())
    categories = {e.name: e.category for e in catalog.entries()}
    heads = page.locator("#apps tr.category")  # the apps by category, a heading row each
    assert sorted(heads.nth(i).get_attribute("data-category") for i in range(heads.count())) == sorted(set(categories.values()))
    for name, category in categories.items():
        assert page.locator(f"#apps tr[data-category='{category}'] a[href='apps/{name}.html']").count() == 1
    assert heads.first.inner_text().startswith(f"{heads.first.get_attribute('data-category')}: ")
    assert page.locator("#runs a").count() == 1
    assert page.locator("#coherence tr").count() == len(CLASSES) + 1  # the state linter: a row per class
    audit = page.locator("#audit tr")  # the OOD audit, against the three benchmarks by default
    assert audit.count() == len(catalog.entries()) + 1
    assert [h.strip() for h in audit.nth(0).inner_text().split("\t")][1:4] == [
        f"{b}: score (nearest domain)" for b in ("tau2", "appworld", "bfcl")
    ]
    assert p.errors == []


def test_every_app_page_draws_its_graph(report: Path, browser: Any, corpus_and_run: Any) -> None:
    names = [e.name for e in catalog.entries()]
    assert len(names) >= 8
    for name in names:
        graph = json.loads((corpus_and_run.corpus / "apps" / name / "graph.json").read_text())
        p = Page(browser)
        page = p.open(report / "apps" / f"{name}.html")
        page.wait_for_selector("#graph[data-ready='1']", timeout=10_000)
        drawn = page.evaluate(
            "() => { const cy = window.envsynthGraph.cy; return {tools: cy.nodes(\"[type = 'tool']\").length, "
            "edges: cy.edges().length, width: cy.width(), canvases: document.querySelectorAll('#graph canvas').length}; }"
        )
        pairs = {(e["source"], e["target"]) for e in graph["edges"]}
        assert drawn["tools"] == len(graph["nodes"])
        assert drawn["edges"] == len(pairs) > 0
        assert drawn["width"] > 500 and drawn["canvases"] > 0
        assert page.locator(".chart svg.pygal-chart").count() == 2
        assert p.errors == [], name


def test_picking_a_tool_shows_its_edges(report: Path, browser: Any, corpus_and_run: Any) -> None:
    graph = json.loads((corpus_and_run.corpus / "apps" / "harbor_market" / "graph.json").read_text())
    followers = {e["target"] for e in graph["edges"] if e["source"] == "place_order"}
    p = Page(browser)
    page = p.open(report / "apps" / "harbor_market.html")
    page.wait_for_selector("#graph[data-ready='1']")
    page.evaluate("() => window.envsynthGraph.cy.getElementById('place_order').emit('tap')")
    side = page.locator("#graph-side").inner_text()
    assert "place_order" in side and f"leads to ({len(followers)})" in side
    lit = page.evaluate("() => window.envsynthGraph.cy.edges('.lit').length")
    assert lit == len({(e["source"], e["target"]) for e in graph["edges"] if "place_order" in (e["source"], e["target"])})
    assert p.errors == []


def test_a_task_page_opens_from_the_index(report: Path, browser: Any, corpus_and_run: Any) -> None:
    corpus = load_corpus(corpus_and_run.corpus)
    p = Page(browser)
    page = p.open(report / "index.html")
    link = page.locator("#tasks a").first
    task = corpus.task(link.inner_text())
    link.click()
    page.wait_for_load_state("load")
    assert page.locator("#task-id").inner_text() == task.id
    assert page.locator("#instruction").inner_text() == task.instruction
    assert page.locator("#oracle").inner_text().strip() == task.oracle_program.strip()
    assert page.locator("#visible-tools tr").count() == len(task.visible_tools) + 1
    core_rows = sum(len(rows) for rows in task.state.core.values())
    assert page.locator("table.rows tr.level-core").count() == core_rows
    assert "score 1.0" in page.locator("h3").filter(has_text="Attempt 0").inner_text()
    page.locator("details.trajectory summary").first.click()
    assert task.instruction in page.locator("details.trajectory .msg-user").first.inner_text()
    assert p.errors == []


def test_run_page_shows_pass_rates_per_app_and_chain_length(report: Path, browser: Any) -> None:
    p = Page(browser)
    page = p.open(report / "runs" / "oracle.html")
    assert page.locator(".chart svg.pygal-chart").count() == 5
    rows = page.locator("#by-app tr")
    assert rows.count() == len(catalog.entries()) + 1 and all("100.0%" in rows.nth(i).inner_text() for i in range(1, rows.count()))
    assert p.errors == []


def test_distractor_levels_are_read_off_the_rows(corpus_and_run: Any) -> None:
    corpus = load_corpus(corpus_and_run.corpus)
    seen: set[str] = set()
    for t in corpus.tasks:
        app = corpus.apps[t.app]
        view = task_view(t, app.blueprint, app.specs)
        assert sum(view["level_counts"].values()) == sum(map(len, t.state.core.values())) + sum(map(len, t.state.distractors.values()))
        seen.update(view["level_counts"])
        for r in view["rows"]:
            if r["level"] == "d2":  # a namesake shares the label of a core row of its table
                label = app.blueprint.entity(r["table"]).label
                assert any(c.get(label) == r["row"][label] for c in t.state.core[r["table"]])
    assert {"core", "d1", "d2"} <= seen  # D=2: plain rows and namesakes


def test_failure_kinds_of_a_run_are_counted(corpus_and_run: Any, tmp_path: Path) -> None:
    corpus = load_corpus(corpus_and_run.corpus)
    lines = (corpus_and_run.run / "trajectories.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["reward"] = {"score": 0.0, "passed": False, "breakdown": [{"kind": "missing_row", "message": "no new order"}]}
    (tmp_path / "trajectories.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    data = run_data(tmp_path, corpus)
    assert data["failure_kinds"] == {"missing_row": 1}
    assert data["by_app"][rec["app"]]["pass@1"] < 1.0
    assert data["summary"]["pass@1"] == pytest.approx((len(lines) - 1) / len(lines))


def test_a_rebuild_is_byte_identical_and_replaces_the_old_report(corpus_and_run: Any, report: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    build_report(corpus_and_run.corpus, [corpus_and_run.run], again, against=["tau2", "appworld", "bfcl"])  # as the command does
    files = sorted(p.relative_to(report) for p in report.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((report / f).read_bytes() == (again / f).read_bytes() for f in files)
    (again / "tasks" / "stale.html").write_text("from an older build")
    build_report(corpus_and_run.corpus, [], again)  # a rerun into its own report folder, now without the run
    assert not (again / "tasks" / "stale.html").exists() and not (again / "runs" / "oracle.html").exists()


def test_report_refuses_a_folder_it_did_not_write(corpus_and_run: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ReportError, match="not written by envsynth report"):
        build_report(corpus_and_run.corpus, [], tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    result = CliRunner().invoke(cli, ["report", str(corpus_and_run.corpus), str(tmp_path / "nope"), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "is not a run folder" in result.output
    result = CliRunner().invoke(cli, ["report", str(corpus_and_run.corpus), "--against", "tau2,tau9", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "unknown benchmark(s) tau9" in result.output and not (tmp_path / "r").exists()
    result = CliRunner().invoke(cli, ["report", str(corpus_and_run.corpus), "--against", "", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0 and 'id="audit"' not in (tmp_path / "r" / "index.html").read_text()


def test_show_prints_the_task_view_in_the_terminal(corpus_and_run: Any) -> None:
    corpus = load_corpus(corpus_and_run.corpus)
    task = next(t for t in corpus.tasks if t.state.distractors)
    args = ["show", task.id, "--corpus", str(corpus_and_run.corpus), "--run", str(corpus_and_run.run)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.replace("│", " ").split())
    assert " ".join(task.instruction.split()[:8]) in flat
    assert "def solve(env):" in result.output and "run oracle, attempt 0: score 1.0" in flat
    for tool in task.visible_tools:
        assert tool in result.output
    first_core = next(iter(task.state.core.values()))[0]
    assert str(next(iter(first_core.values()))) in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 140
    as_json = CliRunner().invoke(cli, [*args, "--json"])
    view = json.loads(as_json.output)
    app = corpus.apps[task.app]
    assert view == json.loads(
        json.dumps(task_view(task, app.blueprint, app.specs, {"oracle": _records(corpus_and_run.run, task.id)}), default=str)
    )
    missing = CliRunner().invoke(cli, ["show", "nope-t00000-s0", "--corpus", str(corpus_and_run.corpus)])
    assert missing.exit_code == 2 and "no task 'nope-t00000-s0'" in missing.output


def _records(run: Path, task_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines() if json.loads(line)["task_id"] == task_id]
