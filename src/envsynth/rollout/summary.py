"""Run summaries: pass@1, unbiased pass@k, turns, tokens, tool-call outcomes, failures."""

from __future__ import annotations

from collections import Counter, defaultdict
from math import comb
from pathlib import Path
from typing import Any

from envsynth.rollout.trajectory import read_trajectories


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task from ``n`` attempts with ``c`` passes: ``1 - C(n-c, k) / C(n, k)``."""
    if k > n or n <= 0:
        raise ValueError(f"pass@{k} needs at least {k} attempts (got {n})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


def summarize_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary of trajectory records (dicts as written by :func:`run_batch`); see :func:`summarize`."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for r in records:  # a pair written twice (never by run_batch) counts once: the last record
        latest[(r["task_id"], int(r["attempt"]))] = r
    recs = list(latest.values())
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in recs:
        by_task[r["task_id"]].append(bool(r["reward"].get("passed")))
    n_min = min((len(v) for v in by_task.values()), default=0)
    pass_at: dict[str, float | None] = {"pass@1": None}  # None: no episodes yet
    for k in sorted({1, n_min}) if n_min else []:
        pass_at[f"pass@{k}"] = _mean([pass_at_k(len(v), sum(v), k) for v in by_task.values()])
    outcomes: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    for r in recs:
        for c in r.get("tool_calls", []):
            outcomes[c["outcome"]] += 1
            if c.get("code") and c["outcome"] != "success":
                codes[c["code"]] += 1
    groups: dict[str, dict[str, list[bool]]] = {"kind": defaultdict(list), "app": defaultdict(list)}
    for r in recs:
        for g in groups:
            groups[g][str(r.get(g))].append(bool(r["reward"].get("passed")))
    tokens = {key: sum(int(r.get("usage", {}).get(key, 0)) for r in recs) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    failures = [
        {"task_id": r["task_id"], "attempt": r["attempt"], "tool": c["tool"], "turn": c["turn"]}
        for r in recs
        for c in r.get("tool_calls", [])
        if c["outcome"] == "unexpected_failure"
    ]
    errors = [{"task_id": r["task_id"], "attempt": r["attempt"], **r["error"]} for r in recs if r.get("error")]
    simulated = [r for r in recs if r.get("user_usage") is not None]
    user = None
    if simulated:
        user = {
            "episodes": len(simulated),
            "mean_turns": _mean([float(r.get("user_turns", 0)) for r in simulated]),
            "total_tokens": sum(int(r["user_usage"].get("total_tokens", 0)) for r in simulated),
            "errors": sum(1 for r in simulated if (r.get("error") or {}).get("source") == "user"),
        }
    return {
        "tasks": len(by_task),
        "episodes": len(recs),
        "attempts_per_task": n_min,
        **pass_at,
        "mean_score": _mean([float(r["reward"].get("score", 0.0)) for r in recs]),
        "mean_turns": _mean([float(r.get("turns", 0)) for r in recs]),
        "mean_tool_calls": _mean([float(len(r.get("tool_calls", []))) for r in recs]),
        "tokens": {**tokens, "mean_per_episode": _mean([float(r.get("usage", {}).get("total_tokens", 0)) for r in recs])},
        "retries": sum(int(r.get("usage", {}).get("retries", 0)) for r in recs),
        "tool_calls": dict(sorted(outcomes.items())),
        "rejection_codes": dict(codes.most_common()),
        "stop_reasons": dict(sorted(Counter(r.get("stop_reason", "") for r in recs).items())),
        "pass@1_by_kind": {g: _mean([float(x) for x in v]) for g, v in sorted(groups["kind"].items())},
        "pass@1_by_app": {g: _mean([float(x) for x in v]) for g, v in sorted(groups["app"].items())},
        "unexpected_failures": {
            "calls": len(failures),
            "tainted_episodes": sum(bool(r.get("tainted")) for r in recs),
            "where": failures[:50],
        },
        "user_simulator": user,
        "errors": {"episodes": len(errors), "by_kind": dict(Counter(str(e.get("kind")) for e in errors)), "first": errors[:10]},
        "mean_seconds": {
            key: _mean([float(r.get("timings", {}).get(key, 0.0)) for r in recs]) for key in ("model", "tools", "finish", "total")
        },
    }


def summarize(run_dir: str | Path) -> dict[str, Any]:
    """Summarize a run folder (or a ``trajectories.jsonl`` file).

    Returns:
        ``tasks``, ``episodes``, ``attempts_per_task`` (n, the fewest of any task),
        ``pass@1`` and ``pass@n`` (unbiased estimator, mean over tasks), ``mean_score``,
        ``mean_turns``, ``mean_tool_calls``, ``tokens`` (prompt, completion, total, mean per
        episode), ``retries``, ``tool_calls`` (count per outcome class: ``success``,
        ``anticipated_rejection``, ``unexpected_failure``, ``malformed``, ``skipped``),
        ``rejection_codes``, ``stop_reasons``, ``pass@1_by_kind``, ``pass@1_by_app``,
        ``unexpected_failures`` (environment bugs: calls, tainted episodes, where),
        ``user_simulator`` (episodes, mean turns, tokens and failures of the user simulator;
        None when it was off), ``errors`` (model, agent and user-simulator failures) and
        ``mean_seconds``.
    """
    return summarize_records(read_trajectories(run_dir))
