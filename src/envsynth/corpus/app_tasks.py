"""One app's share of a corpus: build (or reuse) the app, then attempt task indexes until T are admitted.

This is the unit of work of the process pool: it depends only on its :class:`AppJob`, so
apps run in any order, in any process, and give the same files.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from envsynth import __version__
from envsynth.blueprint.models import Blueprint
from envsynth.corpus.difficulty import STEERED_BUDGET, full_tier
from envsynth.corpus.errors import CorpusError
from envsynth.corpus.layout import APPS_DIR, SHARD_SIZE, STATE_FILE, TASKS_DIR, attempt_budget
from envsynth.corpus.states import StateWriter
from envsynth.corpus.tasklog import Attempt, TaskLog
from envsynth.files import clean_temps, write_atomic
from envsynth.runtime.app import App
from envsynth.tasks.model import Coordinates, Rejection, RejectionReason, Task

if TYPE_CHECKING:
    from envsynth.graph.model import ToolGraph

SYNTHESIS_ERROR: RejectionReason = "synthesis_error"
"""The rejection reason of a task index whose synthesis raised an exception (a bug in synthesis)."""

Phase = Literal["build", "tasks", "done"]


@dataclass(frozen=True)
class AppJob:
    """Everything one app's tasks depend on (picklable: it crosses into pool workers)."""

    blueprint: Blueprint
    index: int
    out: Path
    tasks_per_app: int
    states: int
    distractors: int
    seed: int
    shard_size: int = SHARD_SIZE
    task_stage: Any = None
    """``(app, graph, tasks) -> tasks``, applied to the S states of every admitted task index
    before they are written (the LLM builder's task writer and gating); its ``name``
    attribute is recorded with the tasks. None: tasks are written as synthesized."""
    force: bool = False
    """Rebuild the app in a folder that also holds files envsynth did not write (they are kept)."""
    app_stage: Any = None
    """The builder's :class:`~envsynth.compiler.build.AppStage` (None: the procedural builder's)."""
    keep_failed: bool = False
    """Keep the folder of an app whose tests fail as ``apps/<name>.failed/``, for inspection."""
    difficulty: dict[str, float] | None = None
    """The share of each difficulty tier among the admitted task indexes (:mod:`envsynth.corpus.difficulty`); None: as synthesized."""

    @property
    def name(self) -> str:
        return self.blueprint.name

    @property
    def budget(self) -> int:
        return attempt_budget(self.tasks_per_app) * (STEERED_BUDGET if self.difficulty else 1)

    @property
    def app_dir(self) -> Path:
        return self.out / APPS_DIR / self.name

    @property
    def tasks_dir(self) -> Path:
        return self.out / TASKS_DIR / self.name

    def blueprint_hash(self) -> str:
        """The hash an app built from this blueprint carries in its provenance."""
        from envsynth.compiler.compile import blueprint_data, canonical_json, sha256

        return sha256(canonical_json(blueprint_data(self.blueprint)))


@dataclass(frozen=True)
class AppProgress:
    """A progress report of one app: sent when its build starts and after every attempt.

    Attributes:
        app: the app's name.
        phase: ``build`` (compiling and testing the app), ``tasks`` or ``done``.
        admitted: task indexes admitted so far (each gives ``states`` tasks).
        attempts: task indexes attempted so far.
        target: the tasks per app asked for.
        rejected: the reason of the last attempt, when it was rejected.
    """

    app: str
    phase: Phase
    admitted: int = 0
    attempts: int = 0
    target: int = 0
    rejected: str | None = None


ProgressFn = Callable[[AppProgress], None]


class TaskStage(Protocol):
    """What a builder does to the S states of each admitted task index before they are written.

    The LLM builder's task writer and gating (:class:`envsynth.llmbuild.taskstage.TaskStage`);
    its ``name`` is recorded in the app's ``tasks/<app>/state.json``.
    """

    name: str

    def __call__(self, app: App, graph: ToolGraph, tasks: list[Task]) -> list[Task]:
        """The tasks to write instead of ``tasks``."""
        ...


@dataclass
class AppOutcome:
    """What one app's job produced: its attempts, or the error that stopped its build."""

    name: str
    index: int
    attempts: list[Attempt] = field(default_factory=list)
    records: int = 0
    error: str | None = None
    synthesized: int = 0


def _ignore(_: AppProgress) -> None:
    return None


def run_app_job(job: AppJob, progress: ProgressFn | None = None) -> AppOutcome:
    """Build or reuse ``job``'s app, then attempt task indexes where the last run stopped.

    A task index whose synthesis raises an exception is recorded as a rejection with
    reason ``synthesis_error`` (type, message and place in the detail) and the job moves on.

    Raises:
        CorpusError: the app's task folder was built with another composition or blueprint.
    """
    from envsynth.compiler.build import BuildError
    from envsynth.graph import read_graph

    report = progress or _ignore
    if job.tasks_per_app:
        _check_state(job)
    report(AppProgress(job.name, "build", target=job.tasks_per_app))
    try:
        app = _ensure_app(job)
    except BuildError as exc:
        report(AppProgress(job.name, "done", target=job.tasks_per_app))
        return AppOutcome(job.name, job.index, error=str(exc))
    if not job.tasks_per_app:  # an apps-only build
        report(AppProgress(job.name, "done"))
        return AppOutcome(job.name, job.index)
    graph = read_graph(job.app_dir)
    with TaskLog.open(job.tasks_dir, job.shard_size) as log, StateWriter.open(job.tasks_dir, app, job.shard_size) as states:
        before = log.records
        report(AppProgress(job.name, "tasks", log.admitted, len(log.attempts), job.tasks_per_app))
        while log.admitted < job.tasks_per_app and len(log.attempts) < job.budget:
            t = len(log.attempts)
            result = synthesize_index(job, app, graph, t)
            if isinstance(result, list) and job.task_stage is not None:
                result = job.task_stage(app, graph, result)  # its failures (a spent token budget) stop the job
            reason = commit(log, states, t, result, job)
            report(AppProgress(job.name, "tasks", log.admitted, len(log.attempts), job.tasks_per_app, reason))
        report(AppProgress(job.name, "done", log.admitted, len(log.attempts), job.tasks_per_app))
        return AppOutcome(job.name, job.index, list(log.attempts), log.records, synthesized=log.records - before)


def synthesize_index(job: AppJob, app: App, graph: ToolGraph, t: int) -> list[Task] | Rejection:
    """Task index ``t`` of ``job``'s app: its admitted tasks, or why it was rejected.

    A synthesis that raises is recorded as a ``synthesis_error`` rejection, never a crash of the batch.
    """
    from envsynth.tasks import synth  # looked up at call time, so it can be patched in tests

    try:
        return synth.synthesize(app, graph, app_index=job.index, task_index=t, states=job.states, depth=job.distractors, seed=job.seed)
    except MemoryError:
        raise
    except Exception as exc:  # a synthesis bug is recorded as data
        return _error_rejection(job, t, exc)


def commit(log: TaskLog, states: StateWriter, t: int, result: list[Task] | Rejection, job: AppJob | None = None) -> str | None:
    """Write task index ``t``'s outcome: its tasks (sealed) and their states, or its rejection; the reason, None when admitted.

    With ``job``'s difficulty mix, admitted tasks whose tier has filled its quota are recorded as a ``difficulty_quota``
    rejection instead.
    """
    if isinstance(result, list) and result and job is not None and job.difficulty:
        full = full_tier(job.difficulty, job.tasks_per_app, result[0].tier, log.tiers())
        if full is not None:
            result = Rejection(app=job.name, coordinates=result[0].coordinates, reason="difficulty_quota", detail=full)
    if isinstance(result, list):
        sealed = [task if task.hash else task.sealed() for task in result]
        states.add(sealed)
        log.admit(t, sealed)
        return None
    log.reject(t, result)
    return result.reason


def _error_rejection(job: AppJob, task_index: int, exc: Exception) -> Rejection:
    """A rejection recording an exception raised by synthesis: type, message and where it was raised."""
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    at = f" (at {Path(where.filename).name}:{where.lineno} in {where.name})" if where else ""
    message = re.sub(r"0x[0-9a-fA-F]{6,}", "0x...", str(exc))[:300]  # no memory addresses: the same bytes on every run
    coords = Coordinates(app=job.index, task=task_index, state=0, distractors=job.distractors)
    return Rejection(app=job.name, coordinates=coords, reason=SYNTHESIS_ERROR, detail=f"{type(exc).__name__}: {message}{at}")


def _ensure_app(job: AppJob) -> App:
    """The job's app folder: reused when it was built from the same blueprint, seed and version.

    Temporary files a killed build left in it (or beside it) are removed first.

    Raises:
        CorpusError: the app must be rebuilt and its folder holds files envsynth did not write.
    """
    from envsynth.compiler.build import APP_FILES, FolderInUseError, build_app, edited

    clean_temps(job.out / APPS_DIR, [job.name])
    clean_temps(job.app_dir, APP_FILES)
    manifest = job.app_dir / "app.json"
    if manifest.is_file() and all((job.app_dir / f).is_file() for f in ("tests.json", "graph.json")):
        prov = json.loads(manifest.read_text(encoding="utf-8")).get("provenance", {})
        wanted = {"envsynth_version": __version__, "seed": job.seed, "blueprint_hash": job.blueprint_hash()}
        if all(prov.get(k) == v for k, v in wanted.items()) and not edited(job.app_dir):
            return App.load(job.app_dir)
    try:
        build_app(job.blueprint, job.out / APPS_DIR, job.seed, force=job.force, keep_failed=job.keep_failed, stage=job.app_stage)
    except FolderInUseError as exc:
        raise CorpusError(str(exc)) from None
    return App.load(job.app_dir)


def _check_state(job: AppJob) -> None:
    """Record what the app's tasks are built from; refuse to continue tasks built from anything else.

    Runs before the app is (re)built, so a refused build leaves the corpus as it was.
    """
    state: dict[str, Any] = {
        "app": job.name,
        "app_index": job.index,
        "blueprint_hash": job.blueprint_hash(),
        "envsynth_version": __version__,
        "seed": job.seed,
        "tasks_per_app": job.tasks_per_app,
        "states": job.states,
        "distractors": job.distractors,
        "shard_size": job.shard_size,
    }
    if job.difficulty:
        state["difficulty"] = job.difficulty
    if job.task_stage is not None:
        state["task_stage"] = str(getattr(job.task_stage, "name", type(job.task_stage).__name__))
    path = job.tasks_dir / STATE_FILE
    clean_temps(job.tasks_dir, [STATE_FILE])
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
        diff = sorted(k for k in state if old.get(k) != state[k])
        if diff:
            was = ", ".join(f"{k}={old.get(k)!r}" for k in diff)
            raise CorpusError(f"{path}: these tasks were built with {was}; build into a new folder or repeat the same options")
    write_atomic(path, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode())
