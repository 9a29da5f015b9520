"""RL export: one prompt per corpus task (system prompt + instruction) with its tools and id."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from envsynth.export.tools import open_corpus, task_tools
from envsynth.export.write import ExportSummary, rl_features, write_rows
from envsynth.tasks.admission.difficulty import TIERS

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.tasks.model import Task

Order = Literal["corpus", "difficulty"]
ORDERS: tuple[str, ...] = ("corpus", "difficulty")


def rl_rows(
    corpus: Corpus | str | Path,
    *,
    system_prompt: str | None = None,
    order: Order = "corpus",
    tiers: Collection[str] | None = None,
    min_difficulty: float | None = None,
    max_difficulty: float | None = None,
) -> list[dict[str, Any]]:
    """The RL rows of a corpus; see :func:`export_rl`."""
    from envsynth.agents.base import SYSTEM_PROMPT, with_app_policy
    from envsynth.blueprint.policy import policy_text

    c = open_corpus(corpus)
    base = SYSTEM_PROMPT if system_prompt is None else system_prompt
    rows = []
    policies: dict[str, str] = {}
    _check_filters(order, tiers, min_difficulty, max_difficulty)
    for t in _chosen(c.tasks, order, tiers, min_difficulty, max_difficulty):
        if t.app not in policies:
            policies[t.app] = policy_text(c.apps[t.app].blueprint)
        system = with_app_policy(base, policies[t.app])
        prompt = [{"role": "system", "content": system}] if system else []
        prompt.append({"role": "user", "content": t.instruction})
        rows.append(
            {
                "prompt": prompt,
                "tools": task_tools(c, t),
                "task_id": t.id,
                "task_hash": t.hash,
                "app": t.app,
                "kind": t.kind,
                "difficulty": t.difficulty,
                "tier": t.tier,
                "constructs": list(t.constructs),
            }
        )
    return rows


def _check_filters(order: str, tiers: Collection[str] | None, low: float | None, high: float | None) -> None:
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: choose corpus or difficulty")
    unknown = sorted(set(tiers or ()) - set(TIERS))
    if unknown:
        raise ValueError(f"unknown tier {', '.join(map(repr, unknown))}: the tiers are {', '.join(TIERS)}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"min difficulty {low:g} is above max difficulty {high:g}: no task can be both")


def _chosen(tasks: Any, order: str, tiers: Collection[str] | None, low: float | None, high: float | None) -> list[Task]:
    """The tasks the filters keep, in corpus order or by difficulty (easiest first; ties in corpus order: a curriculum)."""
    kept = [
        t
        for t in tasks
        if (not tiers or t.tier in tiers) and (low is None or t.difficulty >= low) and (high is None or t.difficulty <= high)
    ]
    return sorted(kept, key=lambda t: t.difficulty) if order == "difficulty" else kept


def export_rl(
    corpus: Corpus | str | Path,
    out_file: str | Path,
    *,
    format: str = "jsonl",
    system_prompt: str | None = None,
    order: Order = "corpus",
    tiers: Collection[str] | None = None,
    min_difficulty: float | None = None,
    max_difficulty: float | None = None,
) -> ExportSummary:
    """Write one RL prompt row per task of a corpus (TRL prompt-only, conversational, with tools).

    Each row: ``prompt`` (the system prompt, followed by the app's policy under "## Policy" when
    the app has one, then the instruction as the user message),
    ``tools`` (OpenAI schemas of the task's visible tools plus ``complete_task``, as
    ``corpus.start(task).tools``), ``task_id`` and ``task_hash`` (for a reward function or
    the HTTP server to start the episode), ``app``, ``kind``, and the task's ``difficulty``,
    ``tier`` and ``constructs`` (for curricula). Never the oracle, the expected effects or the
    expected answer.

    Args:
        corpus: a loaded corpus or its folder.
        out_file: the file to write.
        format: ``jsonl`` or ``parquet`` (needs ``datasets``).
        system_prompt: the system message (default: the agents' ``SYSTEM_PROMPT``; ``""`` for none).
        order: ``corpus`` (the corpus's order) or ``difficulty`` (easiest first: a curriculum).
        tiers: keep only tasks of these tiers (None: all).
        min_difficulty: keep only tasks whose difficulty score is at least this.
        max_difficulty: keep only tasks whose difficulty score is at most this.

    Raises:
        ExportError: no valid corpus there.
        ValueError: an unknown format, order or tier, or a min difficulty above the max.
        ImportError: Parquet without ``datasets``.
    """
    c = open_corpus(corpus)
    rows = rl_rows(c, system_prompt=system_prompt, order=order, tiers=tiers, min_difficulty=min_difficulty, max_difficulty=max_difficulty)
    out = write_rows(rows, out_file, format, rl_features)
    return ExportSummary(out, format, len(rows), len(c.tasks), {})
