"""One event loop for the whole build, so every role shares one chat client's connections.

The build stages are synchronous (compiling, testing, the corpus build); the roles are
coroutines. A :class:`LoopRunner` keeps one asyncio loop alive in a background thread and
runs each coroutine there to completion, so an HTTP client bound to that loop is reused
across stages (``asyncio.run`` per call would close it).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopRunner:
    """Runs coroutines on one long-lived event loop (in a daemon thread)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="envsynth-llm-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and return its result (its exception is raised here)."""
        if self._loop.is_closed():
            coro.close()
            raise RuntimeError("this LoopRunner is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Stop the loop and its thread (pending callbacks are dropped)."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> LoopRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
