"""Executors: where the units of a build or a run execute (this machine's processes, or a Ray cluster).

An :class:`Executor` is a small ``submit(fn, *args) -> Future`` interface. The units
submitted to it (one app's build, a range of task indexes, one episode) depend only on
their arguments, so any executor gives the same results; the caller gathers them and
writes the outputs in a fixed order.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

from envsynth.errors import ConfigError

T = TypeVar("T")

EXECUTORS = ("local", "ray")
"""The executor names ``--executor`` accepts."""

RAY_HINT = "pip install 'envsynth[ray]'"


class ExecutorError(ConfigError):
    """An executor cannot be opened: an unknown name, Ray not installed, or no cluster at the address."""


@runtime_checkable
class Executor(Protocol):
    """Runs functions somewhere and hands back futures.

    Attributes:
        name: ``local`` or ``ray``.
        slots: how many submitted functions run at once.
    """

    name: str
    slots: int

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` (a module-level function; its arguments are pickled) and return its future."""
        ...

    def close(self) -> None:
        """Release the workers (idempotent)."""
        ...


class LocalExecutor:
    """This machine: ``workers`` processes (a process pool), or this process when ``workers`` is 1.

    Args:
        workers: processes (0: one per CPU).
    """

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        if workers < 0:
            raise ExecutorError(f"workers must be 0 (one per CPU) or more, got {workers}", "workers")
        self.slots = (os.cpu_count() or 1) if workers == 0 else workers
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` in a pool process (in this process, now, with one worker)."""
        if self.slots > 1:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(self.slots)
            return self._pool.submit(fn, *args)
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever reads the future, as a pool would
            done.set_exception(exc)
        return done

    def close(self) -> None:
        """Shut the pool down, cancelling what has not started."""
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """What a Ray task runs: ``fn(*args)`` on a cluster worker."""
    return fn(*args)


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        ExecutorError: ray is not installed (one line, with the install command).
    """
    try:
        import ray
    except ImportError:
        raise ExecutorError(f"the ray executor needs the ray package, which is not installed: {RAY_HINT}", "executor") from None
    return ray


def _check_reachable(address: str | None) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) address where nothing listens, in seconds rather than Ray's minutes.

    Raises:
        ExecutorError: the port does not accept a connection within 5 seconds.
    """
    if address is None or address in ("auto", "local"):
        return
    host, _, port = address.split("://")[-1].rpartition(":")
    if not host or not port.isdigit():
        raise ExecutorError(f"{address} is not an address (give auto, HOST:PORT or ray://HOST:PORT)", "address")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as exc:
        raise ExecutorError(f"no Ray cluster answers at {address} ({exc.strerror or exc})", "address") from None


class RayExecutor:
    """A Ray cluster: each submitted function is one Ray task (one CPU).

    Connects to ``address`` (``auto``, ``ray://host:10001``, ``host:6379``), else to
    ``RAY_ADDRESS``, else to the cluster ``ray start`` made on this machine, else starts a Ray
    instance on this machine (stopped by :meth:`close`). A Ray already initialized in
    this process (by the caller) is used as it is and left running on :meth:`close`.

    Args:
        address: the cluster (None: ``RAY_ADDRESS``, else a new local instance).
        workers: tasks in flight at most (None or 0: the cluster's CPUs).

    Raises:
        ExecutorError: ray is not installed, or no cluster answers at the address.
    """

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        ray = import_ray()
        self._ray = ray
        self._owned = not ray.is_initialized()
        if self._owned:
            _check_reachable(address)
            try:
                ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
            except ConnectionError as exc:
                raise ExecutorError(f"no Ray cluster answers at {address or os.environ.get('RAY_ADDRESS')} ({exc})", "address") from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.slots = max(1, cpus if not workers else min(workers, cpus))
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_call)

    def submit(self, fn: Callable[..., T], /, *args: Any) -> Future[T]:
        """Run ``fn(*args)`` as a Ray task; the future gets its result or its exception."""
        fut: Future[T] = self._remote.remote(fn, *args).future()
        return fut

    def close(self) -> None:
        """Disconnect (and stop the local instance) when this executor started Ray."""
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_executor(name: str, address: str | None = None) -> None:
    """Refuse an unknown executor name, an address for the local executor, and Ray when it is not installed.

    Raises:
        ExecutorError: one line naming the option (or the install command).
    """
    if name not in EXECUTORS:
        raise ExecutorError(f"unknown executor {name!r} (choose {' or '.join(EXECUTORS)})", "executor")
    if address is not None and name != "ray":
        raise ExecutorError("an address is for the ray executor (the local executor runs on this machine)", "address")
    if name == "ray":
        import_ray()


def open_executor(name: str, *, workers: int | None = None, address: str | None = None) -> LocalExecutor | RayExecutor:
    """The executor called ``name`` (``local`` or ``ray``); close it (or use ``with``) when done.

    Args:
        name: ``local`` or ``ray``.
        workers: local: processes (None: 1, 0: one per CPU); ray: tasks in flight at most
            (None or 0: the cluster's CPUs).
        address: ray only: the cluster (see :class:`RayExecutor`).

    Raises:
        ExecutorError: an unknown name, ``address`` for the local executor, or Ray missing or unreachable.
    """
    check_executor(name, address)
    if name == "local":
        return LocalExecutor(1 if workers is None else workers)
    return RayExecutor(address, workers)
