"""Trajectory records and the run folder's JSONL file (append-only, torn tail repaired)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from envsynth.errors import EnvsynthError

TRAJECTORIES = "trajectories.jsonl"
RUN_CONFIG = "run.json"
REGRADED = "regraded.jsonl"
"""The rewards ``envsynth regrade`` gave a run's episodes, beside the originals (read by :func:`read_graded`)."""

REGRADED_FIELDS = ("reward", "label", "label_detail", "judge")
"""What a regrade replaces on a trajectory record."""


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
        effects: what the episode changed on s0 (``Effects.to_dict()``), for regrading
            without replaying it; None when finishing failed.
        label: why the episode is left out of pass@k and exports though it was run:
            ``user_failure`` (the simulated user broke its scenario) or ``judge_error``
            (the LLM judge gave no verdict); None: it counts.
        label_detail: the reason behind ``label``, in a sentence.
        judge: the LLM judge's verdict (``passed``, ``explanation``, ``model``, ``cached``),
            when the run has a judge: the reward's ``score`` and ``passed`` are then the
            judge's, the rule's kept as ``rule_score`` and ``rule_passed``.
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
    effects: dict[str, Any] | None = None
    label: str | None = None
    label_detail: str | None = None
    judge: dict[str, Any] | None = None

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


def counts(rec: dict[str, Any], include_user_failures: bool = False) -> bool:
    """Whether a trajectory record counts toward pass@k and exports: not labelled (``judge_error``
    always out; ``user_failure`` out unless ``include_user_failures``)."""
    label = rec.get("label")
    return label is None or (include_user_failures and label == "user_failure")


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


def latest_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (task, attempt): the last (a pair written twice, never by run_batch, counts once)."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for r in records:
        latest[(r["task_id"], int(r["attempt"]))] = r
    return list(latest.values())


def read_graded(path: str | Path) -> list[dict[str, Any]]:
    """The records of a run (as :func:`read_trajectories`) with the latest regrade laid over them.

    A record ``envsynth regrade`` scored again carries the new ``reward``, ``label``,
    ``label_detail`` and ``judge`` (and ``regraded: true``); the original stays in
    ``trajectories.jsonl``. A regrade of another version of the task is ignored.
    """
    p = Path(path)
    run_dir = p if p.is_dir() else p.parent
    records = read_trajectories(p)
    overlay = {(r.get("task_id"), int(r.get("attempt", -1)), r.get("task_hash")): r for r in read_trajectories(run_dir / REGRADED)}
    if not overlay:
        return records
    out = []
    for rec in records:
        new = overlay.get((rec.get("task_id"), int(rec.get("attempt", -1)), rec.get("task_hash")))
        if new is not None and new.get("seed", rec.get("seed")) == rec.get("seed"):
            rec = {**rec, **{k: new.get(k) for k in REGRADED_FIELDS}, "regraded": True}
        out.append(rec)
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


class RunFolderError(EnvsynthError, ValueError):
    """A run folder that cannot be read as asked: no corpus recorded, or none at the recorded path."""


def run_corpus(run_dir: Path) -> Path:
    """The corpus folder a run's ``run.json`` names (see :func:`recorded_corpus`).

    Raises:
        RunFolderError: no corpus recorded, or none at the recorded path.
    """
    cfg = run_dir / RUN_CONFIG
    try:
        recorded = Path(json.loads(cfg.read_text(encoding="utf-8"))["corpus"])
    except (OSError, ValueError, KeyError, TypeError):
        raise RunFolderError(f"{cfg}: no corpus path recorded; pass the corpus to read the tasks from") from None
    return recorded_corpus(cfg, recorded)


def recorded_corpus(cfg: Path, recorded: Path) -> Path:
    """The corpus folder a run's ``run.json`` names, from any working directory.

    Runs record the corpus's absolute path. Earlier versions recorded it as given on the
    command line, relative to the folder the run was started in: such a path is looked up
    from the run folder and each folder above it (where the run was most likely started),
    then from the working directory.

    Raises:
        RunFolderError: no corpus at the recorded path.
    """
    from envsynth.corpus.layout import MANIFEST

    if recorded.is_absolute():
        candidates = [recorded]
    else:
        run_dir = cfg.parent.absolute()
        candidates = [base / recorded for base in (run_dir, *run_dir.parents)] + [Path.cwd() / recorded]
    for path in candidates:
        if (path / MANIFEST).is_file():
            return path
    raise RunFolderError(
        f"{cfg}: no corpus at the recorded path {recorded}"
        + ("" if recorded.is_absolute() else " (relative to the folder the run was started in)")
        + "; pass the corpus to read the tasks from"
    )
