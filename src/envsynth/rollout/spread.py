"""Episodes of a run spread over an :class:`~envsynth.scale.executor.Executor`.

Each episode runs on a worker against that worker's copy of the corpus (loaded once per
worker process from the same path: one machine, or a shared filesystem) and its trajectory
comes back to the caller, which writes the run folder as a local run does. The policy
factory travels with each episode (Ray pickles closures), so the model endpoint is the one
the caller configured: every worker must reach it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.errors import EnvsynthError
from envsynth.runtime.parts import ALL, ScoreRule
from envsynth.scale.executor import Executor

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.rollout.trajectory import Trajectory
    from envsynth.tasks.model import Task

_CORPORA: dict[tuple[str, str], Corpus] = {}
"""Corpora loaded in this worker process, by folder and digest."""


class WorkerCorpusError(EnvsynthError, RuntimeError):
    """A worker cannot run the caller's episodes: it does not see the corpus (or another build of it), or runs another envsynth."""


def _worker_corpus(path: str, digest: str) -> Corpus:
    """The corpus at ``path`` in this worker process, loaded once; it must be the caller's build."""
    from envsynth.corpus.load import load_corpus

    key = (path, digest)
    if key not in _CORPORA:
        if not Path(path).is_dir():
            raise WorkerCorpusError(f"{path} is not visible on worker {socket.gethostname()}: the corpus must be on a shared filesystem")
        corpus = load_corpus(path)
        if corpus.manifest.digest != digest:
            raise WorkerCorpusError(f"{path} on worker {socket.gethostname()} holds another build of the corpus (digest differs)")
        if len(_CORPORA) >= 4:
            _CORPORA.clear()
        _CORPORA[key] = corpus
    return _CORPORA[key]


def remote_episode(
    path: str, digest: str, version: str, task_id: str, attempt: int, seed: int, policy_factory: Any, score_rule: ScoreRule = ALL
) -> Trajectory:
    """Run one episode on a worker: ``policy_factory(task, attempt)`` on ``task_id`` with episode seed ``seed``.

    An exception of the episode (the factory, the policy) is recorded on its trajectory, as in
    a local run; a worker that cannot read the corpus, or runs another envsynth than
    ``version``, raises :class:`WorkerCorpusError`.
    """
    from envsynth import __version__
    from envsynth.rollout.batch import crashed_trajectory
    from envsynth.rollout.runner import run_episode

    if __version__ != version:
        raise WorkerCorpusError(f"worker {socket.gethostname()} runs envsynth {__version__}, this run {version}: install the same version")
    corpus = _worker_corpus(path, digest)
    task = corpus.task(task_id)
    t0 = time.perf_counter()
    try:
        policy = policy_factory(task, attempt)
        return asyncio.run(run_episode(corpus, task, policy, seed=seed, attempt=attempt, score_rule=score_rule))
    except Exception as exc:  # this episode only: recorded on its trajectory, the run goes on
        return crashed_trajectory(task, attempt, seed, exc, time.perf_counter() - t0)


async def spread_episode(
    executor: Executor, corpus: Corpus, task: Task, attempt: int, seed: int, policy_factory: Any, score_rule: ScoreRule = ALL
) -> Trajectory:
    """Run one episode of ``task`` on ``executor`` and await its trajectory (see :func:`remote_episode`).

    Raises:
        WorkerCorpusError: the worker does not see this corpus at its path.
    """
    from envsynth import __version__

    path = str(Path(corpus.path).resolve())
    future = executor.submit(remote_episode, path, corpus.manifest.digest, __version__, task.id, attempt, seed, policy_factory, score_rule)
    return await asyncio.wrap_future(future)
