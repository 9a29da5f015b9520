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


def says(record: Any, answer: Any) -> bool:
    """Whether a reward record states ``answer`` in a value (a mismatch count, the task id and seed aside)."""
    if isinstance(record, dict):
        return any(says(v, answer) for k, v in record.items() if k not in ("count", "task_id", "seed"))
    if isinstance(record, list):
        return any(says(v, answer) for v in record)
    return record == answer or (isinstance(record, str) and str(answer) in record)


def distinctive(answer: Any) -> bool:
    """An answer a response cannot hold by coincidence: not a single digit (a mismatch count, a digit of an id, a score)."""
    return answer is not None and not (isinstance(answer, (int, float)) and abs(answer) < 10)
