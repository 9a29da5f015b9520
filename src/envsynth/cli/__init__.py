"""The ``envsynth`` command: a thin layer over the library (one module per group of commands).

``envsynth.cli:app`` is the typer application, ``envsynth.cli:main`` the console entry point.
"""

from __future__ import annotations

import importlib
import sys

from envsynth.cli.common import app, err

for _group in ("build", "catalogue", "run", "serve", "data", "plan"):  # each module registers its commands, in this order
    importlib.import_module(f"envsynth.cli.{_group}")

__all__ = ["app", "main"]


def main() -> None:
    """Console entry point."""
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
