"""``envsynth catalog`` and ``check``: the shipped apps, and a blueprint file's problems and inferred words.

These commands were first written in :mod:`envsynth.cli.build`; this module is imported
after it, so its commands of the same names are the ones ``envsynth`` runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from envsynth.cli.common import app, console, fail

_COUNTS = ("tables", "tools", "writes", "policy_rules")
"""The columns of ``envsynth catalog`` that are counts (right-aligned)."""


@app.command()
def catalog(as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False) -> None:
    """List the shipped domain blueprints (the values of --domain): category, tables, tools, writes and policy rules."""
    from envsynth import catalog as cat
    from envsynth.blueprint.errors import BlueprintError

    try:
        rows = cat.summaries()
    except BlueprintError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    console.print(_catalog_table(rows))


def _catalog_table(rows: list[dict[str, Any]]) -> Table:
    """The catalogue as a table, one row per app (the description left to --json), the apps of a category together
    (SynthAPI's categories in their order, a line between two) and by name within it."""
    from envsynth.blueprint.models import CATEGORIES

    t = Table(title="envsynth catalogue")
    columns = ["name", "title", "category", *_COUNTS]
    for col in columns:
        t.add_column(col.replace("_", " "), justify="right" if col in _COUNTS else "left")
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    ordered = sorted(rows, key=lambda r: (rank.get(r["category"], len(rank)), r["name"]))
    for i, r in enumerate(ordered):
        last = i + 1 == len(ordered) or ordered[i + 1]["category"] != r["category"]
        t.add_row(*(str(r[c]) for c in columns), end_section=last)
    return t


@app.command()
def check(
    files: Annotated[list[Path], typer.Argument(help="Blueprint YAML files to check.", metavar="FILE.yaml...", show_default=False)],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON report instead of lines.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too (words inferred from names).")] = False,
) -> None:
    """Check blueprint files without building them: every problem at once, one line each.

    Each problem is printed as FILE: PATH: MESSAGE, where PATH points at the key
    (actions[3].pre[1], entities[0].fields[2].type) and MESSAGE says what is allowed there,
    with a suggestion for a misspelt key or value. A clean file prints one line:
    FILE: ok: NAME: E entities, A actions, T tools, after one warning line,
    FILE: warning: PATH: MESSAGE, per word the blueprint leaves out and envsynth infers
    from a name (a table's called, a field's label, an action's say).

    Besides the structure and every cross reference, the check compiles the app (schema,
    tools, sample state) as `envsynth build` does before testing, and runs each pre-condition,
    message and set value once on typed sample values: a condition that cannot run whatever
    the data (a date compared with a number, a list given to exists()) is reported too.
    Nothing is written. Exit status: 0 when every file is clean (warnings do not count
    unless --strict), 2 when any has a problem.
    """
    from envsynth.check import check_file

    reports = [_check_one(f, check_file) for f in files]
    passed = all(r.passes(strict) for r in reports)
    if as_json:
        print(json.dumps({"ok": passed, "files": [r.to_json() for r in reports]}, indent=2))
    else:
        for r in reports:
            for line in r.lines():
                console.print(line, soft_wrap=True)
    if not passed:
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
