"""envsynth: executable, verifiable tool-use environments and tasks for training LLM agents.

The small public API::

    import envsynth
    bp = envsynth.load_blueprint("my_domain.yaml")      # or envsynth.catalog.load("harbor_market")
    built = envsynth.build_app(bp, "out/")              # compile + procedural tests -> out/<name>/
    app = envsynth.load_app("out/apps/harbor_market")   # `out/harbor_market` names it too
    ep = app.episode(seed=0)                            # own in-memory copy of the sample state
    res = ep.call("get_product", {"product_id": "..."})  # res.outcome, res.content, res.data
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

_EXPORTS = {
    "App": "envsynth.runtime.app",
    "AppLoadError": "envsynth.runtime.app",
    "Episode": "envsynth.runtime.episode",
    "CallResult": "envsynth.runtime.episode",
    "TaskEpisode": "envsynth.tasks.episode",
    "ToolError": "envsynth.runtime.toolkit",
    "Blueprint": "envsynth.blueprint.models",
    "BlueprintError": "envsynth.blueprint.errors",
    "load_blueprint": "envsynth.blueprint.load",
    "build_app": "envsynth.compiler.build",
    "BuildError": "envsynth.compiler.build",
    "compile_app": "envsynth.compiler.compile",
    "test_app": "envsynth.testing.procedural",
    "load_corpus": "envsynth.corpus.load",
}

_SUBPACKAGES = frozenset(
    ("agents", "blueprint", "catalog", "compiler", "corpus", "export", "graph", "llm", "rollout", "runtime", "tasks", "testing")
)
"""Imported on first access, so ``import envsynth`` is enough for ``envsynth.catalog.load(...)``."""

__all__ = [
    "App",
    "AppLoadError",
    "Blueprint",
    "BlueprintError",
    "BuildError",
    "CallResult",
    "Episode",
    "TaskEpisode",
    "ToolError",
    "__version__",
    "build_app",
    "compile_app",
    "load_app",
    "load_blueprint",
    "load_corpus",
    "test_app",
]

if TYPE_CHECKING:
    from envsynth.blueprint.errors import BlueprintError
    from envsynth.blueprint.load import load_blueprint
    from envsynth.blueprint.models import Blueprint
    from envsynth.compiler.build import BuildError, build_app
    from envsynth.compiler.compile import compile_app
    from envsynth.corpus.load import load_corpus
    from envsynth.runtime.app import App, AppLoadError
    from envsynth.runtime.episode import CallResult, Episode
    from envsynth.runtime.toolkit import ToolError
    from envsynth.tasks.episode import TaskEpisode
    from envsynth.testing.procedural import test_app


def load_app(path: str | Path) -> App:
    """Load an app folder written by ``envsynth build``.

    Every build writes ``OUT/apps/<app>``; ``OUT/<app>`` names the same app (it is loaded
    from ``OUT/apps/<app>`` when ``OUT/<app>`` holds no app: older apps-only builds wrote it there).

    Raises:
        AppLoadError: no app folder there.
    """
    from envsynth.runtime.app import App

    p = Path(path)
    in_corpus = p.parent / "apps" / p.name
    if not (p / "app.json").is_file() and (in_corpus / "app.json").is_file():
        p = in_corpus
    return App.load(p)


def __getattr__(name: str) -> Any:
    import importlib

    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _SUBPACKAGES:
        return importlib.import_module(f"envsynth.{name}")
    raise AttributeError(f"module 'envsynth' has no attribute {name!r}")
