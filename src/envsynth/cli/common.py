"""The shared side of the ``envsynth`` command: the app, its consoles, one-line errors, small views."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from envsynth.cli.errors import error_line
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


def _load_app(path: Path) -> Any:
    """The app at ``path``; ``OUT/<app>`` also names ``OUT/apps/<app>`` (see :func:`envsynth.load_app`)."""
    from envsynth import load_app
    from envsynth.runtime.app import AppLoadError

    try:
        return load_app(path)
    except AppLoadError as exc:
        fail(str(exc))


def _app_dirs(out: Path) -> list[Path]:
    if (out / "app.json").is_file():
        return [out]
    apps_dir = out / "apps" if (out / "apps").is_dir() else out
    return sorted(p for p in apps_dir.iterdir() if (p / "app.json").is_file())


def _value_table(title: str, rows: Any) -> Table:
    """A two-column table of (label, value) rows."""
    t = Table(title=title)
    t.add_column("")
    t.add_column("value")
    for label, value in rows:
        t.add_row(label, value)
    return t


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


def with_corpus_flag(message: str) -> str:
    """A library message asking for the corpus, with the flag that passes it (``--corpus``)."""
    return message + " with --corpus" if message.endswith("pass the corpus to read the tasks from") else message
