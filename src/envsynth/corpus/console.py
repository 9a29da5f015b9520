"""Terminal views of corpus builds for the CLI: a progress bar over tasks, summary and inspect tables."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from envsynth.corpus.app_tasks import AppProgress
from envsynth.corpus.build import CorpusSummary


class TaskBar:
    """A rich progress bar over the corpus's tasks (T per app), fed by :class:`AppProgress` reports.

    Use as a context manager and pass :meth:`update` as the ``progress`` callback.
    """

    def __init__(self, console: Console, apps: int, tasks_per_app: int, *, transient: bool = False, disable: bool = False) -> None:
        self._target = tasks_per_app
        self._state: dict[str, AppProgress] = {}
        self._progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=transient,
            disable=disable,
        )
        self._task = self._progress.add_task("tasks", total=apps * tasks_per_app)

    def __enter__(self) -> TaskBar:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: Any) -> None:
        if self._state:
            if exc_type is not None:  # a refused or interrupted build: its error line stands alone
                self._progress.live.transient = True
            self._progress.stop()

    def update(self, event: AppProgress) -> None:
        """Take one app's report: the bar counts admitted tasks (an app that is done counts in full).

        The bar appears with the first report, so a build refused before it starts prints no bar.
        """
        if not self._state:
            self._progress.start()
        self._state[event.app] = event
        done = sum(self._target if e.phase == "done" else min(e.admitted, self._target) for e in self._state.values())
        attempts = sum(e.attempts for e in self._state.values())
        admitted = sum(e.admitted for e in self._state.values())
        if event.phase == "build" or not event.target:  # an apps-only build counts apps
            description = f"building {event.app}"
        else:
            description = f"tasks of {event.app} ({admitted} admitted, {attempts - admitted} rejected)"
        self._progress.update(self._task, completed=done, description=description)


def summary_data(summary: CorpusSummary) -> dict[str, Any]:
    """The build summary as plain data (``envsynth build --json``)."""
    m = summary.manifest
    return {
        "path": str(summary.path),
        "composition": m.composition.model_dump(),
        "seed": m.seed,
        "apps": [a.model_dump(include={"name", "admitted", "records", "attempts", "exhausted", "rejections", "error"}) for a in m.apps],
        "tasks": m.records,
        "admission": m.admission.model_dump(),
        "synthesized": summary.synthesized,
        "seconds": round(summary.seconds, 3),
    }


def summary_tables(summary: CorpusSummary) -> list[Table]:
    """One row per app (admitted task indexes, task records, attempts, rate, status), then rejections by reason."""
    m = summary.manifest
    c = m.composition
    t = Table(
        title=f"corpus in {summary.path}: A={c.apps} T={c.tasks_per_app} S={c.states} D={c.distractors} seed={m.seed}",
        caption=f"{m.records} tasks, admission rate {m.admission.rate:.0%}; {summary.synthesized} new in {summary.seconds:.1f}s",
    )
    t.add_column("app", no_wrap=True)
    for col in ("admitted", "tasks", "attempts", "rate", "status"):
        t.add_column(col)
    for a in m.apps:
        status = Text("failed", "red") if a.error else Text("budget exhausted", "yellow") if a.exhausted else Text("ok", "green")
        rate = f"{a.admitted / a.attempts:.0%}" if a.attempts else "-"
        t.add_row(a.name, str(a.admitted), str(a.records), str(a.attempts), rate, status)
    return [t, _rejections(m.admission.rejections)]


def _rejections(reasons: dict[str, int]) -> Table:
    t = Table(title="rejections")
    t.add_column("reason", no_wrap=True)
    t.add_column("attempts")
    for reason, n in reasons.items():
        t.add_row(reason, str(n))
    return t


def stats_tables(stats: dict[str, Any]) -> list[Table]:
    """Tables of :func:`envsynth.corpus.corpus_stats`: per app, distributions, rejections by reason."""
    apps = Table(title=f"corpus tasks ({stats['tasks']}; admission rate {stats['admission']['rate']:.0%})")
    apps.add_column("app", no_wrap=True)
    for col in ("tasks", "admitted", "attempts", "graph nodes", "graph edges"):
        apps.add_column(col)
    for a in stats["apps"]:
        g = a["graph"] or {}
        apps.add_row(a["name"], str(a["tasks"]), str(a["admitted"]), str(a["attempts"]), str(g.get("nodes", "-")), str(g.get("edges", "-")))
    dist = Table(title="task distributions")
    dist.add_column("statistic")
    dist.add_column("values")
    dist.add_row("tasks by kind", _pairs(stats["tasks_by_kind"]))
    dist.add_row("chain length", _pairs(stats["chain_length"]))
    dist.add_row("distractor rows by depth", _pairs(stats["distractor_rows"]["total"]))
    d = stats["difficulty"]
    dist.add_row("difficulty tiers", f"{_pairs(d['tiers'])} (mean score {d['mean']})")
    dist.add_row("constructs", _pairs(d["constructs"]))
    rejections, baselines = _rejections(stats["admission"]["rejections"]), _baselines(stats["baselines"])
    return [apps, dist, rejections, baselines, *_quality_tables(stats["quality"]), _coherence_table(stats["coherence"])]


def _baselines(b: dict[str, Any]) -> Table:
    """Guessing baselines: the share of tasks each scores 1.0 on (admission refuses those, so 0 is the mark)."""
    where = f"{b['tasks']} tasks{', sampled' if b['sampled'] else ''}"
    t = Table(title=f"guessing baselines ({where}; each should solve none)")
    t.add_column("baseline", no_wrap=True)
    t.add_column("solved")
    t.add_column("share")
    for name, r in b["baselines"].items():
        label = f"{name} ({b['most_common_answer']!r})" if name == "most common answer" else name
        t.add_row(label, str(r["solved"]), f"{r['rate']:.1%}")
    return t


def _quality_tables(q: dict[str, Any]) -> list[Table]:
    """The task quality linter's report: defect rates, connectedness and roles; tool coverage per app."""
    rates = Table(title=f"task quality ({q['tasks']} tasks; see docs/tasks.md, 'Quality')")
    rates.add_column("measure", no_wrap=True)
    rates.add_column("share")
    rates.add_column("tasks")
    for name, share in q["rates"].items():
        rates.add_row(name.replace("_", " "), f"{share:.1%}", str(q["counts"][name]))
    rates.add_row("connected multi-step chains", f"{q['connected']:.1%}", str(q["multi_step"]))
    rates.add_row("user roles", _pairs({k: f"{v:.0%}" for k, v in q["roles"].items()}), "")
    cover = Table(title="tool coverage (share of tools some task's oracle calls)")
    for col in ("app", "reads", "writes", "never called"):
        cover.add_column(col)
    for app, c in q["coverage"].items():
        cover.add_row(app, f"{c['reads']:.0%}", f"{c['writes']:.0%}", ", ".join(c["uncovered"]) or "-")
    return [rates, cover]


def _coherence_table(c: dict[str, Any]) -> Table:
    """The state linter's report: per class, the share and count of tasks whose initial state has it, and examples."""
    t = Table(title=f"state coherence ({c['tasks']} tasks; see docs/tasks.md, 'State coherence')")
    for col in ("defect", "share", "tasks", "examples"):
        t.add_column(col, no_wrap=col == "defect")
    for name, share in c["rates"].items():
        t.add_row(name.replace("_", " "), f"{share:.1%}", str(c["counts"][name]), ", ".join(c["examples"].get(name, [])) or "-")
    t.add_row("any of these", f"{c['any_rate']:.1%}", str(c["any"]), "")
    return t


def _pairs(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items()) or "-"
