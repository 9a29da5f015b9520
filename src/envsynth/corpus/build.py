"""Build a corpus: A apps x T tasks x S states at distractor depth D, resumable, over a process pool."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.blueprint.models import Blueprint
from envsynth.corpus.app_tasks import AppJob, ProgressFn, TaskStage
from envsynth.corpus.difficulty import parse_mix
from envsynth.corpus.errors import CorpusError
from envsynth.corpus.index import write_index
from envsynth.corpus.layout import INDEX_FILE, MANIFEST, SHARD_SIZE, TASKS_DIR
from envsynth.corpus.manifest import Composition, CorpusManifest, corpus_manifest
from envsynth.corpus.pool import run_jobs
from envsynth.corpus.spread import spread_jobs
from envsynth.files import clean_temps, write_atomic

if TYPE_CHECKING:
    from envsynth.compiler.build import AppStage
    from envsynth.scale.executor import Executor

MAX_DEPTH = 4


@dataclass(frozen=True)
class CorpusSummary:
    """What :func:`build_corpus` did.

    Attributes:
        path: the corpus folder.
        manifest: the manifest it wrote (``corpus.json``).
        synthesized: task records written by this run (0 when the corpus was already complete).
        seconds: wall time of this run.
    """

    path: Path
    manifest: CorpusManifest
    synthesized: int
    seconds: float

    @property
    def records(self) -> int:
        """Task records in the corpus."""
        return self.manifest.records

    @property
    def failed(self) -> list[str]:
        """Apps whose procedural tests failed (they have no tasks)."""
        return self.manifest.admission.failed_apps


def build_corpus(
    out: str | Path,
    *,
    blueprints: Sequence[Blueprint],
    apps: int | None = None,
    tasks_per_app: int,
    states: int = 1,
    distractors: int = 0,
    seed: int = 0,
    workers: int = 1,
    progress: ProgressFn | None = None,
    shard_size: int = SHARD_SIZE,
    task_stage: TaskStage | None = None,
    app_stage: AppStage | None = None,
    force: bool = False,
    keep_failed: bool = False,
    executor: Executor | None = None,
    difficulty: str | Mapping[str, float] | None = None,
) -> CorpusSummary:
    """Build (or resume) the corpus in ``out``: apps, sharded tasks and ``corpus.json``.

    App ``a`` attempts task indexes 0, 1, 2... with ``synthesize(..., app_index=a,
    task_index=t)`` until ``tasks_per_app`` are admitted or its attempt budget
    (``4 T + 20``) runs out. A rerun continues where the last one stopped and gives the
    same bytes as an uninterrupted build; a rerun of a finished build changes nothing.

    Args:
        out: the corpus folder (created if missing).
        blueprints: the domains, in app-index order.
        apps: build the first ``apps`` blueprints (default: all).
        tasks_per_app: T, admitted task indexes per app (0: an apps-only build, the same
            layout without ``tasks/``).
        states: S, initial states (task records) per task index.
        distractors: D, the distractor depth (0 to 4).
        seed: the seed of apps and tasks.
        workers: processes, one app at a time each (0: one per CPU).
        progress: called with an :class:`AppProgress` when an app starts and after every attempt.
        shard_size: task records per shard file.
        task_stage: ``(app, graph, tasks) -> tasks`` applied to each admitted task index
            before it is written (see :class:`AppJob`); it runs in this process, so the
            build then uses one worker.
        app_stage: the builder's stage before each app folder is sealed (see
            :class:`~envsynth.compiler.build.AppStage`); like ``task_stage``, it runs in this
            process.
        force: rebuild an app whose folder also holds files envsynth did not write (they
            are kept; see :func:`envsynth.compiler.build.build_app`). Without it such an app
            stops the build with a :class:`CorpusError`; a folder envsynth did not write at
            all is never replaced.
        keep_failed: keep the folder of an app whose tests fail as ``apps/<name>.failed/``.
        executor: spread app builds and task indexes over it (a Ray cluster: see
            :mod:`envsynth.corpus.spread`) instead of ``workers`` local processes; the corpus is the same.
        difficulty: the mix of difficulty tiers to keep: ``easy``, ``medium``, ``hard``, ``mix`` (a third each),
            shares (``"easy=1,hard=2"`` or ``{"easy": 1, "hard": 2}``), or None to keep tasks as synthesized
            (:mod:`envsynth.corpus.difficulty`).

    Raises:
        ValueError: a composition out of range, or two blueprints with one name.
        CorpusError: ``out`` holds a corpus (or tasks) built with other options, or an app
            folder in the way holds files envsynth did not write.
    """
    started = time.perf_counter()
    root = Path(out)
    given = list(blueprints)
    if apps is not None and apps > len(given):
        from envsynth import catalog

        raise ValueError(
            f"apps is {apps} but there are only {len(given)} blueprints to build "
            f"({', '.join(b.name for b in given[:12])}{', ...' if len(given) > 12 else ''}): "
            f"ask for at most {len(given)}, or add blueprints (your own, or ones the LLM builder writes); "
            f"the shipped catalogue holds {len(catalog.names())} domains"
        )
    chosen = given[: apps if apps is not None else None]
    _check_args(chosen, apps, tasks_per_app, states, distractors, shard_size, workers)
    mix = parse_mix(difficulty) if difficulty is None or isinstance(difficulty, str) else parse_mix(_shares_text(difficulty))
    composition = Composition(apps=len(chosen), tasks_per_app=tasks_per_app, states=states, distractors=distractors, difficulty=mix)
    _check_existing(root, composition, seed, shard_size)
    clean_temps(root, [MANIFEST])
    clean_temps(root / TASKS_DIR, [INDEX_FILE])
    jobs = [
        AppJob(bp, i, root, tasks_per_app, states, distractors, seed, shard_size, task_stage, force, app_stage, keep_failed, mix)
        for i, bp in enumerate(chosen)
    ]
    in_process = task_stage is not None or app_stage is not None
    n = 1 if in_process else (os.cpu_count() or 1) if workers == 0 else workers
    outcomes = run_jobs(jobs, n, progress) if executor is None else spread_jobs(jobs, executor, progress)
    manifest = corpus_manifest(jobs, outcomes, composition, seed, shard_size)
    write_index(root, manifest)  # before the manifest, which commits the build
    write_atomic(root / MANIFEST, (json.dumps(manifest.model_dump(mode="json"), indent=2) + "\n").encode())
    return CorpusSummary(root, manifest, sum(o.synthesized for o in outcomes), time.perf_counter() - started)


def _shares_text(shares: Mapping[str, float]) -> str:
    """Shares given as a mapping, in ``--difficulty``'s form (checked by :func:`parse_mix`)."""
    return ",".join(f"{tier}={share}" for tier, share in shares.items())


def _check_args(bps: list[Blueprint], apps: int | None, t: int, s: int, d: int, shard_size: int, workers: int) -> None:
    if apps is not None and apps < 1:
        raise ValueError(f"apps must be at least 1, got {apps}")
    if workers < 0:
        raise ValueError(f"workers must be 0 (one per CPU) or more, got {workers}")
    if not bps:
        raise ValueError("no blueprints to build")
    if t < 0 or s < 1 or shard_size < 1:
        raise ValueError(f"tasks_per_app must be 0 (apps only) or more, states and shard_size at least 1, got {t}, {s}, {shard_size}")
    if not 0 <= d <= MAX_DEPTH:
        raise ValueError(f"distractors is a depth from 0 to {MAX_DEPTH}, got {d}")
    names = [b.name for b in bps]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise ValueError(f"two blueprints are named {dup}; app names must be unique in one corpus")


def _check_existing(root: Path, composition: Composition, seed: int, shard_size: int) -> None:
    """Refuse to mix a new build into a corpus made with another composition, seed or shard size."""
    if root.exists() and not root.is_dir():
        raise CorpusError(f"{root} exists and is not a folder")
    path = root / MANIFEST
    if not path.is_file():
        return
    try:
        old: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise CorpusError(f"{path}: not JSON ({exc})") from None
    new = {"composition": composition.model_dump(), "seed": seed, "shard_size": shard_size}
    if (old.get("composition") or {}).get("tasks_per_app") == 0 and old.get("seed") == seed:
        return  # apps only so far: tasks may be added (the apps are reused when their blueprint is the same)
    diff = [k for k in new if old.get(k) != new[k]]
    if diff:
        was = ", ".join(f"{k}={old.get(k)}" for k in diff)
        raise CorpusError(f"{path}: this corpus was built with {was}; build into a new folder or repeat the same options")
