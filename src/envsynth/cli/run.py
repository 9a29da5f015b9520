"""``envsynth run``: an agent over a corpus, its settings built from the flags as one RunConfig."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from envsynth.cli.common import (
    _stage_bar,
    _value_table,
    app,
    console,
    err,
    fail,
    warn,
    with_corpus_flag,
)
from envsynth.cli.errors import error_line
from envsynth.errors import EnvsynthError

_Help = typer.Option  # the run command's options, declared once here so that its signature stays short


_RunAgent = Annotated[
    str,
    _Help(
        help="openai (a model on an OpenAI-compatible endpoint), code (the same model writing Python: "
        "--agent openai --mode code) or oracle (replays the solutions)."
    ),
]


_RunMode = Annotated[
    str | None,
    _Help(
        help="function (function calling) or code (the agent writes Python blocks, run in a sandbox). "
        "Default: code for --agent code, else function."
    ),
]


_RunBaseUrl = Annotated[str | None, _Help("--base-url", help="API root, e.g. http://localhost:8000/v1 (default: OPENAI_BASE_URL).")]


_RunRerun = Annotated[
    bool,
    _Help(
        "--rerun-errors",
        help="Run again the episodes that a model, agent or user-simulator failure ended in an earlier run "
        "(a rerun without it keeps them as they are).",
    ),
]


_RunUserSim = Annotated[
    bool,
    _Help(
        "--user-sim/--no-user-sim",
        help="An LLM plays the user (tau2-style): it opens in its own words, answers the agent's questions "
        "from the user profile, and ends the conversation when satisfied. Off: the instruction is the first message.",
    ),
]


_RunScoreRule = Annotated[
    str,
    _Help(
        "--score-rule",
        help="How the reward's parts (state, answer, policy, communication) make the score: all (1 when every part "
        "passes, else 0) or weighted (the share of --weights of the parts that pass).",
    ),
]
_RunWeights = Annotated[
    str | None, _Help(help="--score-rule weighted: weights as state=0.6,answer=0.3,policy=0.1 (a part not named weighs 1).")
]
_RunJudge = Annotated[
    str | None,
    _Help(
        help="openai: an LLM judge on an OpenAI-compatible endpoint grades every episode after the rule (its verdict "
        "is the reward; the summary prints a rule-vs-judge table; see docs/grading.md). Default: rule only, offline.",
    ),
]


@app.command()
def run(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    out: Annotated[Path, _Help("--out", "-o", help="The run folder: trajectories.jsonl + run.json (rerun to resume).")],
    agent: _RunAgent = "openai",
    mode: _RunMode = None,
    model: Annotated[str | None, _Help(help="The model name (--agent openai).")] = None,
    base_url: _RunBaseUrl = None,
    api_key: Annotated[str | None, _Help("--api-key", help="The API key (default: OPENAI_API_KEY).")] = None,
    attempts: Annotated[int, _Help("--attempts", "-k", help="Attempts per task (pass@k).")] = 1,
    concurrency: Annotated[int, _Help("--concurrency", "-c", help="Episodes in flight.")] = 8,
    requests: Annotated[int | None, _Help(help="Model requests in flight at most (default: --concurrency).")] = None,
    max_turns: Annotated[int, _Help("--max-turns", help="Model calls per episode.")] = 30,
    max_tokens: Annotated[int | None, _Help("--max-tokens", help="Tokens per episode (default: no limit).")] = None,
    temperature: Annotated[float | None, _Help(help="Sampling temperature (default: the server's).")] = None,
    task: Annotated[list[str] | None, _Help("--task", help="Run only this task id (repeatable).")] = None,
    limit: Annotated[int | None, _Help(help="Run only the first N tasks.")] = None,
    seed: Annotated[int, _Help(help="Base episode seed (attempt a uses seed + a).")] = 0,
    rerun_errors: _RunRerun = False,
    max_errors: Annotated[int, _Help("--max-errors", help="Stop after N failed episodes (0: never).")] = 20,
    user_sim: _RunUserSim = False,
    user_model: Annotated[str | None, _Help("--user-model", help="The user simulator's model (default: --model).")] = None,
    user_base_url: Annotated[str | None, _Help("--user-base-url", help="The user simulator's API root (default: --base-url).")] = None,
    user_max_turns: Annotated[int, _Help("--user-max-turns", help="User simulator replies per episode at most.")] = 10,
    executor: Annotated[
        str,
        _Help(
            help="local (episodes in this process) or ray (episodes spread over a Ray cluster, --concurrency at a "
            "time; every worker reads CORPUS at the same path and calls the same --base-url; needs envsynth[ray]; "
            "see docs/scale.md).",
        ),
    ] = "local",
    address: Annotated[
        str | None,
        _Help(
            help="--executor ray: the cluster (auto, host:6379 or ray://host:10001; default RAY_ADDRESS, else the one "
            "'ray start' made here, else a new Ray instance on this machine).",
        ),
    ] = None,
    score_rule: _RunScoreRule = "all",
    weights: _RunWeights = None,
    judge: _RunJudge = None,
    judge_model: Annotated[str | None, _Help("--judge-model", help="The judge's model (required with --judge).")] = None,
    judge_base_url: Annotated[str | None, _Help("--judge-base-url", help="The judge's API root (default: --base-url).")] = None,
    as_json: Annotated[bool, _Help("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run an agent on a corpus's tasks (k attempts each) and summarize: pass@1, pass@k, turns, tokens.

    The model is any OpenAI-compatible endpoint (--base-url, or OPENAI_BASE_URL and
    OPENAI_API_KEY). Rerun the same command to resume an interrupted run. --executor ray
    runs the episodes on a Ray cluster (see docs/scale.md).
    """
    from envsynth.rollout.config import RunConfig

    flags = {"tasks": "--task"}
    config = _config(
        RunConfig,
        flags,
        corpus=corpus,
        out=out,
        agent=agent,
        mode=mode,
        model=model,
        base_url=base_url,
        api_key=api_key,
        attempts=attempts,
        concurrency=concurrency,
        requests=requests,
        max_turns=max_turns,
        max_tokens=max_tokens,
        temperature=temperature,
        tasks=task,
        limit=limit,
        seed=seed,
        rerun_errors=rerun_errors,
        max_errors=max_errors,
        user_sim=user_sim,
        user_model=user_model,
        user_base_url=user_base_url,
        user_max_turns=user_max_turns,
        executor=executor,
        address=address,
        score_rule=score_rule,
        weights=weights,
        judge=judge,
        judge_model=judge_model,
        judge_base_url=judge_base_url,
    )
    _run_and_summarize(config, as_json)


def _config(cls: Any, flags: dict[str, str], **values: Any) -> Any:
    """``cls(**values)`` (a pydantic config), or a one-line error naming the flags of what is wrong.

    A field's flag is ``--`` and its name with dashes unless ``flags`` says otherwise.
    """
    from pydantic import ValidationError

    try:
        return cls(**values)
    except ValidationError as exc:
        problems = []
        for e in exc.errors(include_url=False):
            field = ".".join(str(x) for x in e["loc"])
            where = flags.get(field, "--" + field.replace("_", "-")) if field else ""
            got = f" (got {e['input']!r})" if field and e["type"] != "value_error" and not isinstance(e["input"], dict) else ""
            problems.append(f"{where + ': ' if where else ''}{e['msg'].removeprefix('Value error, ')}{got}")
        fail("; ".join(problems))


def _run_and_summarize(config: Any, as_json: bool) -> None:
    """Run ``config`` under a progress bar, print its summary, and name its failures (exit 1 when all failed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from envsynth.rollout.command import run_command, summary_rows

    started = time.perf_counter()
    with Progress(TextColumn("run"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err, transient=True) as bar:
        job = bar.add_task("run", total=None)
        try:
            summary = run_command(config, progress=lambda done, total, traj: bar.update(job, completed=done, total=total))
        except (EnvsynthError, ValueError) as exc:  # (a ValueError: a deeper library call's plain one)
            fail(error_line(exc))
        except KeyError as exc:
            fail(str(exc.args[0]) if exc.args else str(exc))
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        console.print(_value_table(f"run {config.out}", summary_rows(summary)))
        _print_agreement(summary)
        console.print(_run_line(summary, config.out, time.perf_counter() - started))
    _report_failed_episodes(summary)


def _print_agreement(summary: Any) -> None:
    """The rule-vs-judge table of a judged run (nothing without a judge)."""
    from rich.table import Table

    from envsynth.rollout.command import agreement_rows

    rows = agreement_rows(summary)
    if not rows:
        return
    t = Table(title="rule vs judge")
    for col in ("", "judge: pass", "judge: fail"):
        t.add_column(col)
    for row in rows:
        t.add_row(*row)
    console.print(t)


@app.command()
def regrade(
    run_dir: Annotated[Path, typer.Argument(help="A finished run folder (envsynth run CORPUS --out RUN_DIR).")],
    corpus: Annotated[Path | None, _Help(help="The corpus (default: the one in run.json).")] = None,
    score_rule: Annotated[str | None, _Help("--score-rule", help="all or weighted (default: the run's rule).")] = None,
    weights: _RunWeights = None,
    judge: _RunJudge = None,
    judge_model: Annotated[str | None, _Help("--judge-model", help="The judge's model (required with --judge).")] = None,
    judge_base_url: Annotated[str | None, _Help("--judge-base-url", help="The judge's API root (default: OPENAI_BASE_URL).")] = None,
    api_key: Annotated[str | None, _Help("--api-key", help="The judge's API key (default: OPENAI_API_KEY).")] = None,
    as_json: Annotated[bool, _Help("--json", help="Print what changed as JSON.")] = False,
) -> None:
    """Score a finished run's episodes again with the current grader (no agent calls) and print what flipped.

    Each episode's effects are read from its trajectory, or replayed from its recorded tool
    calls (older runs). The new rewards go to RUN_DIR/regraded.jsonl beside the old ones;
    summaries and exports read them from there.
    """
    from envsynth.rollout.regrade import regrade as do_regrade
    from envsynth.runtime.parts import ScoreRule

    try:
        rule = None if score_rule is None and weights is None else ScoreRule.parse(score_rule or "weighted", weights)
    except ValueError as exc:
        fail(f"--score-rule/--weights: {exc}")
    the_judge = _regrade_judge(judge, judge_model, judge_base_url, api_key)
    bar, progress = _stage_bar("regrade")
    with bar:
        try:
            result = do_regrade(run_dir, corpus=corpus, rule=rule, judge=the_judge, progress=lambda d, t: progress("episodes", d, t))
        except (EnvsynthError, ValueError) as exc:
            fail(with_corpus_flag(error_line(exc)))
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    console.print(_value_table(f"regrade {run_dir}", _regrade_rows(result)))
    console.print(
        f"regrade: {result.episodes} episodes, {len(result.fail_to_pass)} now pass, {len(result.pass_to_fail)} now fail -> {result.out_file}"
    )


def _regrade_judge(judge: str | None, model: str | None, base_url: str | None, api_key: str | None) -> Any:
    if judge is None:
        return None
    if judge != "openai":
        fail(f"--judge {judge!r}: the judge is 'openai' (any OpenAI-compatible endpoint)")
    if not model:
        fail("--judge openai needs --judge-model")
    from envsynth.grading.judge import Judge
    from envsynth.llm.openai_client import OpenAIChat, check_endpoint

    try:
        check_endpoint("the judge", api_key, base_url)
    except ValueError as exc:
        fail(str(exc))
    return Judge(OpenAIChat(model, base_url=base_url, api_key=api_key))


def _regrade_rows(result: Any) -> list[tuple[str, str]]:
    def first(ids: list[str]) -> str:
        return ", ".join(ids[:5]) + (f" (+{len(ids) - 5})" if len(ids) > 5 else "") if ids else "-"

    rows = [
        ("episodes regraded", str(result.episodes)),
        ("effects replayed", str(result.replayed)),
        ("fail -> pass", f"{len(result.fail_to_pass)}: {first(result.fail_to_pass)}"),
        ("pass -> fail", f"{len(result.pass_to_fail)}: {first(result.pass_to_fail)}"),
    ]
    rows += [(f"kept ({why})", str(n)) for why, n in sorted(result.kept.items())]
    rows += [(f"labelled {label}", str(n)) for label, n in sorted(result.labels.items())]
    if result.judged:
        rows.append(("judge agrees with the rule", f"{result.agree} of {result.judged}"))
    return rows


def _run_line(summary: Any, out: Path, seconds: float) -> str:
    """The one-line summary (a RunSummary) that ends ``envsynth run``."""
    k = summary.attempts_per_task
    rates = [f"pass@{n} {rate:.3f}" for n, rate in summary.pass_at.items() if rate is not None and (n == 1 or n == k > 1)]
    return f"run: {summary.episodes} episodes of {summary.tasks} tasks{', ' if rates else ''}{', '.join(rates)} in {seconds:.1f}s -> {out}"


def _all_episodes(n: int) -> str:
    return "the 1 episode" if n == 1 else f"all {n} episodes"


def _report_failed_episodes(summary: Any) -> None:
    """Name the first failure of a run's failed episodes; exit 1 when every episode failed.

    Every episode: of this call, when it ran some; else of the run folder (a rerun that
    skipped the failed episodes, without --rerun-errors).
    """
    from envsynth.rollout.command import failure_line

    errors, episodes = summary.errors.episodes, summary.episodes
    if not errors:
        return
    first = failure_line(summary.errors.first[0])
    now = summary.this_run
    if now.written and now.failed == now.written:
        fail(
            f"{_all_episodes(now.written)} run now failed; the first failure of the run: {first}"
            " (fix the cause, then rerun with --rerun-errors)",
            1,
        )
    if not now.written and errors == episodes:
        fail(f"{_all_episodes(episodes)} failed; the first: {first} (fix the cause, then rerun with --rerun-errors)", 1)
    warn(
        "warning",
        f"{errors} of {episodes} episodes failed; the first: {first} (rerun with --rerun-errors to run them again)",
        "yellow",
    )
