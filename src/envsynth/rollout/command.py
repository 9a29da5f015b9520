"""What ``envsynth run`` does, as one function the CLI calls (no typer or printing here)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from envsynth.agents.base import Policy
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.llm.openai_client import check_endpoint
from envsynth.rollout.batch import PolicyFactory, ProgressFn, RunError, UserFactory, run_batch
from envsynth.rollout.config import RunConfig
from envsynth.rollout.summary import RunSummary, ThisRun, summarize
from envsynth.rollout.trajectory import RUN_CONFIG
from envsynth.scale.executor import check_executor
from envsynth.tasks.model import Task


def run_command(config: RunConfig, progress: ProgressFn | None = None) -> RunSummary:
    """Run an agent over a corpus into ``config.out`` (resumable) and return :func:`summarize` of the run.

    The summary covers the whole run folder; its ``this_run`` says what this call did:
    episodes ``written``, pairs ``skipped`` (already in the folder) and episodes ``failed``
    (written now and ended by a model, agent or user-simulator failure). In code mode the
    blocks run in sandboxed workers from one pool made for this run (see docs/sandbox.md).

    Args:
        config: what to run (its settings were checked when it was built).
        progress: called after each episode.

    Raises:
        ValueError: no endpoint for the model (no key nor URL), or openai not installed.
        envsynth.corpus.CorpusError: the corpus cannot be read.
        envsynth.rollout.RunError: ``out`` holds another version of a task or a run in the other
            mode or with the other user-simulator setting, or ``max_errors`` episodes failed.
        KeyError: an unknown task id.
    """
    _check_run_folder(config)
    check_executor(config.executor, config.address)
    c = load_corpus(config.corpus)
    chosen: list[Task] = [c.task(t) for t in config.tasks] if config.tasks else list(c.tasks)
    if config.limit is not None:
        chosen = chosen[: config.limit]
    meta: dict[str, Any] = {"agent": config.agent, "mode": config.mode, "max_turns": config.max_turns, "max_tokens": config.max_tokens}
    llm = _agent_llm(config)
    if llm is not None:
        meta |= {"model": config.model, "base_url": llm.base_url, "temperature": config.temperature}
    users = None
    if config.user_sim:
        users = _user_factory(c, config, llm)
        meta |= {"user_sim": True, "user_model": config.user_model or config.model, "user_max_turns": config.user_max_turns}
    meta["score_rule"] = config.rule.to_dict()
    judge = _judge(config)
    if judge is not None:
        meta |= {"judge": config.judge, "judge_model": config.judge_model, "judge_base_url": judge.llm.base_url}
    spread = _open_spread(config.executor, config.address)
    sandbox = None
    if config.mode == "code":
        from envsynth.sandbox import CodeSandbox

        sandbox = CodeSandbox(workers=min(config.concurrency, 8))
        meta["sandbox"] = sandbox.mode
    try:
        result = run_batch(
            c,
            _policy_factory(config, llm),
            chosen,
            attempts=config.attempts,
            concurrency=config.concurrency,
            out=config.out,
            progress=progress,
            seed=config.seed,
            meta=meta,
            rerun_errors=config.rerun_errors,
            max_errors=config.max_errors or None,
            sandbox=sandbox,
            user_factory=users,
            executor=spread,
            score_rule=config.rule,
            judge=judge,
        )
    finally:
        _close(sandbox, spread)
    return replace(summarize(config.out), this_run=ThisRun(result.written, result.skipped, result.errors))


def _check_run_folder(config: RunConfig) -> None:
    """Refuse to resume a run folder made in the other mode or with the other user-simulator setting."""
    cfg = config.out / RUN_CONFIG
    if not cfg.is_file():
        return
    prev = json.loads(cfg.read_text(encoding="utf-8"))
    had_mode = prev.get("mode", "function")
    if had_mode != config.mode:
        raise RunError(f"{config.out} holds a {had_mode}-mode run; use a new run folder for a {config.mode}-mode run")
    if bool(prev.get("user_sim")) != config.user_sim:
        had = "with" if prev.get("user_sim") else "without"
        raise RunError(f"{config.out} holds a run {had} the user simulator; use a new run folder")
    had_rule = prev.get("score_rule", {"mode": "all"})
    if had_rule != config.rule.to_dict():
        raise RunError(
            f"{config.out} holds a run scored under the rule {had_rule}; use a new run folder, or 'envsynth regrade' to score it again"
        )


def _agent_llm(config: RunConfig) -> Any:
    """The agent's chat client (None for the oracle)."""
    if config.agent == "oracle":
        return None
    check_endpoint("the openai agent", config.api_key, config.base_url)
    from envsynth.llm.openai_client import OpenAIChat

    return OpenAIChat(
        str(config.model), base_url=config.base_url, api_key=config.api_key, concurrency=config.chat_requests, **config.params()
    )


def _judge(config: RunConfig) -> Any:
    """The LLM judge of the run (None: rule only)."""
    if config.judge is None:
        return None
    base_url = config.judge_base_url or config.base_url
    check_endpoint("the judge", config.api_key, base_url)
    from envsynth.grading.judge import Judge
    from envsynth.llm.openai_client import OpenAIChat

    return Judge(OpenAIChat(str(config.judge_model), base_url=base_url, api_key=config.api_key, concurrency=config.chat_requests))


def _policy_factory(config: RunConfig, llm: Any) -> PolicyFactory:
    """``(task, attempt) -> policy``: the oracle (of the run's mode), or a ChatAgent over ``llm``."""
    code = config.mode == "code"
    if llm is None:

        def oracle(task: Task, attempt: int) -> Policy:
            from envsynth.agents.oracle import OracleAgent
            from envsynth.agents.oracle_code import OracleCodeAgent

            return OracleCodeAgent(task) if code else OracleAgent(task, tell=config.user_sim)

        return oracle
    from envsynth.agents.chat import ChatAgent
    from envsynth.agents.codeloop import CODE_SYSTEM_PROMPT

    prompt = {"system_prompt": CODE_SYSTEM_PROMPT} if code else {}

    def chat(task: Task, attempt: int) -> Policy:
        return ChatAgent(llm, max_turns=config.max_turns, max_tokens=config.max_tokens, **prompt)

    return chat


def _user_factory(corpus: Corpus, config: RunConfig, agent_llm: Any) -> UserFactory:
    """One UserSimulator per episode over one client (the agent's, when it is the same endpoint and model)."""
    from envsynth.agents.user import UserSimulator

    model = config.user_model or str(config.model)
    base_url = config.user_base_url or config.base_url
    check_endpoint("the user simulator", config.api_key, base_url)
    if agent_llm is not None and agent_llm.model == model and base_url in (None, agent_llm.base_url):
        llm = agent_llm
    else:
        from envsynth.llm.openai_client import OpenAIChat

        llm = OpenAIChat(model, base_url=base_url, api_key=config.api_key, concurrency=config.chat_requests)

    def make(task: Task, attempt: int) -> UserSimulator:
        title = corpus.apps[task.app].blueprint.title
        return UserSimulator(llm, task, app_title=title, max_turns=config.user_max_turns, **config.params())

    return make


def failure_line(error: dict[str, Any], width: int = 300) -> str:
    """One line about a failed episode's ``error`` (as in a summary's ``errors.first``): where, and its message."""
    message = " ".join(str(error.get("message", "")).split())
    if len(message) > width:
        message = message[: width - 3] + "..."
    source = "user simulator" if error.get("source") == "user" else "model" if error.get("type") == "LLMError" else "agent"
    return f"{error.get('task_id')} attempt {error.get('attempt')}: {source} error: {message}"


def summary_rows(summary: RunSummary) -> list[tuple[str, str]]:
    """The headline numbers of a summary as (label, value) rows, for a table."""

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{100 * x:.1f}%"

    s, u = summary, summary.user_simulator
    rows = [("tasks", str(s.tasks)), ("episodes", str(s.episodes))]
    rows += [(f"pass@{k}", pct(v)) for k, v in s.pass_at.items()]
    rows += [
        ("mean turns", f"{s.mean_turns:.2f}"),
        ("tokens (total / per episode)", f"{s.tokens.total_tokens} / {s.tokens.mean_per_episode:.0f}"),
        ("tool calls", ", ".join(f"{k} {v}" for k, v in s.tool_calls.items()) or "-"),
        ("stop reasons", ", ".join(f"{k} {v}" for k, v in s.stop_reasons.items()) or "-"),
        ("unexpected failures", str(s.unexpected_failures.calls)),
        ("model errors", str(s.errors.episodes)),
        *([("user simulator (turns / tokens)", f"{u.mean_turns:.2f} / {u.total_tokens}")] if u else []),
        *[(f"left out: {label}", str(n)) for label, n in sorted(s.labelled.by_label.items())],
        ("retries", str(s.retries)),
    ]
    return rows


def agreement_rows(summary: RunSummary) -> list[tuple[str, str, str]]:
    """The rule-vs-judge table of a judged run as rows (``rule``, ``judge: pass``, ``judge: fail``); [] when nothing was judged."""
    j = summary.judge
    if j is None:
        return []
    return [
        ("rule: pass", str(j.both_pass), str(j.rule_pass_judge_fail)),
        ("rule: fail", str(j.rule_fail_judge_pass), str(j.both_fail)),
        ("agreement", f"{100 * j.agreement:.1f}% of {j.episodes}", f"judge errors {j.errors}"),
    ]


def _close(*pools: Any) -> None:
    """Close the sandbox and executor pools a run opened (None: not opened)."""
    for pool in pools:
        if pool is not None:
            pool.close()


def _open_spread(executor: str, address: str | None) -> Any:
    """The executor episodes are spread over, or None to run them in this process (``local``)."""
    from envsynth.scale.executor import open_executor

    return None if executor == "local" else open_executor(executor, address=address)
