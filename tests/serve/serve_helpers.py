"""Helpers for the tests that run servers in subprocesses."""

from __future__ import annotations

import threading
from typing import Any


def read_line(stream: Any, timeout: float = 60) -> str:
    """The next line of a subprocess's text stream ('' if none comes within ``timeout`` seconds)."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else ""
