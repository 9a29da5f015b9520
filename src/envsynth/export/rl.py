"""RL export: one prompt per corpus task (system prompt + instruction) with its tools and id."""

from __future__ import annotations

from collections.abc import Collection
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from envsynth.export.labels import NO_LABELS, TaskLabels, check_version, keeps, run_labels
from envsynth.export.tools import open_corpus, task_tools
from envsynth.export.write import ExportSummary, rl_features, write_rows
from envsynth.tasks.admission.difficulty import TIERS

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.tasks.model import Task

Order = Literal["corpus", "difficulty"]
ORDERS: tuple[str, ...] = ("corpus", "difficulty")


MIN_REWARD_WITHOUT_RUN = "min_reward needs a run to read the rewards from (give run: a run folder)"
"""The ValueError's message for a min reward without a run (the CLI words it with its flags)."""


def _check_min_reward(min_reward: float | None, run: Path | str | None) -> None:
    if min_reward is not None and run is None:
        raise ValueError(MIN_REWARD_WITHOUT_RUN)


def rl_rows(
    corpus: Corpus | str | Path,
    *,
    system_prompt: str | None = None,
    order: Order = "corpus",
    tiers: Collection[str] | None = None,
    min_difficulty: float | None = None,
    max_difficulty: float | None = None,
    run: str | Path | None = None,
    min_reward: float | None = None,
) -> list[dict[str, Any]]:
    """The RL rows of a corpus; see :func:`export_rl`."""
    from envsynth.agents.base import SYSTEM_PROMPT, with_app_policy
    from envsynth.blueprint.policy import policy_text

    c = open_corpus(corpus)
    base = SYSTEM_PROMPT if system_prompt is None else system_prompt
    rows = []
    policies: dict[str, str] = {}
    _check_filters(order, tiers, min_difficulty, max_difficulty)
    _check_min_reward(min_reward, run)
    labels = run_labels(run) if run is not None else None
    for t in _chosen(c.tasks, order, tiers, min_difficulty, max_difficulty):
        label = labels.get(t.id) if labels is not None else None
        if label is not None:
            check_version(label, t.id, t.hash, str(run))
        if not keeps(label.reward_mean if label is not None else None, min_reward):
            continue
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
                **(_label_columns(label) if labels is not None else {}),
            }
        )
    return rows


def _label_columns(label: TaskLabels | None) -> dict[str, Any]:
    """A row's run columns: the task's labels, or empty ones for a task the run never played."""
    return label.to_row() if label is not None else dict(NO_LABELS)


def _check_filters(order: str, tiers: Collection[str] | None, low: float | None, high: float | None) -> None:
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: choose corpus or difficulty")
    check_tiers(tiers)
    if low is not None and high is not None and low > high:
        raise ValueError(f"min difficulty {low:g} is above max difficulty {high:g}: no task can be both")


def check_tiers(tiers: Collection[str] | None) -> None:
    """Refuse a tier that does not exist.

    Raises:
        ValueError: an unknown tier.
    """
    unknown = sorted(set(tiers or ()) - set(TIERS))
    if unknown:
        raise ValueError(f"unknown tier {', '.join(map(repr, unknown))}: the tiers are {', '.join(TIERS)}")


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
    run: str | Path | None = None,
    min_reward: float | None = None,
) -> ExportSummary:
    """Write one RL prompt row per task of a corpus (TRL prompt-only, conversational, with tools).

    Each row: ``prompt`` (the system prompt, followed by the app's policy under "## Policy" when
    the app has one, then the instruction as the user message),
    ``tools`` (OpenAI schemas of the task's visible tools plus ``complete_task``, as
    ``corpus.start(task).tools``), ``task_id`` and ``task_hash`` (for a reward function or
    the HTTP server to start the episode), ``app``, ``kind``, and the task's ``difficulty``,
    ``tier`` and ``constructs`` (for curricula). Never the oracle, the expected effects or the
    expected answer.

    With ``run`` (an ``envsynth run`` folder on this corpus), each row also gets the run's
    results for its task (see :mod:`envsynth.export.labels`): ``attempts`` (n),
    ``pass_at_k`` (``{"1": ..., ..., "n": ...}``, the unbiased estimator), ``reward_mean``
    and ``reward_parts`` (``{part: share of attempts that passed it}``). A task the run
    never played gets ``attempts`` 0, ``reward_mean`` None and empty dicts.

    Args:
        corpus: a loaded corpus or its folder.
        out_file: the file to write.
        format: ``jsonl`` or ``parquet`` (needs ``datasets``).
        system_prompt: the system message (default: the agents' ``SYSTEM_PROMPT``; ``""`` for none).
        order: ``corpus`` (the corpus's order) or ``difficulty`` (easiest first: a curriculum).
        tiers: keep only tasks of these tiers (None: all).
        min_difficulty: keep only tasks whose difficulty score is at least this.
        max_difficulty: keep only tasks whose difficulty score is at most this.
        run: a run folder whose results label the rows.
        min_reward: keep only tasks whose mean reward in ``run`` is at least this (needs ``run``).

    Raises:
        ExportError: no valid corpus there, no trajectories in ``run``, or a run of another version of a task.
        ValueError: an unknown format, order or tier, a min difficulty above the max, or a min reward without a run.
        ImportError: Parquet without ``datasets``.
    """
    c = open_corpus(corpus)
    _check_min_reward(min_reward, run)
    rows = rl_rows(
        c, system_prompt=system_prompt, order=order, tiers=tiers, min_difficulty=min_difficulty, max_difficulty=max_difficulty, run=run
    )
    kept = [r for r in rows if keeps(r.get("reward_mean"), min_reward)]
    out = write_rows(kept, out_file, format, partial(rl_features, labelled=run is not None))
    skipped = {"below_min_reward": len(rows) - len(kept)} if min_reward is not None else {}
    return ExportSummary(out, format, len(kept), len(c.tasks), skipped)
