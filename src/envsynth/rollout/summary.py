"""Run summaries: pass@1, unbiased pass@k, turns, tokens, tool-call outcomes, failures."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from math import comb
from pathlib import Path
from typing import Any

from envsynth.rollout.trajectory import counts, latest_records, read_graded


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task from ``n`` attempts with ``c`` passes: ``1 - C(n-c, k) / C(n, k)``."""
    if k > n or n <= 0:
        raise ValueError(f"pass@{k} needs at least {k} attempts (got {n})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 6) if xs else 0.0


@dataclass(frozen=True)
class Tokens:
    """Tokens of the policy over the run's episodes."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    mean_per_episode: float


@dataclass(frozen=True)
class UnexpectedFailures:
    """Environment bugs: calls that ended in an Unexpected Failure, the episodes they tainted, and where (the first 50)."""

    calls: int
    tainted_episodes: int
    where: list[dict[str, Any]]


@dataclass(frozen=True)
class UserSimulatorStats:
    """The user simulator's episodes, mean turns, tokens and failures."""

    episodes: int
    mean_turns: float
    total_tokens: int
    errors: int


@dataclass(frozen=True)
class Errors:
    """Episodes a model, agent or user-simulator failure ended: how many, by kind, the first 10 (task, attempt and the error)."""

    episodes: int
    by_kind: dict[str, int]
    first: list[dict[str, Any]]


@dataclass(frozen=True)
class Seconds:
    """Mean seconds per episode: waiting for the model, running tools, finishing (scoring), in all."""

    model: float
    tools: float
    finish: float
    total: float


@dataclass(frozen=True)
class Labelled:
    """Episodes run but left out of pass@k and exports: by label, and the first 10 with their reasons."""

    by_label: dict[str, int]
    first: list[dict[str, Any]]


@dataclass(frozen=True)
class JudgeAgreement:
    """Rule against judge over the judged episodes: the four cells of the table, the share agreeing, the judge's errors."""

    episodes: int
    both_pass: int
    both_fail: int
    rule_pass_judge_fail: int
    rule_fail_judge_pass: int
    agreement: float
    errors: int


@dataclass(frozen=True)
class ThisRun:
    """What one call of ``run_command`` did: episodes written, pairs skipped (already in the folder), episodes failed."""

    written: int
    skipped: int
    failed: int


@dataclass(frozen=True)
class RunSummary:
    """The summary of a run (see :func:`summarize`); :meth:`to_dict` is its JSON form.

    Attributes:
        pass_at: ``{k: pass@k}`` for k = 1 and n (the fewest attempts of any task);
            ``{1: None}`` when the run has no episodes.
        pass1_by_kind, pass1_by_app: pass@1 by task kind and by app.
        labelled: episodes left out of pass@k (``user_failure``, ``judge_error``).
        judge: rule-vs-judge agreement (None: no episode was judged).
        this_run: set by :func:`~envsynth.rollout.command.run_command`, else None.
    """

    tasks: int
    episodes: int
    attempts_per_task: int
    pass_at: dict[int, float | None]
    mean_score: float
    mean_turns: float
    mean_tool_calls: float
    tokens: Tokens
    retries: int
    tool_calls: dict[str, int]
    rejection_codes: dict[str, int]
    stop_reasons: dict[str, int]
    pass1_by_kind: dict[str, float]
    pass1_by_app: dict[str, float]
    unexpected_failures: UnexpectedFailures
    user_simulator: UserSimulatorStats | None
    errors: Errors
    mean_seconds: Seconds
    labelled: Labelled = field(default_factory=lambda: Labelled({}, []))
    judge: JudgeAgreement | None = None
    this_run: ThisRun | None = None

    def to_dict(self) -> dict[str, Any]:
        """The summary as JSON data (``pass@1``, ``pass@k``, ``pass@1_by_kind``... as keys; ``this_run`` last, when set)."""
        out: dict[str, Any] = {"tasks": self.tasks, "episodes": self.episodes, "attempts_per_task": self.attempts_per_task}
        out |= {f"pass@{k}": v for k, v in self.pass_at.items()}
        out |= {
            "mean_score": self.mean_score,
            "mean_turns": self.mean_turns,
            "mean_tool_calls": self.mean_tool_calls,
            "tokens": asdict(self.tokens),
            "retries": self.retries,
            "tool_calls": dict(self.tool_calls),
            "rejection_codes": dict(self.rejection_codes),
            "stop_reasons": dict(self.stop_reasons),
            "pass@1_by_kind": dict(self.pass1_by_kind),
            "pass@1_by_app": dict(self.pass1_by_app),
            "unexpected_failures": asdict(self.unexpected_failures),
            "user_simulator": None if self.user_simulator is None else asdict(self.user_simulator),
            "errors": asdict(self.errors),
            "mean_seconds": asdict(self.mean_seconds),
            "labelled": asdict(self.labelled),
            "judge": None if self.judge is None else asdict(self.judge),
        }
        if self.this_run is not None:
            out["this_run"] = asdict(self.this_run)
        return out


def _pass_rates(recs: list[dict[str, Any]]) -> tuple[int, int, dict[int, float | None]]:
    """Tasks, n (the fewest attempts of any task) and pass@k for k in {1, n}."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in recs:
        by_task[r["task_id"]].append(bool(r["reward"].get("passed")))
    n_min = min((len(v) for v in by_task.values()), default=0)
    pass_at: dict[int, float | None] = {1: None}  # None: no episodes yet
    for k in sorted({1, n_min}) if n_min else []:
        pass_at[k] = _mean([pass_at_k(len(v), sum(v), k) for v in by_task.values()])
    return len(by_task), n_min, pass_at


def _by(recs: list[dict[str, Any]], key: str) -> dict[str, float]:
    """pass@1 by the value of ``key`` (``kind``, ``app``)."""
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in recs:
        groups[str(r.get(key))].append(bool(r["reward"].get("passed")))
    return {g: _mean([float(x) for x in v]) for g, v in sorted(groups.items())}


def _call_counts(recs: list[dict[str, Any]]) -> tuple[dict[str, int], dict[str, int]]:
    """Tool calls by outcome class, and rejection codes by count (most common first)."""
    outcomes: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    for r in recs:
        for c in r.get("tool_calls", []):
            outcomes[c["outcome"]] += 1
            if c.get("code") and c["outcome"] != "success":
                codes[c["code"]] += 1
    return dict(sorted(outcomes.items())), dict(codes.most_common())


def _tokens(recs: list[dict[str, Any]]) -> Tokens:
    total = {key: sum(int(r.get("usage", {}).get(key, 0)) for r in recs) for key in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return Tokens(**total, mean_per_episode=_mean([float(r.get("usage", {}).get("total_tokens", 0)) for r in recs]))


def _unexpected(recs: list[dict[str, Any]]) -> UnexpectedFailures:
    failures = [
        {"task_id": r["task_id"], "attempt": r["attempt"], "tool": c["tool"], "turn": c["turn"]}
        for r in recs
        for c in r.get("tool_calls", [])
        if c["outcome"] == "unexpected_failure"
    ]
    return UnexpectedFailures(len(failures), sum(bool(r.get("tainted")) for r in recs), failures[:50])


def _user_stats(recs: list[dict[str, Any]]) -> UserSimulatorStats | None:
    simulated = [r for r in recs if r.get("user_usage") is not None]
    if not simulated:
        return None
    return UserSimulatorStats(
        episodes=len(simulated),
        mean_turns=_mean([float(r.get("user_turns", 0)) for r in simulated]),
        total_tokens=sum(int(r["user_usage"].get("total_tokens", 0)) for r in simulated),
        errors=sum(1 for r in simulated if (r.get("error") or {}).get("source") == "user"),
    )


def _errors(recs: list[dict[str, Any]]) -> Errors:
    errors = [{"task_id": r["task_id"], "attempt": r["attempt"], **r["error"]} for r in recs if r.get("error")]
    return Errors(len(errors), dict(Counter(str(e.get("kind")) for e in errors)), errors[:10])


def _labelled(recs: list[dict[str, Any]]) -> Labelled:
    out = [
        {"task_id": r["task_id"], "attempt": r["attempt"], "label": r["label"], "detail": r.get("label_detail")}
        for r in recs
        if r.get("label")
    ]
    return Labelled(dict(Counter(str(o["label"]) for o in out)), out[:10])


def _judge(recs: list[dict[str, Any]]) -> JudgeAgreement | None:
    judged = [r for r in recs if r.get("judge")]
    errors = sum(1 for r in recs if r.get("label") == "judge_error")
    if not judged and not errors:
        return None
    cells: Counter[tuple[bool, bool]] = Counter((bool(r["reward"].get("rule_passed")), bool(r["judge"].get("passed"))) for r in judged)
    agree = cells[True, True] + cells[False, False]
    return JudgeAgreement(
        episodes=len(judged),
        both_pass=cells[True, True],
        both_fail=cells[False, False],
        rule_pass_judge_fail=cells[True, False],
        rule_fail_judge_pass=cells[False, True],
        agreement=_mean([1.0] * agree + [0.0] * (len(judged) - agree)),
        errors=errors,
    )


def summarize_records(records: list[dict[str, Any]], include_user_failures: bool = False) -> RunSummary:
    """The summary of trajectory records (dicts as written by :func:`run_batch`); see :func:`summarize`."""
    everything = latest_records(records)
    recs = [r for r in everything if counts(r, include_user_failures)]
    tasks, n_min, pass_at = _pass_rates(recs)
    tool_calls, codes = _call_counts(recs)
    seconds = {key: _mean([float(r.get("timings", {}).get(key, 0.0)) for r in recs]) for key in ("model", "tools", "finish", "total")}
    return RunSummary(
        tasks=tasks,
        episodes=len(recs),
        attempts_per_task=n_min,
        pass_at=pass_at,
        mean_score=_mean([float(r["reward"].get("score", 0.0)) for r in recs]),
        mean_turns=_mean([float(r.get("turns", 0)) for r in recs]),
        mean_tool_calls=_mean([float(len(r.get("tool_calls", []))) for r in recs]),
        tokens=_tokens(recs),
        retries=sum(int(r.get("usage", {}).get("retries", 0)) for r in recs),
        tool_calls=tool_calls,
        rejection_codes=codes,
        stop_reasons=dict(sorted(Counter(r.get("stop_reason", "") for r in recs).items())),
        pass1_by_kind=_by(recs, "kind"),
        pass1_by_app=_by(recs, "app"),
        unexpected_failures=_unexpected(recs),
        user_simulator=_user_stats(recs),
        errors=_errors(recs),
        mean_seconds=Seconds(**seconds),
        labelled=_labelled(everything),
        judge=_judge(everything),
    )


def summarize(run_dir: str | Path, include_user_failures: bool = False) -> RunSummary:
    """Summarize a run folder (or a ``trajectories.jsonl`` file), with its latest regrade laid over it.

    Episodes labelled ``judge_error`` or ``user_failure`` (see docs/grading.md) are counted in
    ``labelled`` and left out of every other figure (``user_failure`` kept with
    ``include_user_failures``); ``judge`` is the rule-vs-judge table of a judged run.

    Returns:
        A :class:`RunSummary`; in its JSON form (:meth:`RunSummary.to_dict`):
        ``tasks``, ``episodes``, ``attempts_per_task`` (n, the fewest of any task),
        ``pass@1`` and ``pass@n`` (unbiased estimator, mean over tasks), ``mean_score``,
        ``mean_turns``, ``mean_tool_calls``, ``tokens`` (prompt, completion, total, mean per
        episode), ``retries``, ``tool_calls`` (count per outcome class: ``success``,
        ``anticipated_rejection``, ``unexpected_failure``, ``malformed``, ``skipped``),
        ``rejection_codes``, ``stop_reasons``, ``pass@1_by_kind``, ``pass@1_by_app``,
        ``unexpected_failures`` (environment bugs: calls, tainted episodes, where),
        ``user_simulator`` (episodes, mean turns, tokens and failures of the user simulator;
        None when it was off), ``errors`` (model, agent and user-simulator failures) and
        ``mean_seconds``, ``labelled`` and ``judge``.
    """
    return summarize_records(read_graded(run_dir), include_user_failures)
