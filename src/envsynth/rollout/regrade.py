"""``envsynth regrade``: score a finished run's episodes again with the current grader, no agent calls.

Each episode's effects come from its trajectory (``effects``, recorded since the grader had parts)
or, for older runs, from replaying its recorded tool calls on a fresh episode of the task at the
episode's seed (tools are deterministic in their seed, so the replay reaches the same state). The
answer, the calls the policy part reads and the agent's words to a simulated user are on the
trajectory. The new rewards go to ``RUN/regraded.jsonl`` beside the old ones (which stay in
``trajectories.jsonl``); summaries and exports read them from there (:func:`read_graded`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.corpus.load import Corpus, load_corpus
from envsynth.errors import EnvsynthError
from envsynth.grading import answer_spec, asked_before_writing, grade_task
from envsynth.grading.userfail import internal_ids, user_failure
from envsynth.rollout.runner import plain_texts
from envsynth.rollout.trajectory import (
    REGRADED,
    REGRADED_FIELDS,
    RUN_CONFIG,
    TRAJECTORIES,
    RunFolderError,
    latest_records,
    read_trajectories,
    run_corpus,
)
from envsynth.runtime.parts import ALL, ScoreRule
from envsynth.runtime.reward import Effects
from envsynth.tasks.model import Task

if TYPE_CHECKING:
    from envsynth.grading.judge import Judge

_NOT_RUN = ("malformed", "skipped")
"""Outcomes of calls the loop never ran on the episode (a replay skips them)."""


@dataclass
class RegradeResult:
    """What a regrade did.

    Attributes:
        run_dir: the run folder.
        out_file: ``RUN/regraded.jsonl``.
        episodes: episodes scored again.
        replayed: of those, episodes whose effects came from replaying their calls.
        kept: episodes left as they were, with why (``crashed``: no effects to grade;
            ``stale``: the corpus holds another version of the task; ``unreplayable``: an old
            record whose calls cannot be replayed).
        fail_to_pass, pass_to_fail: the episodes that flipped, as ``task_id#attempt``.
        labels: regraded episodes by label (``user_failure``, ``judge_error``).
        judged: episodes the judge gave a verdict on; agree: of those, where it agrees with the rule.
    """

    run_dir: Path
    out_file: Path
    episodes: int = 0
    replayed: int = 0
    kept: dict[str, int] = field(default_factory=dict)
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_fail: list[str] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    judged: int = 0
    agree: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_dir": str(self.run_dir),
            "out_file": str(self.out_file),
            "episodes": self.episodes,
            "replayed": self.replayed,
            "kept": dict(self.kept),
            "flipped": {"fail_to_pass": len(self.fail_to_pass), "pass_to_fail": len(self.pass_to_fail)},
            "fail_to_pass": list(self.fail_to_pass),
            "pass_to_fail": list(self.pass_to_fail),
            "labels": dict(self.labels),
            "judged": self.judged,
            "judge_agrees": self.agree,
        }


class Unreplayable(EnvsynthError, ValueError):
    """An old record whose tool calls cannot be run again (arguments not recorded)."""


def replay_effects(corpus: Corpus, task: Task, rec: dict[str, Any]) -> Effects:
    """The effects of an episode, by running its recorded tool calls again on a fresh episode at its seed.

    Raises:
        Unreplayable: a call that ran has no recorded arguments.
    """
    ep = corpus.start(task, seed=int(rec.get("seed", 0)))
    try:
        for call in rec.get("tool_calls") or []:
            if call.get("tool") == "complete_task" or call.get("outcome") in _NOT_RUN:
                continue
            if not isinstance(call.get("arguments"), dict):
                raise Unreplayable(f"call of {call.get('tool')} has no recorded arguments")
            ep.call(str(call["tool"]), call["arguments"])
        return ep.effects()
    finally:
        ep.finish()


def _calls(rec: dict[str, Any]) -> list[tuple[str, Any]]:
    """The successful tool calls of a record as ``(tool, arguments)``, for the policy part."""
    return [(str(c["tool"]), c.get("arguments")) for c in rec.get("tool_calls") or [] if c.get("outcome") == "success"]


def _plain_turns(messages: list[dict[str, Any]]) -> list[int]:
    """The turns (1 for the agent's first message) of the agent's messages to the user: those without tool calls."""
    replies = [m for m in messages if m.get("role") == "assistant"]
    return [i + 1 for i, m in enumerate(replies) if not m.get("tool_calls") and m.get("content")]


def regrade_record(
    corpus: Corpus, task: Task, rec: dict[str, Any], rule: ScoreRule, user_sim: bool, code: bool
) -> tuple[dict[str, Any], bool]:
    """The rule's new fields for one record (``reward``, ``label``, ``label_detail``, ``judge`` None) and whether it was replayed.

    Raises:
        Unreplayable: no effects recorded and the calls cannot be replayed.
    """
    app = corpus.apps[task.app]
    replayed = rec.get("effects") is None
    effects = replay_effects(corpus, task, rec) if replayed else Effects.from_dict(rec["effects"])
    messages = rec.get("messages") or []
    transcript = plain_texts(messages, code=code) if user_sim else None
    asked = asked_before_writing(app, rec.get("tool_calls") or [], _plain_turns(messages) if user_sim and not code else ())
    reward = grade_task(app, task, effects, rec.get("answer"), _calls(rec), transcript, rule=rule, asked=asked)
    why = None
    if user_sim:
        spec = answer_spec(app, task) if task.expected_answer is not None else None
        why = user_failure(task, messages, str(rec.get("stop_reason", "")), spec, internal_ids(app, task))
    fields = {"reward": reward.to_dict(), "label": None if why is None else "user_failure", "label_detail": why, "judge": None}
    return fields, replayed


def _settings(run_dir: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((run_dir / RUN_CONFIG).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return {}


def _rule_of(settings: dict[str, Any]) -> ScoreRule:
    """The score rule a run recorded in ``run.json`` (the default when none)."""
    rec = settings.get("score_rule")
    if not isinstance(rec, dict):
        return ALL
    return ScoreRule(mode=rec.get("mode", "all"), weights=dict(rec.get("weights") or {}))


async def aregrade(
    run_dir: str | Path,
    *,
    corpus: Corpus | str | Path | None = None,
    rule: ScoreRule | None = None,
    judge: Judge | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RegradeResult:
    """The async form of :func:`regrade`."""
    root = Path(run_dir)
    if not (root / TRAJECTORIES).is_file():
        raise RunFolderError(f"no {TRAJECTORIES} in {root}: not a run folder")
    settings = _settings(root)
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus if corpus is not None else run_corpus(root))
    rule = rule or _rule_of(settings)
    user_sim, code = bool(settings.get("user_sim")), settings.get("mode") == "code"
    if judge is not None:
        from envsynth.grading.judge import JUDGE_CACHE

        judge = judge.with_cache(root / JUDGE_CACHE)
    result = RegradeResult(root, root / REGRADED)
    records = latest_records(read_trajectories(root))
    out: list[dict[str, Any]] = []
    for i, rec in enumerate(records):
        new = await _one(c, rec, rule, user_sim, code, judge, result)
        if new is not None:
            out.append(new)
        if progress is not None:
            progress(i + 1, len(records))
    _write(result.out_file, out)
    return result


async def _one(
    c: Corpus, rec: dict[str, Any], rule: ScoreRule, user_sim: bool, code: bool, judge: Judge | None, result: RegradeResult
) -> dict[str, Any] | None:
    """The regraded record of ``rec`` (None when it is kept as it was), counted on ``result``."""
    try:
        task = c.task(rec["task_id"])
    except KeyError:
        task = None
    if task is None or (rec.get("task_hash") and task.hash != rec["task_hash"]):
        return _keep(result, "stale")
    if rec.get("stop_reason") == "episode_error":
        return _keep(result, "crashed")
    try:
        fields, replayed = regrade_record(c, task, rec, rule, user_sim, code)
    except Unreplayable:
        return _keep(result, "unreplayable")
    if judge is not None:
        from envsynth.rollout.judging import judge_record

        fields = await judge_record(judge, task, {**rec, **fields})
        if fields.get("judge") is not None:
            result.judged += 1
            result.agree += fields["judge"]["passed"] == fields["reward"]["rule_passed"]
    result.episodes += 1
    result.replayed += replayed
    if fields["label"]:
        result.labels[fields["label"]] = result.labels.get(fields["label"], 0) + 1
    was, now = bool((rec.get("reward") or {}).get("passed")), bool(fields["reward"].get("passed"))
    if was != now:
        (result.fail_to_pass if now else result.pass_to_fail).append(f"{rec['task_id']}#{rec['attempt']}")
    keys = {k: rec.get(k) for k in ("task_id", "task_hash", "attempt", "seed")}
    old = {"score": (rec.get("reward") or {}).get("score"), "passed": was, "label": rec.get("label")}
    return {**keys, **{k: fields.get(k) for k in REGRADED_FIELDS}, "old": old, "rule": rule.to_dict()}


def _keep(result: RegradeResult, why: str) -> None:
    result.kept[why] = result.kept.get(why, 0) + 1
    return None


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    """Replace ``path`` with ``records`` as JSONL, atomically (a crash leaves the previous regrade whole)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def regrade(
    run_dir: str | Path,
    *,
    corpus: Corpus | str | Path | None = None,
    rule: ScoreRule | None = None,
    judge: Judge | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RegradeResult:
    """Score every episode of a finished run again with the current grader, without calling its agent.

    Writes ``RUN/regraded.jsonl`` (one record per episode scored again: its new ``reward``,
    ``label``, ``label_detail`` and ``judge``, and the ``old`` score), replacing an earlier
    regrade; ``trajectories.jsonl`` is left as it is. :func:`~envsynth.rollout.summarize` and
    the SFT export read the regraded rewards.

    Args:
        run_dir: the run folder.
        corpus: the corpus (default: the one ``run.json`` names).
        rule: the score rule (default: the run's, else every part must pass).
        judge: an LLM judge to grade every episode after the rule (its verdicts cached in
            ``RUN/judge_cache.jsonl``); None: the rule only.
        progress: ``(done, total)`` after each episode.

    Raises:
        RunFolderError: not a run folder, or no corpus recorded and none given.
        envsynth.corpus.CorpusError: the corpus cannot be read.
    """
    return asyncio.run(aregrade(run_dir, corpus=corpus, rule=rule, judge=judge, progress=progress))
