"""``envsynth show``: one task's view (:func:`envsynth.view.taskview.task_view`) printed in the terminal with rich."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from envsynth.view.taskview import LEVELS

_LEVEL_STYLE = {"core": "bold", "d1": "dim", "d2": "yellow", "d3": "red", "d4": "green"}


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _scenario(view: dict[str, Any]) -> RenderableType:
    s = view["scenario"]
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()
    t.add_row("kind", f"{view['kind']}, chain of {view['chain_length']}")
    t.add_row("difficulty", f"{view['tier']} ({view['difficulty']}): {', '.join(view['constructs']) or 'no construct'}")
    if s:
        t.add_row("persona", s["persona"])
        if s["identity"]:
            t.add_row("identity", "; ".join(s["identity"]))
        if s["reason"]:
            t.add_row("reason", s["reason"])
        t.add_row("knows", "\n".join(f"- {k}" for k in s["knows"]) or "-")
        t.add_row("does not know", "\n".join(f"- {k}" for k in s["unknowns"]) or "-")
    if view["policy"]:
        t.add_row("policy", view["policy"]["rule"])
    if view.get("clarify"):
        t.add_row("must ask", "\n".join(f"- {k}" for k in view["clarify"]))
    return Group(Text(view["instruction"]), Text(""), t)


def _tools(view: dict[str, Any]) -> Table:
    t = Table(title=f"visible tools ({len(view['visible_tools'])})", title_justify="left")
    for col in ("tool", "mode", "archetype", "description"):
        t.add_column(col)
    for v in view["visible_tools"]:
        t.add_row(v["name"], v["mode"], v["kind"], v["description"])
    return t


def _rows(view: dict[str, Any]) -> list[Table]:
    out = []
    tables: dict[str, list[dict[str, Any]]] = {}
    for r in view["rows"]:
        tables.setdefault(r["table"], []).append(r)
    for name, rows in tables.items():
        cols = list(rows[0]["row"])
        t = Table(title=f"s0: {name}", title_justify="left")
        t.add_column("level")
        for c in cols:
            t.add_column(c, overflow="fold")
        for r in rows:
            style = _LEVEL_STYLE.get(r["level"], "")
            t.add_row(Text(r["level"], style=style), *(Text(_cell(r["row"].get(c)), style=style) for c in cols))
        out.append(t)
    return out


def _message(m: dict[str, Any]) -> Text:
    text = Text.assemble((f"{m.get('role', '?')}", "bold"), (f" {m['name']}" if m.get("name") else "", "bold"), ": ")
    text.append(str(m.get("content") or ""))
    for c in m.get("tool_calls") or []:
        fn = c.get("function", {})
        text.append(f"\n  -> {fn.get('name')}({fn.get('arguments')})", style="cyan")
    return text


def _runs(view: dict[str, Any]) -> Iterable[RenderableType]:
    for label, attempts in view["runs"].items():
        for a in attempts:
            head = Text.assemble(
                (f"run {label}, attempt {a['attempt']}: ", "bold"),
                (f"score {a['score']}", "green" if a["passed"] else "red"),
                f" ({a['stop_reason']}, {a['turns']} turns)",
            )
            parts: list[RenderableType] = [head]
            parts += [Text(f"  {m.get('kind')}: {m.get('message')}", style="red") for m in a["breakdown"]]
            if a["error"]:
                parts.append(Text(f"  error: {_cell(a['error'])}", style="red"))
            parts += [_message(m) for m in a["messages"]]
            yield Panel(Group(*parts), title=f"trajectory ({len(a['messages'])} messages)", title_align="left")
        if not attempts:
            yield Text(f"run {label}: no episode of this task", style="dim")


def print_task(view: dict[str, Any], console: Console) -> None:
    """Print a task view: request and scenario, visible tools, s0 rows by level, the oracle, trajectories."""
    console.print(Panel(_scenario(view), title=f"{view['id']} ({view['app']})", title_align="left"))
    console.print(_tools(view))
    legend = ", ".join(f"{k}: {v}" for k, v in LEVELS.items() if k in view["level_counts"])
    console.print(Text(f"rows of s0 ({legend})", style="bold"))
    for t in _rows(view):
        console.print(t)
    console.print(Panel(view["oracle_program"], title="oracle program", title_align="left"))
    if view["expected_answer"] is not None:
        console.print(Text.assemble(("expected answer: ", "bold"), _cell(view["expected_answer"])))
    for part in _runs(view):
        console.print(part)


def load_view(corpus_path: Any, task_id: str, run_dirs: Iterable[Any] = ()) -> dict[str, Any]:
    """The view of task ``task_id`` of the corpus at ``corpus_path``, with its episodes in each run folder.

    Raises:
        envsynth.corpus.CorpusError: the corpus cannot be read.
        KeyError: no such task (the message names the corpus).
        FileNotFoundError: a run folder without ``trajectories.jsonl``.
    """
    from pathlib import Path

    from envsynth.corpus.load import load_corpus
    from envsynth.rollout.trajectory import TRAJECTORIES, read_graded
    from envsynth.view.taskview import task_view

    corpus = load_corpus(corpus_path)
    task = corpus.task(task_id)
    runs: dict[str, list[dict[str, Any]]] = {}
    for d in map(Path, run_dirs):
        if not (d / TRAJECTORIES).is_file():
            raise FileNotFoundError(f"{d} is not a run folder: no {TRAJECTORIES}")
        runs[d.name if d.name not in runs else str(d)] = [r for r in read_graded(d) if r.get("task_id") == task_id]
    app = corpus.apps[task.app]
    return task_view(task, app.blueprint, app.specs, runs)
