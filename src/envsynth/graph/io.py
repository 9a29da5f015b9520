"""Reading and writing ``graph.json`` in an app folder."""

from __future__ import annotations

from pathlib import Path

from envsynth.graph.build import build_graph
from envsynth.graph.model import ToolGraph

GRAPH_FILE = "graph.json"


def write_graph(app_dir: str | Path) -> Path:
    """Load the app in ``app_dir``, build its tool graph and write ``app_dir/graph.json``.

    Args:
        app_dir: an app folder written by ``envsynth build``.

    Returns:
        The path of the written file.

    Raises:
        envsynth.runtime.app.AppLoadError: if the folder is not an app.
    """
    from envsynth.runtime.app import App  # local import: keeps envsynth.graph import-light

    folder = Path(app_dir)
    graph = build_graph(App.load(folder))
    out = folder / GRAPH_FILE
    out.write_text(graph.to_json(), encoding="utf-8")
    return out


def read_graph(app_dir: str | Path) -> ToolGraph:
    """Read ``graph.json`` from an app folder (or a path to the file itself).

    Raises:
        FileNotFoundError: if there is no graph file.
    """
    p = Path(app_dir)
    if p.is_dir():
        p = p / GRAPH_FILE
    return ToolGraph.from_json(p.read_text(encoding="utf-8"))
