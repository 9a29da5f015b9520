"""SFT export: the first successful attempt of each task of a run, as TRL conversational rows."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.export.labels import keeps, run_labels
from envsynth.export.messages import MalformedMessage, to_trl_messages
from envsynth.export.rl import check_tiers
from envsynth.export.tools import open_corpus, task_tools
from envsynth.export.write import ExportError, ExportSummary, sft_features, write_rows
from envsynth.rollout.trajectory import RUN_CONFIG, TRAJECTORIES, RunFolderError, counts, read_graded, run_corpus

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.tasks.model import Task


def _latest(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Attempts by task (first-seen task order), one record per attempt (the last written, as summarize counts)."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for r in records:
        latest[(r["task_id"], int(r["attempt"]))] = r
    by_task: dict[str, list[dict[str, Any]]] = {}
    for (tid, _), r in latest.items():
        by_task.setdefault(tid, []).append(r)
    return {tid: sorted(rs, key=lambda r: int(r["attempt"])) for tid, rs in by_task.items()}


class _Tools:
    """Tool schemas per trajectory: recorded on it, else from the corpus (loaded on first need)."""

    def __init__(self, run_dir: Path, corpus: Corpus | str | Path | None) -> None:
        self._run_dir = run_dir
        self._arg = corpus
        self._corpus: Corpus | None = None

    def __call__(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        if rec.get("tools"):
            return list(rec["tools"])
        if self._mode() == "code":  # code-acting models saw no function schemas, only the prompt
            return []
        task = self.task(rec["task_id"])
        if rec.get("task_hash") and task.hash and rec["task_hash"] != task.hash:
            raise ExportError(f"task {task.id}: the run used another version of it than the corpus at {self.corpus().path}")
        return task_tools(self._corpus, task)

    def task(self, task_id: str) -> Task:
        """The corpus's task of this id.

        Raises:
            ExportError: no such task in the corpus.
        """
        try:
            return self.corpus().task(task_id)
        except KeyError as exc:
            raise ExportError(str(exc.args[0])) from None

    def corpus(self) -> Corpus:
        """The corpus of the run (the one given, else the one in ``run.json``), loaded once."""
        if self._corpus is None:
            self._corpus = open_corpus(self._arg if self._arg is not None else self._corpus_path())
        return self._corpus

    def _mode(self) -> str:
        try:
            return str(json.loads((self._run_dir / RUN_CONFIG).read_text(encoding="utf-8")).get("mode", "function"))
        except (OSError, ValueError):
            return "function"

    def _corpus_path(self) -> Path:
        try:
            return run_corpus(self._run_dir)
        except RunFolderError as exc:
            raise ExportError(str(exc)) from None


def sft_rows(
    run_dir: str | Path,
    *,
    corpus: Corpus | str | Path | None = None,
    include_user_failures: bool = False,
    min_reward: float | None = None,
    tiers: Collection[str] | None = None,
) -> tuple[list[dict[str, Any]], ExportSummary]:
    """The SFT rows of a run and what was left out (``out_file``/``format`` of the summary are unset).

    See :func:`export_sft`.
    """
    root = Path(run_dir)
    path = root / TRAJECTORIES if root.is_dir() else root
    if not path.is_file():
        raise ExportError(f"no {TRAJECTORIES} at {root}")
    tools = _Tools(path.parent, corpus)
    rows: list[dict[str, Any]] = []
    skipped = {"no_success": 0, "tainted": 0, "error": 0, "malformed": 0, "user_failure": 0, "judge_error": 0}
    by_task = _latest(read_graded(path))
    for attempts in by_task.values():
        row = None
        for rec in attempts:
            if not counts(rec, include_user_failures):
                skipped[str(rec["label"])] = skipped.get(str(rec["label"]), 0) + 1
                continue
            if float(rec.get("reward", {}).get("score", 0.0)) != 1.0:
                continue
            if rec.get("tainted"):
                skipped["tainted"] += 1
                continue
            if rec.get("error"):
                skipped["error"] += 1
                continue
            try:
                messages = to_trl_messages(rec["messages"])
            except MalformedMessage:
                skipped["malformed"] += 1
                continue
            meta = {k: rec[k] for k in ("task_id", "task_hash", "app", "kind")}
            row = {"messages": messages, "tools": tools(rec), **meta, "attempt": int(rec["attempt"]), "score": 1.0}
            break
        if row is None:
            skipped["no_success"] += 1
        else:
            rows.append(row)
    rows = _filtered(rows, skipped, path, tools, include_user_failures, min_reward, tiers)
    return rows, ExportSummary(Path(), "", len(rows), len(by_task), skipped)


def _filtered(
    rows: list[dict[str, Any]],
    skipped: dict[str, int],
    path: Path,
    tools: _Tools,
    include_user_failures: bool,
    min_reward: float | None,
    tiers: Collection[str] | None,
) -> list[dict[str, Any]]:
    """The rows whose task is of one of ``tiers`` and whose mean reward in the run reaches ``min_reward``.

    Rows left out are counted in ``skipped`` (``other_tier``, ``below_min_reward``).
    """
    if tiers:
        check_tiers(tiers)
        kept = [r for r in rows if tools.task(r["task_id"]).tier in tiers]
        skipped["other_tier"] = len(rows) - len(kept)
        rows = kept
    if min_reward is not None:
        labels = run_labels(path, include_user_failures)
        kept = [r for r in rows if keeps(labels[r["task_id"]].reward_mean if r["task_id"] in labels else None, min_reward)]
        skipped["below_min_reward"] = len(rows) - len(kept)
        rows = kept
    return rows


def export_sft(
    run_dir: str | Path,
    out_file: str | Path,
    *,
    format: str = "jsonl",
    corpus: Corpus | str | Path | None = None,
    include_user_failures: bool = False,
    min_reward: float | None = None,
    tiers: Collection[str] | None = None,
) -> ExportSummary:
    """Write one TRL SFT row per task of a run: its first successful attempt.

    The kept attempt is the lowest attempt index whose reward score is 1.0, leaving out
    tainted episodes (an Unexpected Failure: an environment bug), episodes a model or
    agent failure ended, episodes with tool-call arguments that are not a JSON object, and
    labelled episodes: ``judge_error`` (the LLM judge gave no verdict) and ``user_failure``
    (the simulated user broke its scenario; kept with ``include_user_failures``). Rewards are
    the latest regrade's where the run was regraded (``regraded.jsonl``, see ``envsynth regrade``).
    A (task, attempt) pair written twice counts once, its last record (as
    :func:`envsynth.rollout.summarize`). Tasks with no such attempt get no row.

    Each row: ``messages`` (see :func:`envsynth.export.messages.to_trl_messages`),
    ``tools`` (the OpenAI function schemas the episode exposed: recorded on the
    trajectory, else the corpus task's visible tools plus ``complete_task``), and
    ``task_id``, ``task_hash``, ``app``, ``kind``, ``attempt``, ``score``.

    Args:
        run_dir: a run folder (``trajectories.jsonl``) or the file itself.
        out_file: the file to write.
        format: ``jsonl`` or ``parquet`` (needs ``datasets``; messages and tools stored as
            JSON values, see :func:`envsynth.export.sft_features`).
        corpus: where to read tool schemas from (default: the corpus in ``run.json``).
        include_user_failures: also export episodes labelled ``user_failure``.
        min_reward: keep only tasks whose mean reward over the run's attempts is at least this
            (see :mod:`envsynth.export.labels`; left out: ``skipped["below_min_reward"]``).
        tiers: keep only tasks of these tiers, read from the corpus (left out: ``skipped["other_tier"]``).

    Raises:
        ExportError: no trajectories, no corpus to read tools or tiers from, or a task of another version.
        ValueError: an unknown format or tier.
        ImportError: Parquet without ``datasets``.
    """
    rows, summary = sft_rows(run_dir, corpus=corpus, include_user_failures=include_user_failures, min_reward=min_reward, tiers=tiers)
    summary.out_file = write_rows(rows, out_file, format, sft_features)
    summary.format = format
    return summary
