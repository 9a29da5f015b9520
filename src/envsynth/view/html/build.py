"""``envsynth report``: a static HTML report of a corpus and its runs (open ``index.html``, no server needed)."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from envsynth.corpus.load import Corpus, load_corpus
from envsynth.errors import EnvsynthError
from envsynth.view.html import charts
from envsynth.view.html.data import app_data, corpus_data, run_data
from envsynth.view.taskview import LEVELS, task_view

MARKER = "report.json"
"""The file that marks a folder as written by ``envsynth report`` (a rebuild may replace it)."""
ASSETS = ("cytoscape.min.js", "graph.js", "report.css")

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``, called as pages are written."""


class ReportError(EnvsynthError, RuntimeError):
    """The report cannot be written (an output folder envsynth did not write, a run folder that is not one)."""


@dataclass
class ReportResult:
    """What :func:`build_report` wrote: the index page, page counts and the time it took."""

    index: Path
    apps: int
    runs: int
    tasks: int
    seconds: float


def _env() -> Any:
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("envsynth.view.html", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = lambda v: "n/a" if v is None else f"{100 * float(v):.1f}%"
    env.filters["js"] = lambda v: json.dumps(v, ensure_ascii=False, default=str, indent=2)
    env.filters["tojson_script"] = lambda v: json.dumps(v, default=str).replace("</", "<\\/")
    return env


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ReportError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ReportError(f"{out} is not empty and was not written by envsynth report: choose another output folder")
    for sub in ("apps", "runs", "tasks", "assets"):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
        (out / sub).mkdir(parents=True)
    src = resources.files("envsynth.view.html") / "assets"
    for name in ASSETS:
        (out / "assets" / name).write_bytes((src / name).read_bytes())


def _corpus_charts(c: dict[str, Any]) -> dict[str, str]:
    q = c["quality"]
    cov = q["coverage"]
    apps = [a for a in cov]
    return {
        "chain": charts.bar("Tasks by chain length (oracle calls)", c["chain_length"]),
        "kind": charts.bar("Tasks by kind", c["tasks_by_kind"]),
        "distractors": charts.bar("Distractor rows per task, by depth level", c["distractor_rows"]["mean_per_task"]),
        "rejections": charts.bar(
            "Rejected candidates by reason", c["admission"]["rejections"], horizontal=True, empty="no rejected candidate"
        ),
        "quality": charts.bar("Task quality linter: share of tasks with each defect", q["rates"], horizontal=True, percent=True),
        "coherence": charts.bar(
            "State linter: share of tasks whose initial state has each defect", c["coherence"]["rates"], horizontal=True, percent=True
        ),
        "coverage": charts.grouped(
            "Tool coverage: share of tools some oracle calls",
            apps,
            {"reads": [cov[a]["reads"] for a in apps], "writes": [cov[a]["writes"] for a in apps]},
            percent=True,
        ),
    }


def _run_charts(r: dict[str, Any]) -> dict[str, str]:
    s = r["summary"]
    by_app, by_chain = r["by_app"], r["by_chain"]
    k = s["attempts_per_task"]
    series = lambda groups: {  # noqa: E731
        name: [g.get(name, 0.0) for g in groups.values()] for name in dict.fromkeys(["pass@1", f"pass@{k}"]) if k
    }
    return {
        "by_app": charts.grouped("pass@1 and pass@k by app", list(by_app), series(by_app) or {"pass@1": []}, percent=True),
        "by_chain": charts.grouped("pass@1 and pass@k by chain length", list(by_chain), series(by_chain) or {"pass@1": []}, percent=True),
        "outcomes": charts.bar("Tool calls by outcome class", s["tool_calls"]),
        "failures": charts.bar(
            "Failed episodes: what differed from the ground truth", r["failure_kinds"], horizontal=True, empty="no failed episode"
        ),
        "tokens": charts.bar("Tokens by app", r["tokens_by_app"]),
    }


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _task_pages(env: Any, corpus: Corpus, out: Path, runs: list[dict[str, Any]], progress: Progress | None) -> dict[str, dict[str, Any]]:
    """Write one page per task; return task id -> its row of the index (passes per run)."""
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in runs:
        for rec in r["records"]:
            by_task.setdefault(rec["task_id"], {}).setdefault(r["label"], []).append(rec)
    template = env.get_template("task.html.j2")
    index: dict[str, dict[str, Any]] = {}
    total = len(corpus.tasks)
    for i, task in enumerate(corpus.tasks):
        app = corpus.apps[task.app]
        view = task_view(task, app.blueprint, app.specs, by_task.get(task.id, {}))
        _write(out / "tasks" / f"{task.id}.html", template.render(t=view, levels=LEVELS, root="../"))
        index[task.id] = {
            "id": task.id,
            "app": task.app,
            "kind": task.kind,
            "chain": view["chain_length"],
            "instruction": task.instruction,
            "runs": {label: [a["passed"] for a in attempts] for label, attempts in view["runs"].items()},
        }
        if progress and (i % 25 == 0 or i + 1 == total):
            progress("tasks", i + 1, total)
    return index


def build_report(
    corpus_path: str | Path,
    run_dirs: Sequence[str | Path] = (),
    out: str | Path = "report",
    progress: Progress | None = None,
    against: Sequence[str] = (),
) -> ReportResult:
    """Write the HTML report of a corpus (and of runs on it) into ``out``.

    Pages: ``index.html`` (composition, admission, chain lengths, distractors, quality rates,
    coverage, apps, runs, every task), ``apps/<app>.html`` (tables, tools by archetype, test
    verdicts, the dependency graph, admission), ``runs/<run>.html`` (pass@1/pass@k by app and
    chain length, tool-call outcomes, failure kinds, tokens) and ``tasks/<id>.html`` (request,
    scenario, visible tools, s0 rows by distractor level, oracle program, trajectories). With
    ``against`` (benchmark names, see :mod:`envsynth.audit`) the index also shows the OOD audit.

    Raises:
        envsynth.corpus.CorpusError: the corpus cannot be read.
        ReportError: ``out`` holds files envsynth did not write, or a run folder is not one.
    """
    start = time.perf_counter()
    corpus = load_corpus(corpus_path)
    target = Path(out)
    runs = []
    for d in run_dirs:
        try:
            runs.append(run_data(Path(d), corpus))
        except FileNotFoundError as exc:
            raise ReportError(str(exc)) from None
    if len({r["label"] for r in runs}) < len(runs):
        raise ReportError("two run folders have the same name: give runs folders of different names")
    audit = _audit(corpus, against)
    _prepare(target)
    env = _env()
    apps = []
    for i, name in enumerate(corpus.apps):
        a = app_data(corpus, name)
        a["charts"] = {
            "kinds": charts.bar("Tools by archetype", a["by_kind"]),
            "tests": charts.bar("Test cases by observed outcome", _verdicts(a["tests"])),
        }
        _write(target / "apps" / f"{name}.html", env.get_template("app.html.j2").render(a=a, root="../"))
        apps.append(a)
        if progress:
            progress("apps", i + 1, len(corpus.apps))
    tasks = _task_pages(env, corpus, target, runs, progress)
    for r in runs:
        r["charts"] = _run_charts(r)
        _write(target / "runs" / f"{r['label']}.html", env.get_template("run.html.j2").render(r=r, tasks=tasks, root="../"))
    c = corpus_data(corpus)
    c["charts"] = _corpus_charts(c)
    c["audit"] = audit
    index = target / "index.html"
    _write(index, env.get_template("index.html.j2").render(c=c, apps=apps, runs=runs, tasks=list(tasks.values()), root=""))
    seconds = time.perf_counter() - start
    meta = {"corpus": str(corpus.path), "runs": [r["path"] for r in runs], "apps": len(apps), "tasks": len(tasks)}
    _write(target / MARKER, json.dumps(meta, indent=2) + "\n")
    return ReportResult(index=index, apps=len(apps), runs=len(runs), tasks=len(tasks), seconds=seconds)


def _audit(corpus: Corpus, against: Sequence[str]) -> dict[str, Any] | None:
    """The OOD audit of the corpus against ``against`` (None when empty)."""
    if not against:
        return None
    from envsynth.audit import AuditError, audit_apps, corpus_apps

    try:
        result = audit_apps(corpus_apps(corpus), list(against))
    except AuditError as exc:
        raise ReportError(str(exc)) from None
    for a in result["apps"]:
        a["hold_out"] = [b for b in result["benchmarks"] if a["against"][b]["overlap"]]
    return result


def _verdicts(summary: dict[str, Any]) -> dict[str, int]:
    keys = ("success", "anticipated_rejection", "unexpected_failure", "failed", "not_constructed")
    return {k: int(summary.get(k, 0)) for k in keys}
