"""What ``envsynth build --builder llm`` does, as functions the CLI calls (no typer here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsynth.errors import ConfigError
from envsynth.llm.types import ChatModel
from envsynth.llmbuild.client import CONTEXT_TOKENS, BuilderClient
from envsynth.llmbuild.pipeline import make_client

DEFAULT_TIMEOUT = 120.0
"""``--timeout``: seconds one model request may take (a request that times out is retried, then fails)."""

SCRIPTED_MODEL = "scripted"
"""``--model scripted``: the shipped scripted builder (offline; designs a job board whatever the keyword)."""


def chat_model(
    model: str | None, base_url: str | None, api_key: str | None, concurrency: int = 8, timeout: float = DEFAULT_TIMEOUT
) -> ChatModel:
    """The chat model behind the builder: ``scripted`` (offline) or an OpenAI-compatible endpoint (``timeout`` s a request).

    Raises:
        ConfigError: no model, no endpoint or key, or the openai package is missing (a ValueError).
    """
    if not model:
        raise ConfigError("the LLM builder needs a model (a model name on your endpoint, or 'scripted' for the offline demo)", "model")
    if model == SCRIPTED_MODEL and base_url is None:
        from envsynth.llmbuild.scripted import scripted_builder

        return scripted_builder(model)
    from envsynth.llm.openai_client import OpenAIChat, check_endpoint

    check_endpoint("the LLM builder", api_key, base_url)

    return OpenAIChat(model, base_url=base_url, api_key=api_key, concurrency=concurrency, timeout=timeout)


DEFAULT_TEMPERATURE = 0.2
"""``--temperature``: sent with every builder request."""

DEFAULT_LLM_SEED = 0
"""``--llm-seed``: sent with every builder request (servers that honour it sample reproducibly)."""


def builder_client(
    out: Path,
    *,
    model: str | None,
    base_url: str | None = None,
    api_key: str | None = None,
    cache_dir: Path | None = None,
    max_tokens_total: int | None = None,
    concurrency: int = 8,
    context_tokens: int = CONTEXT_TOKENS,
    max_output_tokens: int | None = None,
    temperature: float = DEFAULT_TEMPERATURE,
    llm_seed: int = DEFAULT_LLM_SEED,
    timeout: float = DEFAULT_TIMEOUT,
) -> BuilderClient:
    """The builder client for a CLI run (see :func:`chat_model`); the cache defaults to ``OUT/.llm-cache``.

    Raises:
        ConfigError: bad settings (``option`` names the parameter; a ValueError).
    """
    if max_tokens_total is not None and max_tokens_total < 1:
        raise ConfigError(f"must be at least 1, got {max_tokens_total}", "max_tokens_total")
    if context_tokens < 1024:
        raise ConfigError(f"must be at least 1024, got {context_tokens}", "context_tokens")
    if max_output_tokens is not None and not 16 <= max_output_tokens <= context_tokens - 512:
        raise ConfigError(
            f"must be 16 to {context_tokens - 512} (the context tokens less 512), got {max_output_tokens}", "max_output_tokens"
        )
    if not 0 <= temperature <= 2:
        raise ConfigError(f"must be between 0 and 2, got {temperature}", "temperature")
    if llm_seed < 0:
        raise ConfigError(f"must be 0 or more, got {llm_seed}", "llm_seed")
    if not 0 < timeout <= 3600:
        raise ConfigError(f"must be more than 0 and at most 3600 seconds, got {timeout:g}", "timeout")
    return make_client(
        chat_model(model, base_url, api_key, concurrency, timeout),
        out,
        cache_dir=cache_dir,
        max_tokens_total=max_tokens_total,
        context_tokens=context_tokens,
        max_output_tokens=max_output_tokens,
        temperature=temperature,
        seed=llm_seed,
    )


def amendment_line(amendment: dict[str, Any]) -> str:
    """One spec amendment of the debug agent in words: its round, what it changed, why, and whether it was applied."""
    keys = ", ".join(amendment.get("changes", {})) or "nothing"
    verdict = "applied" if amendment.get("accepted") else f"refused ({amendment.get('refused', '')[:120]})"
    return f"round {amendment.get('round')}: {keys} ({amendment.get('reason', '')[:120]}): {verdict}"


def metrics_rows(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers of ``llm_build.json`` as (label, value) rows, for a table."""
    total = metrics["client"]["total"]
    rows = [
        ("model", str(metrics["model"])),
        ("domains built", f"{len(metrics['app_names'])} of {len(metrics['domains'])}"),
        ("this run: model calls (cache hits)", f"{total.get('calls', 0)} ({total.get('cache_hits', 0)})"),
        ("this run: tokens (prompt / completion)", f"{total.get('prompt_tokens', 0)} / {total.get('completion_tokens', 0)}"),
        ("this run: invalid replies", str(total.get("invalid_outputs", 0))),
    ]
    cumulative = metrics.get("cumulative")
    if cumulative:
        every = cumulative["total"]
        rows.append(
            (
                f"all {cumulative['runs']} run(s): requests, tokens",
                f"{every.get('requests', every.get('calls', 0))}, {every.get('total_tokens', 0)}",
            )
        )
    for keyword, m in metrics["domains"].items():
        ct = m.get("custom_tools", {})
        dropped = ", ".join(m.get("tools_dropped", {})) or "none"
        rows.append((f"{keyword}: custom tools shipped", f"{ct.get('shipped', 0)} of {ct.get('designed', 0)} (dropped: {dropped})"))
        if m.get("design_rounds"):
            problems = " -> ".join(str(n) for n in m.get("design_problems", []))
            rows.append((f"{keyword}: design rounds (problems)", f"{m['design_rounds']} ({problems})"))
        rows.append((f"{keyword}: debug rounds", ", ".join(f"{k} {v}" for k, v in m.get("debug_rounds", {}).items()) or "-"))
        for tool, amendments in m.get("spec_amendments", {}).items():
            rows += [(f"{keyword}: {tool} spec amendment", amendment_line(a)) for a in amendments]
        if m.get("error"):
            rows.append((f"{keyword}: failed", str(m["error"])[:200]))
    return rows
