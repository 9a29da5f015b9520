"""What ``envsynth build --builder llm`` does, as functions the CLI calls (no typer here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsynth.llm.types import ChatModel
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.pipeline import make_client

SCRIPTED_MODEL = "scripted"
"""``--model scripted``: the shipped scripted builder (offline; designs a job board whatever the keyword)."""


def chat_model(model: str | None, base_url: str | None, api_key: str | None, concurrency: int = 8) -> ChatModel:
    """The chat model behind the builder: ``scripted`` (offline) or an OpenAI-compatible endpoint.

    Raises:
        ValueError: no model, no endpoint or key, or the openai package is missing.
    """
    if not model:
        raise ValueError("--builder llm needs --model (a model name on your endpoint, or 'scripted' for the offline demo)")
    if model == SCRIPTED_MODEL and base_url is None:
        from envsynth.llmbuild.scripted import scripted_builder

        return scripted_builder(model)
    from envsynth.llm.openai_client import OpenAIChat, check_endpoint

    check_endpoint("--builder llm", api_key, base_url)

    return OpenAIChat(model, base_url=base_url, api_key=api_key, concurrency=concurrency)


def builder_client(
    out: Path,
    *,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
    max_tokens_total: int | None = None,
    concurrency: int = 8,
) -> BuilderClient:
    """The builder client for a CLI run (see :func:`chat_model`); the cache defaults to ``OUT/.llm-cache``.

    Raises:
        ValueError: bad settings.
    """
    if max_tokens_total is not None and max_tokens_total < 1:
        raise ValueError(f"--max-tokens-total must be at least 1, got {max_tokens_total}")
    return make_client(chat_model(model, base_url, api_key, concurrency), out, cache_dir=cache_dir, max_tokens_total=max_tokens_total)


def metrics_rows(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers of ``llm_build.json`` as (label, value) rows, for a table."""
    total = metrics["client"]["total"]
    rows = [
        ("model", str(metrics["model"])),
        ("domains built", f"{len(metrics['app_names'])} of {len(metrics['domains'])}"),
        ("model calls (cache hits)", f"{total.get('calls', 0)} ({total.get('cache_hits', 0)})"),
        ("tokens (prompt / completion)", f"{total.get('prompt_tokens', 0)} / {total.get('completion_tokens', 0)}"),
        ("invalid replies corrected", str(total.get("invalid_outputs", 0))),
    ]
    for keyword, m in metrics["domains"].items():
        ct = m.get("custom_tools", {})
        dropped = ", ".join(m.get("tools_dropped", {})) or "none"
        rows.append((f"{keyword}: custom tools shipped", f"{ct.get('shipped', 0)} of {ct.get('designed', 0)} (dropped: {dropped})"))
        rows.append((f"{keyword}: debug rounds", ", ".join(f"{k} {v}" for k, v in m.get("debug_rounds", {}).items()) or "-"))
        if m.get("error"):
            rows.append((f"{keyword}: failed", str(m["error"])[:200]))
    return rows
