"""RL export: one prompt per corpus task (system prompt + instruction) with its tools and id."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.export.tools import open_corpus, task_tools
from envsynth.export.write import ExportSummary, rl_features, write_rows

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus


def rl_rows(corpus: Corpus | str | Path, *, system_prompt: str | None = None) -> list[dict[str, Any]]:
    """The RL rows of a corpus; see :func:`export_rl`."""
    from envsynth.agents.base import SYSTEM_PROMPT, with_app_policy
    from envsynth.blueprint.policy import policy_text

    c = open_corpus(corpus)
    base = SYSTEM_PROMPT if system_prompt is None else system_prompt
    rows = []
    policies: dict[str, str] = {}
    for t in c.tasks:
        if t.app not in policies:
            policies[t.app] = policy_text(c.apps[t.app].blueprint)
        system = with_app_policy(base, policies[t.app])
        prompt = [{"role": "system", "content": system}] if system else []
        prompt.append({"role": "user", "content": t.instruction})
        rows.append({"prompt": prompt, "tools": task_tools(c, t), "task_id": t.id, "task_hash": t.hash, "app": t.app, "kind": t.kind})
    return rows


def export_rl(
    corpus: Corpus | str | Path, out_file: str | Path, *, format: str = "jsonl", system_prompt: str | None = None
) -> ExportSummary:
    """Write one RL prompt row per task of a corpus (TRL prompt-only, conversational, with tools).

    Each row: ``prompt`` (the system prompt, followed by the app's policy under "## Policy" when
    the app has one, then the instruction as the user message),
    ``tools`` (OpenAI schemas of the task's visible tools plus ``complete_task``, as
    ``corpus.start(task).tools``), ``task_id`` and ``task_hash`` (for a reward function or
    the HTTP server to start the episode), ``app`` and ``kind``. Never the oracle, the
    expected effects or the expected answer.

    Args:
        corpus: a loaded corpus or its folder.
        out_file: the file to write.
        format: ``jsonl`` or ``parquet`` (needs ``datasets``).
        system_prompt: the system message (default: the agents' ``SYSTEM_PROMPT``; ``""`` for none).

    Raises:
        ExportError: no valid corpus there.
        ValueError: an unknown format.
        ImportError: Parquet without ``datasets``.
    """
    c = open_corpus(corpus)
    rows = rl_rows(c, system_prompt=system_prompt)
    out = write_rows(rows, out_file, format, rl_features)
    return ExportSummary(out, format, len(rows), len(c.tasks), {})
