"""A trajectory graded by the LLM judge: its verdict becomes the reward, the rule's kept beside it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from envsynth.grading.judge import Judge, JudgeError, case_of
from envsynth.rollout.trajectory import Trajectory
from envsynth.tasks.model import Task


def judged_reward(rule_reward: dict[str, Any], passed: bool, explanation: str) -> dict[str, Any]:
    """The reward of a judged episode: the judge's ``score`` and ``passed``, the rule's as ``rule_score`` and ``rule_passed``.

    The judge's explanation is the breakdown's first entry (kind ``judge``), before the rule's mismatches.
    """
    note = {"kind": "judge", "message": f"judge: {'pass' if passed else 'fail'}: {explanation}"}
    return {
        **rule_reward,
        "score": 1.0 if passed else 0.0,
        "passed": passed,
        "rule_score": float(rule_reward.get("score", 0.0)),
        "rule_passed": bool(rule_reward.get("passed", False)),
        "graded_by": "judge",
        "breakdown": [note, *rule_reward.get("breakdown", [])],
    }


async def judge_record(judge: Judge, task: Task, rec: dict[str, Any]) -> dict[str, Any]:
    """The fields a judge sets on a trajectory record (``reward``, ``judge``, ``label``, ``label_detail``).

    ``rec["reward"]`` is the rule's reward of the episode (as run, or as regraded now).

    A record already labelled (a simulated user's failure) or of an episode that crashed is not
    judged: its fields come back as they are. A judge that gives no verdict labels the record
    ``judge_error`` and keeps the rule's reward (the label keeps it out of pass@k and exports).
    """
    keep = {k: rec.get(k) for k in ("reward", "judge", "label", "label_detail")}
    if rec.get("label") == "user_failure" or rec.get("stop_reason") == "episode_error":
        return keep
    rule = rec.get("reward") or {}
    try:
        verdict = await judge.judge(case_of(rec, task, rec.get("effects")))
    except JudgeError as exc:
        return {"reward": rule, "judge": None, "label": "judge_error", "label_detail": str(exc)}
    return {
        "reward": judged_reward(rule, verdict.passed, verdict.explanation),
        "judge": verdict.to_dict(),
        "label": None,
        "label_detail": None,
    }


async def judged(judge: Judge, task: Task, traj: Trajectory) -> Trajectory:
    """``traj`` graded by ``judge`` (see :func:`judge_record`)."""
    return replace(traj, **await judge_record(judge, task, traj.to_dict()))
