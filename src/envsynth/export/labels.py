"""Per-task labels from a run: pass@k, the mean reward and the share of attempts that passed each reward part.

``envsynth export rl CORPUS --run RUN_DIR`` adds them to each task's row, and
``--min-reward`` (RL and SFT) keeps the tasks whose mean reward reaches a threshold. The
counting is :func:`envsynth.rollout.summarize`'s: the last record of each (task, attempt),
the latest regrade laid over the originals, labelled episodes (``judge_error``,
``user_failure``) left out.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envsynth.export.write import ExportError
from envsynth.rollout.summary import pass_at_k
from envsynth.rollout.trajectory import TRAJECTORIES, counts, latest_records, read_graded


@dataclass(frozen=True)
class TaskLabels:
    """What a run says about one task.

    Attributes:
        task_hash: the version of the task the run played.
        attempts: counted attempts (n).
        pass_at_k: ``{k: unbiased pass@k}`` for k = 1..n (keys are strings, as in JSON).
        reward_mean: the mean reward score over the attempts.
        reward_parts: ``{part: share of attempts that passed it}`` for the parts that apply.
    """

    task_hash: str
    attempts: int
    pass_at_k: dict[str, float] = field(default_factory=dict)
    reward_mean: float = 0.0
    reward_parts: dict[str, float] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        """The columns an export row gets: ``attempts``, ``pass_at_k``, ``reward_mean``, ``reward_parts``."""
        return {"attempts": self.attempts, "pass_at_k": self.pass_at_k, "reward_mean": self.reward_mean, "reward_parts": self.reward_parts}


NO_LABELS: dict[str, Any] = {"attempts": 0, "pass_at_k": {}, "reward_mean": None, "reward_parts": {}}
"""The label columns of a task the run never played."""


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


def _labels(recs: list[dict[str, Any]]) -> TaskLabels:
    """The labels of one task from its counted records."""
    n = len(recs)
    passes = sum(bool(r.get("reward", {}).get("passed")) for r in recs)
    parts: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        for name, part in (r.get("reward", {}).get("parts") or {}).items():
            parts[name].append(float(bool(part.get("passed") if isinstance(part, dict) else part)))
    return TaskLabels(
        task_hash=str(recs[0].get("task_hash", "")),
        attempts=n,
        pass_at_k={str(k): round(pass_at_k(n, passes, k), 6) for k in range(1, n + 1)},
        reward_mean=_mean([float(r.get("reward", {}).get("score", 0.0)) for r in recs]),
        reward_parts={name: _mean(v) for name, v in sorted(parts.items())},
    )


def run_labels(run_dir: str | Path, include_user_failures: bool = False) -> dict[str, TaskLabels]:
    """The labels of every task a run played, by task id (first-seen order).

    Args:
        run_dir: a run folder (``trajectories.jsonl``, maybe ``regraded.jsonl``) or the file itself.
        include_user_failures: also count episodes labelled ``user_failure``.

    Raises:
        ExportError: no trajectories there, or a task played in two versions.
    """
    root = Path(run_dir)
    path = root / TRAJECTORIES if root.is_dir() else root
    if not path.is_file():
        raise ExportError(f"no {TRAJECTORIES} at {root}")
    by_task: dict[str, list[dict[str, Any]]] = {}
    for rec in latest_records(read_graded(path)):
        if counts(rec, include_user_failures):
            by_task.setdefault(rec["task_id"], []).append(rec)
    for tid, recs in by_task.items():
        if len({r.get("task_hash") for r in recs}) > 1:
            raise ExportError(f"task {tid}: the run at {root} holds two versions of it")
    return {tid: _labels(recs) for tid, recs in by_task.items()}


def check_version(labels: TaskLabels, task_id: str, task_hash: str, run_dir: str | Path) -> None:
    """Refuse to label a task with the results of another version of it.

    Raises:
        ExportError: the run played another version of the task than the corpus holds.
    """
    if labels.task_hash and task_hash and labels.task_hash != task_hash:
        raise ExportError(f"task {task_id}: the run at {run_dir} used another version of it than the corpus")


def keeps(reward_mean: float | None, min_reward: float | None) -> bool:
    """Whether a task with this mean reward passes the ``min_reward`` filter (None: the run never played it, so it does not)."""
    if min_reward is None:
        return True
    return reward_mean is not None and reward_mean >= min_reward
