"""What ``envsynth run`` does, as one function the CLI calls (no typer or printing here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envsynth.agents.base import DEFAULT_MAX_TURNS, Policy
from envsynth.agents.user import DEFAULT_USER_TURNS
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.llm.openai_client import check_endpoint
from envsynth.rollout.batch import ProgressFn, RunError, UserFactory, run_batch
from envsynth.rollout.spread import check_spread_run
from envsynth.rollout.summary import summarize
from envsynth.rollout.trajectory import RUN_CONFIG
from envsynth.tasks.model import Task

AGENTS = ("openai", "code", "oracle")
"""``code`` is ``openai`` in code mode (``--agent code`` = ``--agent openai --mode code``)."""
MODES = ("function", "code")


def run_command(
    corpus: str | Path,
    *,
    out: str | Path,
    agent: str = "openai",
    mode: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    attempts: int = 1,
    concurrency: int = 8,
    requests: int | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_tokens: int | None = None,
    temperature: float | None = None,
    tasks: list[str] | None = None,
    limit: int | None = None,
    seed: int = 0,
    rerun_errors: bool = False,
    max_errors: int | None = 20,
    progress: ProgressFn | None = None,
    user_sim: bool = False,
    user_model: str | None = None,
    user_base_url: str | None = None,
    user_max_turns: int = DEFAULT_USER_TURNS,
    executor: str = "local",
    address: str | None = None,
) -> dict[str, Any]:
    """Run an agent over a corpus into ``out`` (resumable) and return :func:`summarize` of the run.

    The summary covers the whole run folder; its ``this_run`` says what this call did:
    episodes ``written``, pairs ``skipped`` (already in the folder) and episodes ``failed``
    (written now and ended by a model, agent or user-simulator failure).

    Args:
        corpus: the corpus folder.
        out: the run folder.
        agent: ``openai`` (a ChatAgent over an OpenAI-compatible endpoint), ``code`` (the same
            in code mode) or ``oracle``.
        mode: ``function`` (function calling) or ``code`` (the agent writes Python blocks,
            run in sandboxed workers from one pool made for this run; see docs/sandbox.md);
            default ``code`` for ``--agent code``, else ``function``.
        model: the model name (required for ``openai``).
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI).
        api_key: default ``OPENAI_API_KEY``.
        attempts: k attempts per task.
        concurrency: episodes in flight.
        requests: model requests in flight at most (default: ``concurrency``).
        max_turns: model calls per episode.
        max_tokens: tokens per episode (None: no limit).
        temperature: sampling temperature (None: the server's default).
        tasks: task ids to run (default: all).
        limit: run only the first ``limit`` tasks.
        seed: base episode seed (attempt ``a`` uses ``seed + a``).
        rerun_errors: run again the episodes a model failure ended in an earlier call.
        max_errors: stop after this many failed episodes (None: never).
        progress: called after each episode.
        user_sim: an LLM plays the user (tau2-style, :mod:`envsynth.agents.user`): it opens
            the conversation and answers the agent's questions; off by default.
        user_model: the user simulator's model (default: ``model``).
        user_base_url: its endpoint (default: ``base_url``).
        user_max_turns: the user simulator's replies per episode at most.
        executor: ``local`` (this process) or ``ray`` (episodes spread over a Ray cluster,
            ``concurrency`` at a time; see docs/scale.md).
        address: the Ray cluster (default: ``RAY_ADDRESS``, else a local Ray instance).

    Raises:
        ValueError: bad settings (unknown agent or mode, no model, a count out of range such as
            attempts < 1 or seed < 0, a negative temperature, openai not installed), named by
            their command-line flags.
        envsynth.corpus.CorpusError: the corpus cannot be read.
        envsynth.rollout.RunError: ``out`` holds another version of a task or a run in the other
            mode, or ``max_errors`` episodes failed.
        KeyError: an unknown task id.
    """
    if agent not in AGENTS:
        raise ValueError(f"--agent: unknown agent {agent!r} (choose from {', '.join(AGENTS)})")
    if agent == "code":
        if mode not in (None, "code"):
            raise ValueError(f"--agent code acts in code mode; drop --mode {mode} or use --agent openai")
        agent, mode = "openai", "code"
    mode = mode or "function"
    if mode not in MODES:
        raise ValueError(f"--mode: unknown mode {mode!r} (choose from {', '.join(MODES)})")
    _check_counts(attempts, concurrency, max_turns, user_max_turns, requests, max_tokens, limit, seed, max_errors)
    check_spread_run(executor=executor, address=address, mode=mode, user_sim=user_sim)
    if temperature is not None and temperature < 0:
        raise ValueError(f"--temperature must be 0 or more, got {temperature}")
    if user_sim and not (user_model or (agent == "openai" and model)):
        raise ValueError("--user-sim needs --user-model (or --model with --agent openai)")
    cfg = Path(out) / RUN_CONFIG
    if cfg.is_file():
        prev = json.loads(cfg.read_text(encoding="utf-8"))
        if prev.get("mode", "function") != mode:
            raise RunError(f"{out} holds a --mode {prev.get('mode', 'function')} run; use a new run folder for --mode {mode}")
        if bool(prev.get("user_sim")) != user_sim:
            had = "with" if prev.get("user_sim") else "without"
            raise RunError(f"{out} holds a run {had} --user-sim; use a new run folder")
    c = load_corpus(corpus)
    chosen: list[Task] = [c.task(t) for t in tasks] if tasks else list(c.tasks)
    if limit is not None:
        chosen = chosen[:limit]
    meta: dict[str, Any] = {"agent": agent, "mode": mode, "max_turns": max_turns, "max_tokens": max_tokens}
    llm: Any = None
    if agent == "oracle":

        def factory(task: Task, attempt: int) -> Policy:
            from envsynth.agents.oracle import OracleAgent
            from envsynth.agents.oracle_code import OracleCodeAgent

            return OracleCodeAgent(task) if mode == "code" else OracleAgent(task)

    else:
        if not model:
            raise ValueError("--model is required with --agent openai")
        check_endpoint("--agent openai", api_key, base_url)
        from envsynth.agents.chat import ChatAgent
        from envsynth.llm.openai_client import OpenAIChat

        params = {} if temperature is None else {"temperature": temperature}
        llm = OpenAIChat(model, base_url=base_url, api_key=api_key, concurrency=requests or concurrency, **params)
        meta |= {"model": model, "base_url": llm.base_url, "temperature": temperature}

        from envsynth.agents.codeact import CODE_SYSTEM_PROMPT

        prompt = {"system_prompt": CODE_SYSTEM_PROMPT} if mode == "code" else {}

        def factory(task: Task, attempt: int) -> Policy:
            return ChatAgent(llm, max_turns=max_turns, max_tokens=max_tokens, **prompt)

    users = None
    if user_sim:
        users = _user_factory(
            c, user_model or str(model), user_base_url or base_url, api_key, requests or concurrency, temperature, user_max_turns, llm
        )
        meta |= {"user_sim": True, "user_model": user_model or model, "user_max_turns": user_max_turns}

    spread = _open_spread(executor, address)
    sandbox = None
    if mode == "code":
        from envsynth.sandbox import CodeSandbox

        sandbox = CodeSandbox(workers=min(concurrency, 8))
        meta["sandbox"] = sandbox.mode
    try:
        result = run_batch(
            c,
            factory,
            chosen,
            attempts=attempts,
            concurrency=concurrency,
            out=out,
            progress=progress,
            seed=seed,
            meta=meta,
            rerun_errors=rerun_errors,
            max_errors=max_errors,
            sandbox=sandbox,
            user_factory=users,
            executor=spread,
        )
    finally:
        _close(sandbox, spread)
    return {**summarize(out), "this_run": {"written": result.written, "skipped": result.skipped, "failed": result.errors}}


def _close(*pools: Any) -> None:
    """Close the sandbox and executor pools a run opened (None: not opened)."""
    for pool in pools:
        if pool is not None:
            pool.close()


def _open_spread(executor: str, address: str | None) -> Any:
    """The executor episodes are spread over, or None to run them in this process (``local``)."""
    from envsynth.scale.executor import open_executor

    return None if executor == "local" else open_executor(executor, address=address)


def _check_counts(
    attempts: int,
    concurrency: int,
    max_turns: int,
    user_max_turns: int,
    requests: int | None,
    max_tokens: int | None,
    limit: int | None,
    seed: int,
    max_errors: int | None,
) -> None:
    """Refuse a meaningless count with a ValueError that names its flag."""
    if attempts < 1 or concurrency < 1 or max_turns < 1 or user_max_turns < 1:
        raise ValueError("--attempts, --concurrency, --max-turns and --user-max-turns must be at least 1")
    for flag, value in (("--requests", requests), ("--max-tokens", max_tokens), ("--limit", limit)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1, got {value}")
    if seed < 0:
        raise ValueError(f"--seed must be 0 or more, got {seed}")
    if max_errors is not None and max_errors < 0:
        raise ValueError(f"--max-errors must be 0 (never stop) or more, got {max_errors}")


def _user_factory(
    corpus: Corpus,
    model: str,
    base_url: str | None,
    api_key: str | None,
    requests: int,
    temperature: float | None,
    max_turns: int,
    agent_llm: Any,
) -> UserFactory:
    """One UserSimulator per episode over one client (the agent's, when it is the same endpoint and model)."""
    from envsynth.agents.user import UserSimulator

    check_endpoint("--user-sim", api_key, base_url)
    if agent_llm is not None and agent_llm.model == model and base_url in (None, agent_llm.base_url):
        llm = agent_llm
    else:
        from envsynth.llm.openai_client import OpenAIChat

        llm = OpenAIChat(model, base_url=base_url, api_key=api_key, concurrency=requests)
    params = {} if temperature is None else {"temperature": temperature}

    def make(task: Task, attempt: int) -> UserSimulator:
        title = corpus.apps[task.app].blueprint.title
        return UserSimulator(llm, task, app_title=title, max_turns=max_turns, **params)

    return make


def failure_line(error: dict[str, Any], width: int = 300) -> str:
    """One line about a failed episode's ``error`` (as in a summary's ``errors.first``): where, and its message."""
    message = " ".join(str(error.get("message", "")).split())
    if len(message) > width:
        message = message[: width - 3] + "..."
    source = "user simulator" if error.get("source") == "user" else "model" if error.get("type") == "LLMError" else "agent"
    return f"{error.get('task_id')} attempt {error.get('attempt')}: {source} error: {message}"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The headline numbers of a summary as (label, value) rows, for a table."""

    def pct(x: Any) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    rows = [("tasks", str(summary["tasks"])), ("episodes", str(summary["episodes"]))]
    rows += [(k, pct(v)) for k, v in summary.items() if k.startswith("pass@") and not k.startswith("pass@1_")]
    rows += [
        ("mean turns", f"{summary['mean_turns']:.2f}"),
        ("tokens (total / per episode)", f"{summary['tokens']['total_tokens']} / {summary['tokens']['mean_per_episode']:.0f}"),
        ("tool calls", ", ".join(f"{k} {v}" for k, v in summary["tool_calls"].items()) or "-"),
        ("stop reasons", ", ".join(f"{k} {v}" for k, v in summary["stop_reasons"].items()) or "-"),
        ("unexpected failures", str(summary["unexpected_failures"]["calls"])),
        ("model errors", str(summary["errors"]["episodes"])),
        *(
            [("user simulator (turns / tokens)", f"{u['mean_turns']:.2f} / {u['total_tokens']}")]
            if (u := summary.get("user_simulator"))
            else []
        ),
        ("retries", str(summary["retries"])),
    ]
    return rows
