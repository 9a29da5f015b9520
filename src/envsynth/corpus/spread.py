"""A corpus build spread over an :class:`~envsynth.scale.executor.Executor`: app builds, then ranges of task indexes.

Each app is built (or reused) by one submitted function; its task indexes are then
synthesized in small ranges by any worker, and the results come back here. This process
alone writes the task files, committing each app's task indexes in order (0, 1, 2...) and
stopping at the same index a local build stops at (T admitted, or the attempt budget), so
the corpus is byte-identical to a local build. Indexes synthesized past that point are
dropped. Workers write only the app folders: they must see the corpus folder at the same
path (one machine, or a shared filesystem).
"""

from __future__ import annotations

import hashlib
import socket
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from typing import Any

from envsynth import __version__
from envsynth.corpus.app_tasks import AppJob, AppOutcome, AppProgress, ProgressFn, _check_state, _ensure_app, commit, synthesize_index
from envsynth.corpus.errors import CorpusError
from envsynth.corpus.states import StateWriter
from envsynth.corpus.tasklog import TaskLog
from envsynth.runtime.app import App
from envsynth.scale.executor import Executor
from envsynth.tasks.model import Rejection, Task

CHUNK = 4
"""Task indexes per submitted range."""

Result = list[Task] | Rejection

_APPS: dict[tuple[str, str], Any] = {}
"""Apps and tool graphs loaded in this worker process, by folder and content hash."""


def prepare_app(job: AppJob, version: str) -> tuple[str, str | None]:
    """Build or reuse ``job``'s app folder (runs on a worker whose envsynth must be ``version``).

    Returns:
        ``("ok", None)``, ``("failed", message)`` when its procedural tests fail, or
        ``("refused", message)`` when the folder cannot be (re)built or is not visible here,
        or this worker runs another envsynth version.
    """
    from envsynth.compiler.build import BuildError

    if __version__ != version:
        return "refused", f"worker {socket.gethostname()} runs envsynth {__version__}, this build {version}: install the same version"
    if not job.out.is_dir():
        return "refused", f"{job.out} is not visible on worker {socket.gethostname()}: the corpus folder must be on a shared filesystem"
    try:
        _ensure_app(job)
    except BuildError as exc:
        return "failed", str(exc)
    except CorpusError as exc:
        return "refused", str(exc)
    return "ok", None


def _load_app(job: AppJob) -> Any:
    """``(app, graph)`` of the job's built app, loaded once per worker process and content."""
    from envsynth.graph import read_graph
    from envsynth.runtime.app import App

    digest = hashlib.sha256(b"".join((job.app_dir / f).read_bytes() for f in ("app.json", "graph.json"))).hexdigest()
    key = (str(job.app_dir), digest)
    if key not in _APPS:
        if len(_APPS) >= 16:
            _APPS.clear()
        _APPS[key] = (App.load(job.app_dir), read_graph(job.app_dir))
    return _APPS[key]


def synthesize_range(job: AppJob, start: int, stop: int) -> list[Result]:
    """Synthesize task indexes ``start`` to ``stop - 1`` of ``job``'s app (runs on a worker).

    An index whose synthesis raises is a ``synthesis_error`` rejection, as in a local build.
    """
    app, graph = _load_app(job)
    return [synthesize_index(job, app, graph, t) for t in range(start, stop)]


@dataclass
class _AppRun:
    """One app's task indexes: committed ones in its log, the rest submitted or waiting."""

    job: AppJob
    log: TaskLog
    states: StateWriter
    before: int
    next_t: int
    results: dict[int, Result] = field(default_factory=dict)

    def close(self) -> None:
        self.log.close()
        self.states.close()

    @property
    def finished(self) -> bool:
        return self.log.admitted >= self.job.tasks_per_app or len(self.log.attempts) >= self.job.budget

    def wanted(self) -> int:
        """How many more indexes to submit: the admissions still missing less those already out, within the budget."""
        out = self.next_t - len(self.log.attempts)
        return max(0, min(self.job.tasks_per_app - self.log.admitted - out, self.job.budget - self.next_t))


class _Spread:
    """The driver of a spread build: submits, gathers, commits in order, reports progress."""

    def __init__(self, jobs: list[AppJob], executor: Executor, progress: ProgressFn | None) -> None:
        self.executor = executor
        self.report = progress or (lambda _: None)
        self.outcomes: dict[int, AppOutcome] = {}
        self.runs: list[_AppRun] = []
        self.pending: dict[Future[Any], tuple[str, Any]] = {}
        for job in jobs:
            self.report(AppProgress(job.name, "build", target=job.tasks_per_app))
            self.pending[executor.submit(prepare_app, job, __version__)] = ("app", job)

    def run(self) -> None:
        while self.pending:
            done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
            for f in done:
                kind, what = self.pending.pop(f)
                if kind == "app":
                    self._app_ready(what, f.result())
                else:
                    self._range_done(what[0], what[1], f.result())
            self._submit()

    def _app_ready(self, job: AppJob, ready: tuple[str, str | None]) -> None:
        status, message = ready
        if status == "refused":
            raise CorpusError(str(message))
        if status == "failed":
            self.report(AppProgress(job.name, "done", target=job.tasks_per_app))
            self.outcomes[job.index] = AppOutcome(job.name, job.index, error=message)
            return
        log = TaskLog.open(job.tasks_dir, job.shard_size)
        states = StateWriter.open(job.tasks_dir, App.load(job.app_dir), job.shard_size)  # the same states as a local build
        run = _AppRun(job, log, states, log.records, len(log.attempts))
        self.runs.append(run)
        self.report(AppProgress(job.name, "tasks", log.admitted, len(log.attempts), job.tasks_per_app))
        self._finish_if_done(run)

    def _range_done(self, run: _AppRun, start: int, results: list[Result]) -> None:
        for offset, result in enumerate(results):
            run.results[start + offset] = result
        job, log = run.job, run.log
        while not run.finished and len(log.attempts) in run.results:
            t = len(log.attempts)
            reason = commit(log, run.states, t, run.results.pop(t), job)
            self.report(AppProgress(job.name, "tasks", log.admitted, len(log.attempts), job.tasks_per_app, reason))
        self._finish_if_done(run)

    def _finish_if_done(self, run: _AppRun) -> None:
        if not run.finished or run.job.index in self.outcomes:
            return
        job, log = run.job, run.log
        run.close()
        run.results.clear()
        self.report(AppProgress(job.name, "done", log.admitted, len(log.attempts), job.tasks_per_app))
        self.outcomes[job.index] = AppOutcome(job.name, job.index, list(log.attempts), log.records, synthesized=log.records - run.before)

    def _submit(self) -> None:
        """Keep about two ranges per slot in flight, one range per app per round."""
        limit = 2 * self.executor.slots
        while len(self.pending) < limit:
            open_runs = [r for r in self.runs if not r.finished and r.wanted() > 0]
            if not open_runs:
                return
            for run in open_runs:
                if len(self.pending) >= limit:
                    return
                stop = run.next_t + min(CHUNK, run.wanted())
                self.pending[self.executor.submit(synthesize_range, run.job, run.next_t, stop)] = ("range", (run, run.next_t))
                run.next_t = stop

    def close(self) -> None:
        """Cancel what has not started and close every open task log (what was committed stays)."""
        for f in self.pending:
            f.cancel()
        for run in self.runs:
            run.close()


def spread_jobs(jobs: list[AppJob], executor: Executor, progress: ProgressFn | None = None) -> list[AppOutcome]:
    """Run app jobs over ``executor``; outcomes in job order, files identical to :func:`envsynth.corpus.pool.run_jobs`.

    Raises:
        ValueError: a job has a task stage (it runs in this process: use the local build).
        CorpusError: an app's tasks were built with other options, or an app folder is in
            the way or not visible on a worker.
    """
    if any(j.task_stage is not None or j.app_stage is not None for j in jobs):
        raise ValueError("a builder's app or task stage (the LLM builder) runs in this process: build with the local executor")
    jobs = [replace(job, out=job.out.resolve()) for job in jobs]  # the same folder for workers in another directory
    for job in jobs:
        _check_state(job)
    spread = _Spread(jobs, executor, progress)
    try:
        spread.run()
    finally:
        spread.close()
    return [spread.outcomes[j.index] for j in jobs]
