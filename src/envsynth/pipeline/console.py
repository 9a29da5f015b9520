"""The terminal side of ``envsynth build``: progress bars, summary tables and JSON, for every builder.

The CLI turns its flags into a :class:`~envsynth.pipeline.BuildConfig` (and, for the LLM
builder, :class:`~envsynth.pipeline.LLMOptions`) and hands them here whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from envsynth.corpus.build import CorpusSummary
from envsynth.corpus.layout import APPS_DIR
from envsynth.pipeline.config import BuildConfig
from envsynth.pipeline.run import build

if TYPE_CHECKING:
    from envsynth.pipeline.builder import Builder

FLAGS = {
    "out": "OUT",
    "seed": "--seed",
    "apps": "--apps (-A)",
    "tasks_per_app": "--tasks-per-app (-T)",
    "states": "--states (-S)",
    "distractors": "--distractors (-D)",
    "difficulty": "--difficulty",
    "workers": "--workers (-w)",
    "executor": "--executor",
    "address": "--address",
    "domains": "--domain",
    "descriptions": "--description",
    "max_tokens_total": "--max-tokens-total",
    "debug_rounds": "--debug-rounds",
    "tau": "--tau",
    "context_tokens": "--context-tokens",
    "max_output_tokens": "--max-output-tokens",
    "temperature": "--temperature",
    "llm_seed": "--llm-seed",
    "max_rounds": "--max-rounds",
    "timeout": "--timeout",
}
"""The CLI flag of each configuration field, to word a refused value in the user's terms."""


def flag_message(problems: dict[str, str]) -> str:
    """One line naming each refused flag and why (``--states (-S): Input should be ...``)."""
    return "; ".join(f"{FLAGS.get(k, k)}: {v}" if k else v for k, v in problems.items())


def run_build(config: BuildConfig, builder: Builder, *, as_json: bool, out: Console, err: Console) -> CorpusSummary:
    """Build with a progress bar on ``err``, then print the summary on ``out`` (its ``failed`` apps say what went wrong)."""
    from envsynth.corpus.console import TaskBar, summary_data, summary_tables

    quiet = not err.is_terminal and as_json
    count = len(builder.blueprints[: config.apps])
    with TaskBar(err, count, max(config.tasks_per_app, 1), transient=as_json, disable=quiet) as bar:
        summary = build(config, builder, progress=bar.update)
    if config.tasks_per_app == 0:
        rows = app_rows(summary)
        if as_json:
            print(json.dumps(rows, indent=2))
        else:
            out.print(apps_table(rows, config.out))
    elif as_json:
        print(json.dumps(summary_data(summary), indent=2))
    else:
        for table in summary_tables(summary):
            out.print(table)
    return summary


def app_rows(summary: CorpusSummary) -> list[dict[str, Any]]:
    """One row per app of an apps-only build: its size and test counts, or the error that stopped it."""
    rows: list[dict[str, Any]] = []
    for record in summary.manifest.apps:
        if record.error:
            rows.append({"name": record.name, "ok": False, "error": record.error})
            continue
        folder = summary.path / APPS_DIR / record.name
        manifest = json.loads((folder / "app.json").read_text(encoding="utf-8"))
        tests = json.loads((folder / "tests.json").read_text(encoding="utf-8"))["summary"]
        rows.append(
            {
                "name": record.name,
                "ok": True,
                "path": str(folder),
                "tables": len(manifest["blueprint"]["entities"]),
                "tools": len(manifest["tools"]),
                "writes": sum(t["mode"] == "write" for t in manifest["tools"]),
                "cases": tests["cases"],
                "unexpected_failures": tests["unexpected_failure"],
            }
        )
    return rows


def apps_table(rows: list[dict[str, Any]], out: Path) -> Table:
    """The table an apps-only build prints."""
    t = Table(title=f"built into {out / APPS_DIR}")
    for col in ("app", "tables", "tools", "writes", "test cases", "unexpected failures", "status"):
        t.add_column(col)
    for r in rows:
        if r["ok"]:
            cells = [str(r[k]) for k in ("tables", "tools", "writes", "cases", "unexpected_failures")]
            t.add_row(r["name"], *cells, Text("ok", style="green"))
        else:
            t.add_row(r["name"], "", "", "", "", "", Text("failed", style="red"))
    return t
