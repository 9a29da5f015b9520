"""App jobs over a process pool; workers' progress reports are relayed to the caller's callback."""

from __future__ import annotations

import multiprocessing
import queue
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from envsynth.corpus.app_tasks import AppJob, AppOutcome, AppProgress, ProgressFn, run_app_job

_QUEUE: Any = None


def _init_worker(q: Any) -> None:
    global _QUEUE
    _QUEUE = q


def _pool_job(job: AppJob) -> AppOutcome:
    return run_app_job(job, _QUEUE.put)


def _drain(q: Any, progress: ProgressFn | None) -> None:
    while True:
        try:
            event: AppProgress = q.get_nowait()
        except queue.Empty:
            return
        if progress is not None:
            progress(event)


def run_jobs(jobs: list[AppJob], workers: int, progress: ProgressFn | None = None) -> list[AppOutcome]:
    """Run app jobs in this process (``workers`` <= 1) or over a process pool; outcomes in job order.

    Either way the files written are the same: each job depends only on itself.
    """
    if workers <= 1 or len(jobs) <= 1:
        return [run_app_job(j, progress) for j in jobs]
    return _run_pool(jobs, workers, progress)


def _run_pool(jobs: list[AppJob], workers: int, progress: ProgressFn | None) -> list[AppOutcome]:
    """Run the jobs over ``workers`` processes; outcomes in job order, progress relayed in this process."""
    ctx = multiprocessing.get_context()
    q = ctx.Queue()
    results: dict[int, AppOutcome] = {}
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx, initializer=_init_worker, initargs=(q,)) as pool:
        pending: set[Future[AppOutcome]] = {pool.submit(_pool_job, j) for j in jobs}
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            _drain(q, progress)
            for f in done:
                if f.exception() is not None:
                    for p in pending:
                        p.cancel()
                outcome = f.result()  # re-raises a worker's exception
                results[outcome.index] = outcome
    _drain(q, progress)
    return [results[j.index] for j in jobs]
