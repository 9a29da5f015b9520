"""The ``envsynth`` command: a thin layer over the library."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from envsynth.cli_errors import error_line
from envsynth.errors import EnvsynthError


class _Commands(TyperGroup):
    """envsynth's commands: an :class:`EnvsynthError` that no command caught ends it with one line, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EnvsynthError as exc:
            fail(error_line(exc))


app = typer.Typer(
    cls=_Commands,
    name="envsynth",
    help="Mill executable, verifiable tool-use environments (apps) and tasks for training LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain text: "pip install 'envsynth[datasets]'" keeps its brackets
)
PLAIN_WIDTH = 1000
"""The width of tables printed to a pipe or a file: wide enough that no cell is cut."""
# Markup is off on both consoles: names, paths and error messages come from users, blueprints
# and models and are printed as they are ("[positive]", "[bold]"); styles are given as Text.
console = Console(emoji=False, markup=False, highlight=False, width=None if sys.stdout.isatty() else PLAIN_WIDTH)
err = Console(stderr=True, emoji=False, markup=False, highlight=False)


def _version(value: bool) -> None:
    if value:
        from envsynth import __version__

        print(f"envsynth {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the envsynth version and exit.")
    ] = False,
) -> None:
    """Mill executable, verifiable tool-use environments (apps) and tasks for training LLM agents."""


def styled(text: str, style: str) -> Text:
    """``text`` in ``style`` (a table cell or a line prefix), never read as markup."""
    return Text(text, style=style)


def warn(label: str, message: str, style: str = "red") -> None:
    """Print ``label: message`` on one line of stderr, the label in ``style``."""
    err.print(Text.assemble((f"{label}:", style), " ", message), soft_wrap=True)


def fail(message: str, code: int = 2) -> None:
    """Print a one-line error and exit non-zero (never a traceback); a message of several lines is joined."""
    warn("error", " ".join(line.strip() for line in message.splitlines() if line.strip()), "bold red")
    raise typer.Exit(code)


@app.command()
def catalog(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """List the shipped domain blueprints (the values of --domain)."""
    from envsynth import catalog as cat
    from envsynth.blueprint.errors import BlueprintError

    rows = []
    for e in cat.entries():
        try:
            bp = cat.load(e.name)
        except BlueprintError as exc:
            fail(str(exc))
        writes = sum(
            a.kind in ("create", "update", "delete", "transition", "transfer", "book") or getattr(a, "mode", "") == "write"
            for a in bp.actions
        )
        rows.append(
            {
                "name": bp.name,
                "title": bp.title,
                "category": bp.category,
                "tables": len(bp.entities),
                "tools": len(bp.actions),
                "writes": writes,
                "description": bp.description,
            }
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title="envsynth catalogue")
    for col in ("name", "title", "category", "tables", "tools", "writes"):
        t.add_column(col, justify="right" if col in ("tables", "tools", "writes") else "left")
    for r in rows:
        t.add_row(r["name"], r["title"], r["category"], str(r["tables"]), str(r["tools"]), str(r["writes"]))
    console.print(t)


def _blueprints(domains: list[str] | None, blueprints: list[Path] | None) -> list[Any]:
    from envsynth import catalog as cat
    from envsynth.blueprint.errors import BlueprintError
    from envsynth.blueprint.load import load_blueprint

    try:
        out = [load_blueprint(p) for p in blueprints or []]
        if domains:
            out += [cat.load(d) for d in domains]
        if not out:
            out = [cat.load(n) for n in cat.names()]
    except BlueprintError as exc:
        fail(str(exc) + (f"; `envsynth check {exc.source}` lists them all" if len(exc.all) > 1 and exc.source else ""))
    names = [b.name for b in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        fail(f"two blueprints are named {sorted(dup)}; app names must be unique in one build")
    return out


@app.command()
def check(
    files: Annotated[list[Path], typer.Argument(help="Blueprint YAML files to check.", metavar="FILE.yaml...", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report instead of lines.")] = False,
) -> None:
    """Check blueprint files without building them: every problem at once, one line each.

    Each problem is printed as FILE: PATH: MESSAGE, where PATH points at the key
    (actions[3].pre[1], entities[0].fields[2].type) and MESSAGE says what is allowed there,
    with a suggestion for a misspelt key or value. A clean file prints one line:
    FILE: ok: NAME: E entities, A actions, T tools.

    Besides the structure and every cross reference, the check compiles the app (schema,
    tools, sample state) as `envsynth build` does before testing, and runs each pre-condition,
    message and set value once on typed sample values: a condition that cannot run whatever
    the data (a date compared with a number, a list given to exists()) is reported too.
    Nothing is written. Exit status: 0 when every file is clean, 2 when any has a problem.
    """
    from envsynth.check import check_file

    reports = [_check_one(f, check_file) for f in files]
    if as_json:
        print(json.dumps({"ok": all(r.ok for r in reports), "files": [r.to_json() for r in reports]}, indent=2))
    else:
        for r in reports:
            for line in r.lines():
                console.print(line, soft_wrap=True)
    if not all(r.ok for r in reports):
        raise typer.Exit(2)


def _check_one(path: Path, check_file: Any) -> Any:
    """The check report of one file; a crash of the checker itself is reported as a problem of that file, on one line."""
    from envsynth.blueprint.errors import BlueprintError
    from envsynth.check import CheckReport

    try:
        return check_file(path)
    except Exception as exc:  # recorded: printed as the file's problem, named as a bug of envsynth
        problem = BlueprintError("", f"internal error of envsynth check (a bug, please report it): {type(exc).__name__}: {exc}", str(path))
        return CheckReport(str(path), [problem])


_LLM = "--builder llm: "
_Out = Annotated[Path, typer.Argument(help="Folder to build into: apps in OUT/apps/<app>/, tasks in OUT/tasks/, OUT/corpus.json.")]
_Domains = Annotated[list[str] | None, typer.Option("--domain", "-d", help="Shipped domain to build (repeatable; default: all).")]
_Blueprints = Annotated[list[Path] | None, typer.Option("--blueprint", "-b", help="Your own blueprint YAML file (repeatable).")]
_Seed = Annotated[int, typer.Option(help="Seed for sample data, fixtures, ids and tasks.")]
_KeepFailed = Annotated[bool, typer.Option(help="Keep OUT/apps/<app>.failed/ folders of apps whose tests fail, for inspection.")]
_Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Rebuild an app whose folder also holds files envsynth did not write: its own files are replaced, "
        "the others kept. A folder envsynth did not write is never replaced.",
    ),
]
_Json = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
_Apps = Annotated[int | None, typer.Option("--apps", "-A", help="A: build only the first A domains (default: all).")]
_T = Annotated[int, typer.Option("--tasks-per-app", "-T", help="T: tasks per app; 0 builds apps only.")]
_S = Annotated[int, typer.Option("--states", "-S", help="S: initial states per task.")]
_D = Annotated[int, typer.Option("--distractors", "-D", help="D: distractor depth, 0 to 4.")]
_Workers = Annotated[
    int | None,
    typer.Option(
        "--workers",
        "-w",
        help="Processes building apps and their tasks in parallel, with or without -T (default 1; 0: one per CPU). "
        "With --executor ray: Ray tasks in flight at most (default: the cluster's CPUs).",
    ),
]
_Executor = Annotated[
    str,
    typer.Option(
        help="local (processes on this machine) or ray (app builds and task indexes spread over a Ray cluster; "
        "the same files as a local build; needs envsynth[ray]; see docs/scale.md).",
    ),
]
_Address = Annotated[
    str | None,
    typer.Option(
        help="--executor ray: the cluster (auto, host:6379 or ray://host:10001; default RAY_ADDRESS, else the one "
        "'ray start' made here, else a new Ray instance on this machine). Workers must see OUT at the same path.",
    ),
]
_Builder = Annotated[
    str,
    typer.Option(
        help="procedural (the shipped catalogue and your YAML, offline) or llm (a model designs, codes, tests "
        "and debugs a new domain per --domain keyword; see docs/llm-builder.md)."
    ),
]
_Model = Annotated[str | None, typer.Option(help=_LLM + "the model (on --base-url, or OPENAI_BASE_URL); 'scripted' runs the offline demo.")]
_BaseUrl = Annotated[str | None, typer.Option("--base-url", help=_LLM + "API root, e.g. http://localhost:8000/v1.")]
_ApiKey = Annotated[str | None, typer.Option("--api-key", help=_LLM + "the API key (default: OPENAI_API_KEY).")]
_Descriptions = Annotated[
    list[str] | None, typer.Option("--description", help=_LLM + "a description of the domain, one per --domain, in the same order.")
]
_MaxTokens = Annotated[
    int | None, typer.Option("--max-tokens-total", help=_LLM + "stop cleanly once this many tokens are spent (rerun to resume).")
]
_CacheDir = Annotated[Path | None, typer.Option("--cache-dir", help=_LLM + "the reply cache (default OUT/.llm-cache).")]
_Rounds = Annotated[int, typer.Option("--debug-rounds", help=_LLM + "debug agent rounds per custom tool.")]
_Writer = Annotated[bool, typer.Option("--task-writer/--no-task-writer", help=_LLM + "the model rewrites each task's instruction.")]
_Gating = Annotated[bool, typer.Option("--gating/--no-gating", help=_LLM + "LLM-gated expansion of each task's tools.")]
_Tau = Annotated[float, typer.Option(help=_LLM + "the gating threshold: expand while p >= tau.")]
_Context = Annotated[int, typer.Option("--context-tokens", help=_LLM + "the model's context length; prompts are fitted to it.")]
_MaxOut = Annotated[
    int | None, typer.Option("--max-output-tokens", help=_LLM + "max_tokens of a request at most (default: what the context leaves).")
]
_Temperature = Annotated[float, typer.Option("--temperature", help=_LLM + "the sampling temperature of every request.")]
_LLMSeed = Annotated[int, typer.Option("--llm-seed", help=_LLM + "the seed sent with every request.")]


@app.command()
def build(
    out: _Out,
    domain: _Domains = None,
    blueprint: _Blueprints = None,
    seed: _Seed = 0,
    keep_failed: _KeepFailed = False,
    force: _Force = False,
    as_json: _Json = False,
    apps: _Apps = None,
    tasks_per_app: _T = 0,
    states: _S = 1,
    distractors: _D = 0,
    workers: _Workers = None,
    executor: _Executor = "local",
    address: _Address = None,
    builder: _Builder = "procedural",
    model: _Model = None,
    base_url: _BaseUrl = None,
    api_key: _ApiKey = None,
    description: _Descriptions = None,
    max_tokens_total: _MaxTokens = None,
    cache_dir: _CacheDir = None,
    debug_rounds: _Rounds = 3,
    task_writer: _Writer = True,
    gating: _Gating = True,
    tau: _Tau = 0.5,
    context_tokens: _Context = 8192,
    max_output_tokens: _MaxOut = None,
    temperature: _Temperature = 0.2,
    llm_seed: _LLMSeed = 0,
) -> None:
    """Compile blueprints into apps and test every tool procedurally; with -T, build a corpus of tasks.

    Every build writes one layout: each app lands in OUT/apps/<name>/ (app.json, schema.sql,
    tools.py, state.db, tests.json, graph.json) only if all of its test cases pass (a failing app
    leaves nothing behind), and OUT/corpus.json records the build. With --tasks-per-app T > 0, T
    admitted tasks per app (each in S initial states, distractor depth D) go in sharded JSONL under
    OUT/tasks/. An interrupted build resumes where it stopped when run again; apps built from the
    same blueprint and seed are reused, so tasks can be added to an apps-only build.

    With --builder llm, each --domain is a free keyword ("Job Seeking"): the model designs the
    domain, writes and debugs its custom tools (run only in sandboxed workers), proposes
    dependencies, and, with -T, rewrites task instructions and gates tool expansion; metrics go
    in OUT/llm_build.json and each app's provenance.

    --workers W builds W apps at once; --executor ray spreads app builds and task indexes
    over a Ray cluster (docs/scale.md); either way the files are those of a one-process build.
    """
    from envsynth.pipeline import ConfigError, ProceduralBuilder
    from envsynth.pipeline.config import BuildConfig, LLMOptions
    from envsynth.pipeline.console import flag_message, run_build

    if builder not in ("procedural", "llm"):
        fail(f"--builder: unknown builder {builder!r} (choose procedural or llm)")
    try:
        config = BuildConfig.of(
            out=out, seed=seed, apps=apps, tasks_per_app=tasks_per_app, states=states, distractors=distractors,
            workers=workers, force=force, keep_failed=keep_failed, executor=executor, address=address,
        )  # fmt: skip
        if builder == "llm":
            if blueprint:
                fail("--blueprint is for --builder procedural; with --builder llm give --domain keywords")
            if executor != "local" or workers not in (None, 1):
                fail("--executor and --workers are for --builder procedural (the LLM builder builds one domain at a time, here)")
            if description and len(description) != len(domain or []):
                fail(f"give one --description per --domain ({len(description)} descriptions for {len(domain or [])} domains)")
            options = LLMOptions.of(
                domains=list(domain or [])[:apps], descriptions=dict(zip(domain or [], description or [])), model=model,
                base_url=base_url, api_key=api_key, cache_dir=cache_dir, max_tokens_total=max_tokens_total,
                debug_rounds=debug_rounds, task_writer=task_writer, gating=gating, tau=tau, context_tokens=context_tokens,
                max_output_tokens=max_output_tokens, temperature=temperature, llm_seed=llm_seed,
            )  # fmt: skip
    except ConfigError as exc:
        fail(flag_message(exc.problems))
    if builder == "llm":
        _build_llm(config, options, as_json=as_json)  # type: ignore[arg-type]
        return
    from envsynth.corpus import CorpusError

    try:
        summary = run_build(config, ProceduralBuilder(_blueprints(domain, blueprint)), as_json=as_json, out=console, err=err)
    except (CorpusError, ValueError) as exc:
        fail(error_line(exc))
    for record in summary.manifest.apps:
        if record.error:
            warn("failed", record.error)
    if summary.failed:
        raise typer.Exit(1)


def _load_app(path: Path) -> Any:
    """The app at ``path``; ``OUT/<app>`` also names ``OUT/apps/<app>`` (see :func:`envsynth.load_app`)."""
    from envsynth import load_app
    from envsynth.runtime.app import AppLoadError

    try:
        return load_app(path)
    except AppLoadError as exc:
        fail(str(exc))


@app.command("test")
def test_cmd(
    app_dir: Annotated[Path, typer.Argument(help="An app folder written by `envsynth build`.")],
    seed: Annotated[int | None, typer.Option(help="Seed for fixtures (default: the app's build seed).")] = None,
    write: Annotated[bool, typer.Option(help="Rewrite the app's tests.json with the new verdicts.")] = False,
    show: Annotated[str, typer.Option(help="Which verdicts to list: failed, all or none.")] = "failed",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Re-run the procedural tests of an app and print a verdict table."""
    from envsynth.compiler.compile import canonical_json
    from envsynth.testing.procedural import test_app

    if show not in ("failed", "all", "none"):
        fail("--show takes failed, all or none")
    if seed is not None and seed < 0:
        fail(f"--seed must be 0 or more, got {seed}")
    a = _load_app(app_dir)
    s = a.manifest.get("provenance", {}).get("seed", 0) if seed is None else seed
    with err.status(f"testing {a.name}: {len(a.specs)} tools"):  # a spinner on a terminal, nothing in a pipe
        report = test_app(a, s)
    if write:
        (app_dir / "tests.json").write_text(canonical_json(report.to_json()), encoding="utf-8")
    if as_json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        t = Table(title=f"{a.name}: procedural tests")
        for col in ("tool", "positive", "negative", "failed"):
            t.add_column(col)
        for tool, d in report.by_tool().items():
            t.add_row(tool, str(d["positive"]), str(d["negative"]), styled(str(d["failed"]), "red") if d["failed"] else "0")
        console.print(t)
        c = report.counts()
        console.print(
            f"{c['cases']} cases: {c['success']} success, {c['anticipated_rejection']} anticipated rejection, "
            f"{c['unexpected_failure']} unexpected failure; {c['failed']} not as expected"
        )
        listed = [v for v in report.verdicts if show == "all" or (show == "failed" and not v.ok)]
        if listed:
            vt = Table(title="verdicts")
            for col in ("tool", "case", "expected", "observed", "ok", "detail"):
                vt.add_column(col, overflow="fold")
            for v in listed:
                vt.add_row(v.tool, v.case, v.expected, v.observed, "yes" if v.ok else styled("no", "red"), v.detail[:200])
            console.print(vt)
    if not report.passed:
        raise typer.Exit(1)


@app.command()
def graph(
    app_dir: Annotated[Path, typer.Argument(help="An app folder written by `envsynth build`.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="Output format for --out: json or dot.")] = "json",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the graph here (default: print stats only).")] = None,
    kind: Annotated[list[str] | None, typer.Option("--kind", "-k", help="Edge kinds to draw in DOT: data, logic, state.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the stats as JSON.")] = False,
) -> None:
    """Print the tool dependency graph's stats; write it as JSON or Graphviz DOT.

    Edges: data (an output of A fills a parameter of B), logic (A's effect establishes
    a pre-condition of B), state (A writes a table that B reads).
    """
    from envsynth.graph import EDGE_KINDS, build_graph

    if fmt not in ("json", "dot"):
        fail("--format takes json or dot")
    bad = [k for k in kind or [] if k not in EDGE_KINDS]
    if bad:
        fail(f"unknown edge kind(s) {bad}; choose from {list(EDGE_KINDS)}")
    g = build_graph(_load_app(app_dir))
    stats = g.stats()
    if out is not None:
        text = g.to_json() if fmt == "json" else g.to_dot(kinds=kind or None)
        out.write_text(text, encoding="utf-8")
    if as_json:
        print(json.dumps(stats, indent=2, default=str))
        return
    t = Table(title=f"{app_dir.name}: tool dependency graph")
    t.add_column("stat")
    t.add_column("value")
    for k, v in stats.items():
        t.add_row(str(k), json.dumps(v, default=str) if isinstance(v, dict | list) else str(v))
    console.print(t)
    if out is not None:
        console.print(f"wrote {out}")


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
        console.print(_run_line(summary, config.out, time.perf_counter() - started))
    _report_failed_episodes(summary)


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


def _build_llm(config: Any, options: Any, *, as_json: bool) -> None:
    """``build --builder llm``: design each domain (a spinner), then the one pipeline (a bar), then the metrics table."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from envsynth.corpus import CorpusError
    from envsynth.corpus.console import TaskBar, summary_data, summary_tables
    from envsynth.llmbuild.client import BuildStop
    from envsynth.llmbuild.command import builder_client, metrics_rows
    from envsynth.llmbuild.pipeline import LLMBuilder, ended

    try:
        llm_options = options.model_dump(include={"model", "base_url", "api_key", "cache_dir", "max_tokens_total", "context_tokens"})
        llm_options |= options.model_dump(include={"max_output_tokens", "temperature", "llm_seed"})
        client = builder_client(config.out, **llm_options)
    except ValueError as exc:
        fail(error_line(exc))
    summary = None
    quiet = not err.is_terminal and as_json
    llm = LLMBuilder(
        client, config.out, seed=config.seed, rounds=options.debug_rounds, tau=options.tau, rewrite=options.task_writer, gate=options.gating
    )
    with llm:
        try:
            columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn())
            with Progress(*columns, console=err, transient=True, disable=quiet) as bar:
                job = bar.add_task("designing", total=None)
                llm.design(
                    options.domains,
                    options.descriptions,
                    progress=lambda keyword, stage: bar.update(job, description=f"{keyword}: {stage}"),
                )
            if llm.blueprints:
                with TaskBar(err, len(llm.blueprints), max(config.tasks_per_app, 1), transient=as_json, disable=quiet) as tbar:
                    summary = llm.build(
                        tasks_per_app=config.tasks_per_app, states=config.states, distractors=config.distractors, progress=tbar.update
                    )
        except BuildStop as exc:
            llm.write_metrics()
            warn("stopped", str(exc), "yellow")
            raise typer.Exit(3) from None
        except (CorpusError, ValueError) as exc:
            llm.write_metrics(f"failed: {exc}")
            fail(str(exc))
        except BaseException as exc:  # Ctrl-C or a bug: the run's record is kept, then it goes on up
            llm.write_metrics(ended(exc, client))
            raise
        metrics = llm.write_metrics()
    summary = summary if config.tasks_per_app else None
    if as_json:
        print(json.dumps({"llm_build": metrics, "corpus": summary_data(summary) if summary is not None else None}, indent=2, default=str))
    else:
        console.print(_value_table(f"LLM build into {config.out}", metrics_rows(metrics)))
        for table in summary_tables(summary) if summary is not None else []:
            console.print(table)
    if len(metrics["app_names"]) < len(options.domains):
        raise typer.Exit(1)


serve_app = typer.Typer(help="Serve a corpus's episodes: to trainers over HTTP, to agents over MCP.", no_args_is_help=True)
app.add_typer(serve_app, name="serve")


_TOKEN_HELP = "Require 'Authorization: Bearer TOKEN' on every request (or set $ENVSYNTH_TOKEN, which keeps it out of ps)."
_INSECURE_HELP = "Serve a non-loopback --host without a token (refused otherwise)."
_REVEAL_HELP = "Show the expected values and answers in the reward's breakdown (default: only kinds of mismatch and counts)."


@serve_app.command("http")
def serve_http(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, shown at startup).")] = 8000,
    max_episodes: Annotated[int, typer.Option("--max-episodes", help="Live episodes at most (503 beyond).")] = 1024,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Seconds before an idle episode is ended.")] = 600.0,
    call_mode: Annotated[str, typer.Option("--call-mode", help="inline (fastest) or threadpool.")] = "inline",
    token: Annotated[str | None, typer.Option("--token", envvar="ENVSYNTH_TOKEN", help=_TOKEN_HELP)] = None,
    user_token: Annotated[
        str | None,
        typer.Option(
            "--user-token", envvar="ENVSYNTH_USER_TOKEN", help="Serve GET /tasks/{id}/user (the user profile) to this bearer token only."
        ),
    ] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help=_INSECURE_HELP)] = False,
    reveal_expected: Annotated[bool, typer.Option("--reveal-expected", help=_REVEAL_HELP)] = False,
) -> None:
    """Serve episodes over HTTP: create an episode for a task, list its tools, call, finish, close.

    Endpoints: GET /health, GET /tasks, GET /tasks/{id}, POST /episodes, GET /episodes/{id}/tools,
    POST /episodes/{id}/call, POST /episodes/{id}/finish, DELETE /episodes/{id}, and GET /tasks/{id}/user
    for a user simulator (--user-token). A non-loopback --host needs --token (or --insecure).
    See docs/serve.md for what is and is not promised.
    """
    from envsynth.corpus.errors import CorpusError

    if call_mode not in ("inline", "threadpool"):
        fail("--call-mode takes inline or threadpool")
    try:
        from envsynth.serve.http import serve
    except ImportError as exc:
        fail(str(exc))
    try:
        serve(
            corpus,
            host=host,
            port=port,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
            call_mode=call_mode,
            reveal_expected=reveal_expected,
            token=token or None,
            user_token=user_token or None,
            insecure=insecure,
        )
    except (CorpusError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@serve_app.command("mcp")
def serve_mcp(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    task: Annotated[str, typer.Option("--task", help="The id of the task to serve (one episode).")],
    transport: Annotated[str, typer.Option(help="stdio (stdin/stdout) or http (streamable HTTP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (http; 0: a free one, shown at startup).")] = 8000,
    seed: Annotated[int, typer.Option(help="The episode's seed.")] = 0,
    reward_file: Annotated[
        Path | None, typer.Option("--reward-file", help="Write the reward JSON here when the agent calls complete_task.")
    ] = None,
    token: Annotated[str | None, typer.Option("--token", envvar="ENVSYNTH_TOKEN", help=f"(http) {_TOKEN_HELP}")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help=f"(http) {_INSECURE_HELP}")] = False,
    reveal_expected: Annotated[bool, typer.Option("--reveal-expected", help=_REVEAL_HELP)] = False,
) -> None:
    """Serve one task episode as an MCP server: the task's tools plus complete_task.

    The task's instruction is the server's instructions (and its "task" prompt). The agent is told
    only "Task completed." when it finishes; the reward goes to stderr and --reward-file. See docs/mcp.md.
    """
    from envsynth.corpus import CorpusError, load_corpus

    if transport not in ("stdio", "http"):
        fail("--transport takes stdio or http")
    try:
        from envsynth.serve.mcp import run
    except ImportError as exc:
        fail(str(exc))
    try:
        loaded = load_corpus(corpus)
        loaded.task(task)
    except CorpusError as exc:
        fail(str(exc))
    except KeyError as exc:
        fail(str(exc.args[0]))
    try:
        run(
            loaded,
            task,
            seed=seed,
            reward_file=reward_file,
            transport=transport,
            host=host,
            port=port,
            reveal_expected=reveal_expected,
            token=token or None,
            insecure=insecure,
        )
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


export_app = typer.Typer(help="Export training data: SFT rows from a run, RL prompts from a corpus.", no_args_is_help=True)
app.add_typer(export_app, name="export")


def _print_export(summary: Any, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    skipped = ", ".join(f"{k} {v}" for k, v in summary.skipped.items() if v)
    console.print(f"wrote {summary.rows} rows ({summary.tasks} tasks{'; skipped: ' + skipped if skipped else ''}) to {summary.out_file}")


@export_app.command("sft")
def export_sft_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (envsynth run CORPUS --out RUN_DIR).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, or parquet (needs: pip install 'envsynth[datasets]').")] = "jsonl",
    corpus: Annotated[Path | None, typer.Option(help="Read tool schemas from this corpus (default: the one in run.json).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """One TRL SFT row per task: its first successful attempt (not tainted), as messages + tools."""
    from envsynth.export import ExportError, export_sft

    try:
        with err.status(f"exporting SFT rows from {run_dir}"):
            summary = export_sft(run_dir, out, format=fmt, corpus=corpus)
    except (ExportError, ValueError, ImportError) as exc:
        fail(str(exc))
    _print_export(summary, as_json)


@export_app.command("rl")
def export_rl_cmd(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, or parquet (needs: pip install 'envsynth[datasets]').")] = "jsonl",
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """One RL prompt row per task: system prompt + instruction, tools, task_id (no oracle, no ground truth)."""
    from envsynth.export import ExportError, export_rl

    try:
        with err.status(f"exporting RL prompts from {corpus}"):
            summary = export_rl(corpus, out, format=fmt)
    except (ExportError, ValueError, ImportError) as exc:
        fail(str(exc))
    _print_export(summary, as_json)


def _app_dirs(out: Path) -> list[Path]:
    if (out / "app.json").is_file():
        return [out]
    apps_dir = out / "apps" if (out / "apps").is_dir() else out
    return sorted(p for p in apps_dir.iterdir() if (p / "app.json").is_file())


@app.command()
def inspect(
    out: Annotated[Path, typer.Argument(help="A build folder (or one app folder).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Summarise built apps: tables, tools, reads/writes, test cases by verdict; and a corpus's tasks."""
    if not out.is_dir():
        fail(f"no such folder: {out}")
    dirs = _app_dirs(out)
    if not dirs:
        fail(f"no apps in {out} (run `envsynth build {out}` first)")
    summary = [_inspect_app(d) for d in dirs]
    corpus_stats: dict[str, Any] | None = None
    if (out / "corpus.json").is_file():
        from envsynth.corpus import CorpusError, load_corpus
        from envsynth.corpus import corpus_stats as stats_of

        try:
            with err.status(f"reading and linting the corpus in {out}"):
                corpus_stats = stats_of(load_corpus(out))
        except CorpusError as exc:
            fail(str(exc))
    llm_build = json.loads((out / "llm_build.json").read_text(encoding="utf-8")) if (out / "llm_build.json").is_file() else None
    if as_json:
        data: dict[str, Any] = {"apps": summary}
        if corpus_stats is not None:
            data["corpus"] = corpus_stats
        if llm_build is not None:
            data["llm_build"] = llm_build
        print(json.dumps(data, indent=2))
        return
    t = Table(title=f"apps in {out}")
    for col in ("app", "category", "tables", "tools", "reads", "writes", "cases", "success", "rejection", "unexpected"):
        t.add_column(col)
    for s in summary:
        v = s["tests"]
        t.add_row(
            s["name"],
            s["category"],
            str(s["tables"]),
            str(s["tools"]),
            str(s["reads"]),
            str(s["writes"]),
            str(v.get("cases", 0)),
            str(v.get("success", 0)),
            str(v.get("anticipated_rejection", 0)),
            str(v.get("unexpected_failure", 0)),
        )
    console.print(t)
    if corpus_stats is not None:
        from envsynth.corpus.console import stats_tables

        for table in stats_tables(corpus_stats):
            console.print(table)
    if llm_build is not None:
        from envsynth.llmbuild.command import metrics_rows

        console.print(_value_table("LLM builder (llm_build.json)", metrics_rows(llm_build)))


def _value_table(title: str, rows: Any) -> Table:
    """A two-column table of (label, value) rows."""
    t = Table(title=title)
    t.add_column("")
    t.add_column("value")
    for label, value in rows:
        t.add_row(label, value)
    return t


def _inspect_app(d: Path) -> dict[str, Any]:
    manifest = json.loads((d / "app.json").read_text(encoding="utf-8"))
    tests = json.loads((d / "tests.json").read_text(encoding="utf-8")) if (d / "tests.json").is_file() else {}
    tools = manifest["tools"]
    kinds: dict[str, int] = {}
    for t in tools:
        kinds[t["kind"]] = kinds.get(t["kind"], 0) + 1
    return {
        "name": manifest["name"],
        "title": manifest["title"],
        "category": manifest["category"],
        "path": str(d),
        "tables": len(manifest["blueprint"]["entities"]),
        "table_names": [e["name"] for e in manifest["blueprint"]["entities"]],
        "tools": len(tools),
        "reads": sum(t["mode"] == "read" for t in tools),
        "writes": sum(t["mode"] == "write" for t in tools),
        "tools_by_kind": kinds,
        "tests": tests.get("summary", {}),
        "provenance": manifest.get("provenance", {}),
    }


def _stage_bar(label: str) -> Any:
    """A transient progress bar on stderr for ``progress(stage, done, total)`` callbacks: (context, callback)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(
        TextColumn(label),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )
    jobs: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if stage not in jobs:
            jobs[stage] = bar.add_task(stage, total=total)
        bar.update(jobs[stage], completed=done, total=total)

    return bar, progress


@app.command()
def report(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    runs: Annotated[list[Path] | None, typer.Argument(help="Run folders on this corpus (envsynth run ... --out RUN_DIR).")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="The report folder (index.html inside; rewritten on a rerun).")] = Path("report"),
    against: Annotated[
        str, typer.Option("--against", help="Benchmarks for the OOD audit on the index, comma-separated ('' for none).")
    ] = "tau2,appworld,bfcl",
) -> None:
    """Write a static HTML report of a corpus and its runs: apps, graphs, composition, quality, pass@k, every task.

    Open OUT/index.html in a browser; no server is needed. Needs the report extra:
    pip install 'envsynth[report]'.
    """
    from envsynth.corpus.errors import CorpusError

    try:
        from envsynth.view.html import ReportError, build_report
    except ImportError as exc:
        fail(f"envsynth report needs the report extra ({exc.name} is missing): pip install 'envsynth[report]'")
    bar, progress = _stage_bar("report")
    with bar:
        try:
            result = build_report(corpus, runs or [], out, progress=progress, against=[b.strip() for b in against.split(",") if b.strip()])
        except (CorpusError, ReportError) as exc:
            fail(str(exc))
    runs_text = "1 run" if result.runs == 1 else f"{result.runs} runs"
    console.print(f"report: {result.index} ({result.apps} apps, {result.tasks} task pages, {runs_text}) in {result.seconds:.1f}s")


@app.command()
def show(
    task_id: Annotated[str, typer.Argument(help="The task id (as listed by envsynth report or in the task shards).")],
    corpus: Annotated[Path, typer.Option("--corpus", "-C", help="The corpus folder holding the task.")],
    run: Annotated[list[Path] | None, typer.Option("--run", help="A run folder whose episodes of the task to show (repeatable).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the task view as JSON.")] = False,
) -> None:
    """Show one task: request and scenario, visible tools, the rows of s0 by distractor level, the oracle, trajectories."""
    from envsynth.corpus.errors import CorpusError
    from envsynth.view.show import load_view, print_task

    try:
        view = load_view(corpus, task_id, run or [])
    except (CorpusError, FileNotFoundError) as exc:
        fail(str(exc))
    except KeyError as exc:
        fail(str(exc.args[0]) if exc.args else str(exc))
    if as_json:
        print(json.dumps(view, indent=2, default=str))
    else:  # to a pipe or a file: wrapped at 140 columns (long cells fold, nothing is cut)
        print_task(view, console if sys.stdout.isatty() else Console(emoji=False, markup=False, highlight=False, width=140))


plan_app = typer.Typer(
    help="Plan a corpus composition (SynthAPI): a sweep to train on, a scaling law fitted to its results, a suggestion for a budget.",
    no_args_is_help=True,
)
app.add_typer(plan_app, name="plan")


def _write_or_print(text: str, out: Path | None, what: str) -> None:
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(f"{what}: {out}")


def _max_apps(max_apps: int | None, catalogue: int) -> int:
    if max_apps is None:
        return catalogue
    if not 1 <= max_apps <= catalogue:
        fail(f"--max-apps {max_apps}: give 1 to {catalogue} (the catalogue's domains)")
    return max_apps


@plan_app.command("grid")
def plan_grid(
    budget: Annotated[int, typer.Option("--budget", "-N", help="The largest corpus of the sweep, in task records A*T*S.")],
    points: Annotated[int, typer.Option(help="Corpora in the sweep (spread over budgets N/8, N/4, N/2, N).")] = 48,
    seed: Annotated[int, typer.Option(help="Seed of the sweep's draw and of every corpus.")] = 0,
    max_apps: Annotated[
        int | None, typer.Option("--max-apps", help="The most apps a corpus may have (default: the catalogue's domains).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the sweep as CSV here (default: print it).")] = None,
) -> None:
    """Write the corpora specs (A, T, S, D, seed and the build command) of a sweep to train on with your own trainer.

    Train one model per row, add its compute and normalised score (0..1) as columns compute and
    score, and fit the results with envsynth plan fit.
    """
    from envsynth import catalog as cat
    from envsynth.plan import grid, to_csv

    try:
        rows = grid(budget, _max_apps(max_apps, len(cat.entries())), points=points, seed=seed)
    except ValueError as exc:
        fail(error_line(exc))
    _write_or_print(to_csv(rows), out, f"{len(rows)} corpora, {sum(r['records'] for r in rows)} task records in all")


@plan_app.command("fit")
def plan_fit(
    results: Annotated[Path, typer.Argument(help="CSV: apps, tasks_per_app, states, distractors, score (0..1) [, compute].")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the fit (JSON) here, for envsynth plan suggest.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the fit as JSON.")] = False,
) -> None:
    """Fit the composition-aware law and the task-count-only law; hold out the top 25% compute runs; report both MAEs."""
    from envsynth.plan import PlanError, fit_results, read_results

    try:
        fit = fit_results(read_results(results))
    except PlanError as exc:
        fail(str(exc))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(fit, indent=2) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps(fit, indent=2))
        return
    law, base, best = fit["law"], fit["baseline"], fit["optimum"]
    t = Table(title=f"{fit['runs']} runs; held out: the {fit['held_out']} of compute >= {fit['held_out_compute_from']:g}")
    for col in ("law", "MAE fitted runs", "MAE held-out runs"):
        t.add_column(col)
    t.add_row("composition-aware", f"{law['mae_fit']:.4f}", f"{law['mae_held_out']:.4f}")
    t.add_row("task count only", f"{base['mae_fit']:.4f}", f"{base['mae_held_out']:.4f}")
    console.print(t)
    console.print(
        f"optimum at compute {best['compute']:g}: A = {best['apps']:.1f}, S = {best['states']:.1f}, D = {best['distractors']:.1f}"
        + (f"; fit written to {out}" if out else "")
    )


@plan_app.command("suggest")
def plan_suggest(
    budget: Annotated[int, typer.Option("--budget", "-N", help="Task records to build (A*T*S), in the fit's compute unit.")],
    fit: Annotated[Path, typer.Option("--fit", help="A fit file written by envsynth plan fit --out.")],
    top: Annotated[int, typer.Option(help="Compositions to list.")] = 5,
    max_apps: Annotated[int | None, typer.Option("--max-apps", help="The most apps to suggest (default: the catalogue's domains).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recommend A, T, S, D for a budget: the composition the fitted law scores best, within what the catalogue supplies."""
    from envsynth import catalog as cat
    from envsynth.plan import PlanError, read_fit, suggest

    try:
        got = suggest(read_fit(fit), budget, _max_apps(max_apps, len(cat.entries())), top=max(top, 1))
    except PlanError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(got, indent=2))
        return
    t = Table(title=f"budget {budget} task records ({got['searched']['compositions']} compositions searched)")
    for col in ("A", "T", "S", "D", "records", "predicted score"):
        t.add_column(col, justify="right")
    for r in [got["best"], *got["alternatives"]]:
        t.add_row(*(str(r[k]) for k in ("apps", "tasks_per_app", "states", "distractors", "records", "predicted_score")))
    console.print(t)
    if got["extrapolated"]:
        warn("warning", f"the budget lies outside the compute the fit saw ({fit}): the prediction extrapolates", "yellow")
    console.print(f"best: {got['best']['command']}")


@app.command()
def audit(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder, or a folder of apps written by envsynth build.")],
    against: Annotated[
        str, typer.Option("--against", help="Benchmarks to compare with, comma-separated: tau2, appworld, bfcl.")
    ] = "tau2,appworld,bfcl",
    top: Annotated[int, typer.Option(help="Closest tool pairs to list per app and benchmark.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Out-of-distribution audit: how close each app's description, tools and task requests are to benchmark domains.

    A score (0..1, TF-IDF cosine) at or above the threshold flags an app to hold out when
    evaluating on that benchmark; the nearest domain and the closest tools say why.
    """
    from envsynth.audit import AuditError
    from envsynth.audit import audit as run_audit
    from envsynth.corpus.errors import CorpusError

    names = [n.strip() for n in against.split(",") if n.strip()]
    try:
        result = run_audit(corpus, names, top=max(top, 0))
    except (AuditError, CorpusError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    t = Table(title=f"OOD audit of {corpus} (TF-IDF cosine; overlap at >= {result['threshold']})")
    t.add_column("app")
    for b in names:
        t.add_column(f"{b}: score (nearest domain)")
    t.add_column("hold out for")
    for a in result["apps"]:
        cells = [f"{a['against'][b]['score']:.3f} ({a['against'][b]['nearest_domain']})" for b in names]
        flagged = [b for b in names if a["against"][b]["overlap"]]
        t.add_row(a["name"], *cells, styled(", ".join(flagged), "bold red") if flagged else "-")
    console.print(t)
    for a in result["apps"]:
        for b in names:
            r = a["against"][b]
            if r["overlap"]:
                pairs = "; ".join(f"{m['tool']} ~ {m['reference']} ({m['similarity']:.2f})" for m in r["closest_tools"])
                console.print(f"{a['name']} ~ {b}/{r['nearest_domain']}: shares {', '.join(r['shared_terms'])}; closest tools: {pairs}")
    flagged_apps = sum(any(a["against"][b]["overlap"] for b in names) for a in result["apps"])
    console.print(f"audit: {len(result['apps'])} apps, {flagged_apps} overlapping {', '.join(names)}")


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
