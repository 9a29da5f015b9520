"""Run the pipeline for one configuration and one builder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from envsynth.corpus.build import CorpusSummary, build_corpus
from envsynth.errors import ConfigError

if TYPE_CHECKING:
    from envsynth.corpus.app_tasks import ProgressFn
    from envsynth.pipeline.builder import Builder
    from envsynth.pipeline.config import BuildConfig
    from envsynth.scale.executor import Executor


def build(config: BuildConfig, builder: Builder, *, progress: ProgressFn | None = None) -> CorpusSummary:
    """Build (or resume) ``config.out`` from ``builder``'s blueprints.

    Apps land in ``out/apps/<app>/`` (each only when every procedural test passes), tasks
    (``tasks_per_app`` > 0) in ``out/tasks/<app>/``, the manifest in ``out/corpus.json``.
    A rerun reuses every app built from the same blueprint, seed and version and continues
    the tasks where the last run stopped.

    Args:
        config: the composition and where to build it.
        builder: where the blueprints come from, and its own stages.
        progress: called with an :class:`~envsynth.corpus.app_tasks.AppProgress` as apps and tasks move on.

    Raises:
        ValueError: no blueprints, or two with one name.
        envsynth.errors.ConfigError: the ray executor with a builder whose stages run here (the LLM builder).
        envsynth.scale.executor.ExecutorError: Ray is not installed or its cluster cannot be reached.
        envsynth.corpus.CorpusError: ``config.out`` holds a corpus built with other options,
            or an app folder in the way holds files envsynth did not write.
    """
    if config.executor != "local" and (builder.app_stage is not None or (config.tasks_per_app and builder.task_stage() is not None)):
        raise ConfigError(f"the {builder.name} builder runs its stages in this process: build with the local executor", "executor")
    with _executor(config) as executor:
        return _build(config, builder, progress, executor)


@contextlib.contextmanager
def _executor(config: BuildConfig) -> Iterator[Executor | None]:
    """The build's executor (None: ``workers`` local processes, the corpus build's own pool), closed on exit."""
    if config.executor == "local":
        yield None
        return
    from envsynth.scale.executor import open_executor

    with open_executor(config.executor, workers=config.workers, address=config.address) as executor:
        yield executor


def _build(config: BuildConfig, builder: Builder, progress: ProgressFn | None, executor: Executor | None) -> CorpusSummary:
    blueprints = builder.blueprints
    return build_corpus(
        config.out,
        blueprints=blueprints,
        apps=config.apps,
        tasks_per_app=config.tasks_per_app,
        states=config.states,
        distractors=config.distractors,
        difficulty=config.difficulty,
        seed=config.seed,
        workers=1 if config.workers is None else config.workers,
        progress=progress,
        task_stage=builder.task_stage() if config.tasks_per_app else None,
        app_stage=builder.app_stage,
        force=config.force,
        keep_failed=config.keep_failed,
        executor=executor,
    )
