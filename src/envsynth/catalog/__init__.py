"""The shipped catalogue of domain blueprints (YAML files beside this module)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import load_blueprint, read_yaml
from envsynth.blueprint.models import Blueprint

CATALOG_DIR = Path(__file__).parent


@dataclass(frozen=True)
class CatalogEntry:
    """A shipped blueprint: its name (the ``--domain`` value), file, title and category."""

    name: str
    path: Path
    title: str
    category: str
    description: str


@cache
def entries() -> tuple[CatalogEntry, ...]:
    """All shipped blueprints, sorted by name (read without full validation)."""
    out = []
    for path in sorted(CATALOG_DIR.glob("*.yaml")):
        data = read_yaml(path.read_text(encoding="utf-8")) or {}
        out.append(
            CatalogEntry(data.get("name", path.stem), path, data.get("title", ""), data.get("category", ""), data.get("description", ""))
        )
    return tuple(out)


def names() -> list[str]:
    return [e.name for e in entries()]


def load(name: str) -> Blueprint:
    """Load and validate a shipped blueprint by name (or by its file stem).

    Raises:
        BlueprintError: unknown name, or an invalid blueprint.
    """
    for e in entries():
        if name in (e.name, e.path.stem):
            return load_blueprint(e.path)
    raise BlueprintError("", f"no shipped domain {name!r}; choose from: {', '.join(names()) or '(none)'}")
