"""``envsynth export``, ``inspect``, ``report`` and ``show``: what a corpus and its runs hold."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from envsynth.cli.common import (
    _app_dirs,
    _stage_bar,
    _value_table,
    app,
    console,
    err,
    fail,
    with_corpus_flag,
)

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
    include_user_failures: Annotated[
        bool,
        typer.Option(
            "--include-user-failures",
            help="Also export episodes labelled user_failure (the simulated user broke its scenario; left out by default).",
        ),
    ] = False,
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", help="Keep only tasks whose mean reward over the run's attempts is at least this.")
    ] = None,
    tier: Annotated[
        list[str] | None,
        typer.Option("--tier", help="Keep only tasks of this difficulty tier (read from the corpus): easy, medium or hard (repeatable)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """One TRL SFT row per task: its first successful attempt (not tainted, not labelled), as messages + tools.

    Rewards are the latest regrade's where the run was regraded (envsynth regrade). --min-reward and
    --tier keep a slice of the tasks.
    """
    from envsynth.export import ExportError, export_sft

    try:
        with err.status(f"exporting SFT rows from {run_dir}"):
            summary = export_sft(
                run_dir, out, format=fmt, corpus=corpus, include_user_failures=include_user_failures, min_reward=min_reward, tiers=tier
            )
    except (ExportError, ValueError, ImportError) as exc:
        fail(with_corpus_flag(str(exc)))
    _print_export(summary, as_json)


@export_app.command("rl")
def export_rl_cmd(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write.")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl, or parquet (needs: pip install 'envsynth[datasets]').")] = "jsonl",
    order: Annotated[
        str, typer.Option("--order", help="corpus (the corpus's order) or difficulty (easiest first: a curriculum).")
    ] = "corpus",
    tier: Annotated[
        list[str] | None, typer.Option("--tier", help="Keep only tasks of this difficulty tier: easy, medium or hard (repeatable).")
    ] = None,
    min_difficulty: Annotated[
        float | None, typer.Option("--min-difficulty", help="Keep only tasks whose difficulty score is at least this.")
    ] = None,
    max_difficulty: Annotated[
        float | None, typer.Option("--max-difficulty", help="Keep only tasks whose difficulty score is at most this.")
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option("--run", help="A run folder on this corpus: add each task's pass_at_k, reward_mean and reward_parts."),
    ] = None,
    min_reward: Annotated[
        float | None, typer.Option("--min-reward", help="Keep only tasks whose mean reward in the --run is at least this.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """One RL prompt row per task: system prompt + instruction, tools, task_id, difficulty (no oracle, no ground truth).

    --order difficulty writes the easiest first (a curriculum); --tier and --min/--max-difficulty keep a slice.
    --run labels each row with the run's results for its task; --min-reward keeps the tasks it did well enough on.
    """
    from envsynth.export import ExportError, export_rl
    from envsynth.export.rl import MIN_REWARD_WITHOUT_RUN

    try:
        with err.status(f"exporting RL prompts from {corpus}"):
            summary = export_rl(
                corpus,
                out,
                format=fmt,
                order=order,  # type: ignore[arg-type]
                tiers=tier,
                min_difficulty=min_difficulty,
                max_difficulty=max_difficulty,
                run=run,
                min_reward=min_reward,
            )
    except (ExportError, ValueError, ImportError) as exc:
        if str(exc) == MIN_REWARD_WITHOUT_RUN:
            fail("--min-reward needs --run: a run folder on this corpus to read the rewards from (envsynth run ... --out RUN)")
        fail(str(exc))
    _print_export(summary, as_json)


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
