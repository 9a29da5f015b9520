"""A pool of warm sandboxed workers, shared across episodes.

Starting bubblewrap and Python costs about 90 ms; a warm worker answers a code block in
well under a millisecond. The pool keeps ``size`` started workers ready (refilled by a
background thread). An episode takes one on its first code block and keeps it for its
whole life (variables persist between its blocks); when the episode ends the worker is
killed, never handed to another episode, so nothing an agent's code leaves behind
(threads, patched builtins, files in /tmp) can reach another episode.
"""

from __future__ import annotations

import atexit
import threading
import time

from envsynth.sandbox.launcher import Limits, Mode, Worker, WorkerDied, WorkerTimeout, resolve_mode


class WorkerPool:
    """Warm workers ready to be taken; thread-safe.

    Args:
        size: how many started workers to keep ready.
        limits: limits of every worker and code block.
        require_bwrap: refuse to start (SandboxUnavailable) where bubblewrap is unusable.
        mode: force a mode (e.g. :func:`~envsynth.sandbox.launcher.fallback_mode` in tests).
    """

    def __init__(self, size: int = 2, limits: Limits | None = None, require_bwrap: bool = False, mode: Mode | None = None) -> None:
        self.mode: Mode = mode or resolve_mode(require_bwrap)
        self.limits = limits or Limits()
        self.size = size
        self._idle: list[Worker] = []
        self._lock = threading.Condition()
        self._closed = False
        self._wanted = 0
        self._waiters = 0
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._refill, name="envsynth-sandbox-pool", daemon=True)
        self._thread.start()
        with self._lock:
            self._lock.notify_all()

    def _spawn(self) -> Worker:
        return Worker(self.mode, self.limits)

    def _refill(self) -> None:
        # Every worker is started from this one long-lived thread, never from a caller's
        # thread: callers only wait, and the spawn cost (~60-90 ms) stays off their path
        # whenever a warm worker is ready.
        while True:
            with self._lock:
                while not self._closed and len(self._idle) + self._wanted >= self.size + self._waiters:
                    self._lock.wait()
                if self._closed:
                    return
                self._wanted += 1
            worker: Worker | None = None
            error: Exception | None = None
            try:
                worker = self._spawn()
                worker.ready()
            except (OSError, WorkerDied, WorkerTimeout) as exc:
                error = exc
                if worker is not None:
                    worker.kill()
                worker = None
            with self._lock:
                self._wanted -= 1
                if worker is not None:
                    if self._closed:
                        worker.kill()
                    else:
                        self._idle.append(worker)
                else:
                    self._error = error
                self._lock.notify_all()
            if worker is None:  # spawning fails: do not spin
                time.sleep(0.5)

    def acquire(self, timeout: float = 30.0) -> Worker:
        """A started, unused worker: a warm one, or the next one the pool starts."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._waiters += 1
            self._lock.notify_all()
            try:
                while True:
                    if self._closed:
                        raise RuntimeError("the worker pool is closed")
                    while self._idle:
                        worker = self._idle.pop()
                        if worker.alive():
                            return worker
                        worker.kill()
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise WorkerDied(f"no sandbox worker could be started ({self._error})")
                    self._lock.wait(timeout=min(left, 1.0))
            finally:
                self._waiters -= 1
                self._lock.notify_all()

    def release(self, worker: Worker) -> None:
        """Give back a worker after its episode: it is stopped (workers serve one episode)."""
        worker.kill(grace=0.5)

    @property
    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Kill the idle workers and stop refilling."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._lock.notify_all()
        for worker in idle:
            worker.kill(grace=0.5)

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DEFAULT: WorkerPool | None = None
_DEFAULT_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool (2 warm workers, default limits), started on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or _DEFAULT._closed:
            _DEFAULT = WorkerPool()
            atexit.register(_DEFAULT.close)
        return _DEFAULT
