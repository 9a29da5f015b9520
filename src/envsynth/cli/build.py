"""``envsynth build``, ``test`` and ``graph``: from blueprints to apps and corpora (``catalog`` and ``check``: cli/catalogue.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from envsynth.cli.common import (
    _blueprints,
    _load_app,
    _value_table,
    app,
    console,
    err,
    fail,
    styled,
    warn,
)
from envsynth.cli.errors import error_line

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


_Apps = Annotated[
    int | None,
    typer.Option("--apps", "-A", help="A: build only the first A domains (default: all); more than there are is an error naming how many."),
]


_T = Annotated[int, typer.Option("--tasks-per-app", "-T", help="T: tasks per app; 0 builds apps only.")]


_S = Annotated[int, typer.Option("--states", "-S", help="S: initial states per task.")]


_D = Annotated[int, typer.Option("--distractors", "-D", help="D: distractor depth, 0 to 4.")]
_Difficulty = Annotated[
    str | None,
    typer.Option(
        "--difficulty",
        help=(
            "The mix of difficulty tiers to keep per app: easy, medium, hard, mix (a third each), or shares such as "
            "easy=1,medium=2,hard=1 (default: tiers as synthesized; docs/tasks.md, Difficulty)."
        ),
    ),
]


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


_MaxRounds = Annotated[
    int, typer.Option("--max-rounds", help=_LLM + "designer replies checked at most: each correction lists every problem of the blueprint.")
]


_Timeout = Annotated[float, typer.Option("--timeout", help=_LLM + "seconds a model request may take before it is retried.")]


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
    difficulty: _Difficulty = None,
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
    max_rounds: _MaxRounds = 4,
    timeout: _Timeout = 120.0,
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
    from envsynth.pipeline import ConfigError
    from envsynth.pipeline.config import BuildConfig, LLMOptions
    from envsynth.pipeline.console import flag_message

    if builder not in ("procedural", "llm"):
        fail(f"--builder: unknown builder {builder!r} (choose procedural or llm)")
    try:
        config = BuildConfig.of(
            out=out, seed=seed, apps=apps, tasks_per_app=tasks_per_app, states=states, distractors=distractors,
            difficulty=difficulty, workers=workers, force=force, keep_failed=keep_failed, executor=executor, address=address,
        )  # fmt: skip
        if builder == "llm":
            _llm_flags(blueprint, executor, workers, domain, description)
            if apps is not None and apps > len(domain or []):
                fail(f"--apps (-A): asks for {apps} apps but {len(domain or [])} --domain keywords are given (one app per keyword)")
            options = LLMOptions.of(
                domains=list(domain or [])[:apps], descriptions=dict(zip(domain or [], description or [])), model=model,
                base_url=base_url, api_key=api_key, cache_dir=cache_dir, max_tokens_total=max_tokens_total,
                debug_rounds=debug_rounds, task_writer=task_writer, gating=gating, tau=tau, context_tokens=context_tokens,
                max_output_tokens=max_output_tokens, temperature=temperature, llm_seed=llm_seed,
                max_rounds=max_rounds, timeout=timeout,
            )  # fmt: skip
            _build_llm(config, options, as_json=as_json)
            return
    except ConfigError as exc:
        fail(flag_message(exc.problems))
    _build_procedural(config, _blueprints(domain, blueprint), as_json=as_json)


def _llm_flags(
    blueprint: list[Path] | None, executor: str, workers: int | None, domain: list[str] | None, description: list[str] | None
) -> None:
    """Refuse the flags ``--builder llm`` does not take, and descriptions that do not pair with the domains."""
    if blueprint:
        fail("--blueprint is for --builder procedural; with --builder llm give --domain keywords")
    if executor != "local" or workers not in (None, 1):
        fail("--executor and --workers are for --builder procedural (the LLM builder builds one domain at a time, here)")
    if description and len(description) != len(domain or []):
        fail(f"give one --description per --domain ({len(description)} descriptions for {len(domain or [])} domains)")


def _build_procedural(config: Any, blueprints: list[Any], *, as_json: bool) -> None:
    """The one pipeline with the procedural builder: a progress bar, the summary, a line per failed app (exit 1)."""
    from envsynth.corpus import CorpusError
    from envsynth.pipeline import ProceduralBuilder
    from envsynth.pipeline.console import run_build

    try:
        summary = run_build(config, ProceduralBuilder(blueprints), as_json=as_json, out=console, err=err)
    except (CorpusError, ValueError) as exc:
        fail(error_line(exc))
    for record in summary.manifest.apps:
        if record.error:
            warn("failed", record.error)
    if summary.failed:
        raise typer.Exit(1)


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
        llm_options |= options.model_dump(include={"max_output_tokens", "temperature", "llm_seed", "timeout"})
        client = builder_client(config.out, **llm_options)
    except ValueError as exc:
        fail(error_line(exc))
    summary = None
    quiet = not err.is_terminal and as_json
    llm = LLMBuilder(
        client,
        config.out,
        seed=config.seed,
        rounds=options.debug_rounds,
        tau=options.tau,
        rewrite=options.task_writer,
        gate=options.gating,
        design_rounds=options.max_rounds,
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
                        tasks_per_app=config.tasks_per_app, states=config.states, distractors=config.distractors,
                        difficulty=config.difficulty, progress=tbar.update,
                    )  # fmt: skip
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
