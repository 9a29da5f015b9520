"""Trajectory records and the run folder's JSONL file (append-only, torn tail repaired)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TRAJECTORIES = "trajectories.jsonl"
RUN_CONFIG = "run.json"


@dataclass
class Trajectory:
    """One episode of one task by one policy, as written to ``trajectories.jsonl``.

    Attributes:
        task_id: the task.
        task_hash: its content hash (a run never mixes two versions of a task).
        app: the task's app.
        kind: ``action``, ``info`` or ``mixed``.
        attempt: the attempt index (0..k-1).
        seed: the episode seed.
        agent: the policy's name; model: its model.
        messages: the OpenAI chat messages, tool calls and tool results included.
        answer: the ``complete_task`` answer (None if none).
        stop_reason: see :class:`envsynth.agents.Conversation`.
        turns: assistant messages.
        tool_calls: per call: turn, tool, outcome class, rejection code.
        reward: ``Reward.to_dict()`` (score, passed, breakdown).
        usage: tokens, requests and retries of this episode.
        timings: seconds: ``model``, ``tools``, ``finish``, ``total``.
        tainted: a tool hit an Unexpected Failure (an environment bug).
        error: the model, agent or user-simulator failure that ended the episode, if any
            (``source``: ``agent`` or ``user``).
        user_turns: replies of the user simulator (0 without one).
        user_usage: the user simulator's tokens and requests (None without one).
    """

    task_id: str
    task_hash: str
    app: str
    kind: str
    attempt: int
    seed: int
    agent: str
    model: str
    messages: list[dict[str, Any]]
    answer: Any
    stop_reason: str
    turns: int
    tool_calls: list[dict[str, Any]]
    reward: dict[str, Any]
    usage: dict[str, int]
    timings: dict[str, float]
    tainted: bool = False
    error: dict[str, Any] | None = None
    user_turns: int = 0
    user_usage: dict[str, int] | None = None

    @property
    def score(self) -> float:
        return float(self.reward.get("score", 0.0))

    @property
    def passed(self) -> bool:
        return bool(self.reward.get("passed", False))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(**data)


def repair_tail(path: Path) -> int:
    """Cut an unterminated or unparsable last line (an interrupted write); returns bytes cut."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    if not data:
        return 0
    keep = len(data)
    if not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
    else:
        start = data.rfind(b"\n", 0, len(data) - 1) + 1
        try:
            json.loads(data[start:])
        except ValueError:
            keep = start
    if keep < len(data):
        with path.open("r+b") as f:
            f.truncate(keep)
    return len(data) - keep


def read_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """Every record of a ``trajectories.jsonl`` file (or of ``RUN_DIR/trajectories.jsonl``), skipping a torn last line."""
    p = Path(path)
    if p.is_dir():
        p = p / TRAJECTORIES
    if not p.exists():
        return []
    out = []
    lines = p.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if i >= len(lines) - 2:  # the last line: a torn write
                break
            raise
    return out


class TrajectoryWriter:
    """Appends one JSON line per trajectory, flushed (and fsynced) as each episode ends."""

    def __init__(self, path: Path, fsync: bool = True) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(path)
        self._f = path.open("a", encoding="utf-8")
        self._fsync = fsync

    def write(self, traj: Trajectory) -> None:
        self._f.write(json.dumps(traj.to_dict(), ensure_ascii=False, default=str) + "\n")
        self._f.flush()
        if self._fsync:
            os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()
