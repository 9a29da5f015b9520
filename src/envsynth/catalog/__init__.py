"""The shipped catalogue of domain blueprints (YAML files beside this module)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import load_blueprint, read_yaml, tool_specs
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


ORDER_FILE = CATALOG_DIR / "order.txt"
"""The file stems of the shipped blueprints in the order they joined the catalogue (see :func:`order`)."""


def order() -> list[str]:
    """The file stems ``order.txt`` lists, in its order: each app's index in a corpus. An app appended there leaves the
    indexes, and so the tasks, of the apps before it unchanged."""
    lines = (line.strip() for line in ORDER_FILE.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@cache
def entries() -> tuple[CatalogEntry, ...]:
    """All shipped blueprints, in the catalogue's order (:func:`order`; a file it does not list comes after those,
    by name), read without full validation."""
    rank = {stem: i for i, stem in enumerate(order())}
    out = []
    for path in sorted(CATALOG_DIR.glob("*.yaml"), key=lambda p: (rank.get(p.stem, len(rank)), p.stem)):
        data = read_yaml(path.read_text(encoding="utf-8")) or {}
        out.append(
            CatalogEntry(data.get("name", path.stem), path, data.get("title", ""), data.get("category", ""), data.get("description", ""))
        )
    return tuple(out)


def names() -> list[str]:
    """The names of the shipped blueprints, in the catalogue's order (an app's index in a corpus)."""
    return [e.name for e in entries()]


SUMMARY_FIELDS = ("name", "title", "category", "tables", "tools", "writes", "policy_rules", "description")
"""The keys of a :func:`summary`, in the order ``envsynth catalog`` shows them."""


def summary(bp: Blueprint) -> dict[str, Any]:
    """What ``envsynth catalog`` lists of an app: its name, title and category, the number of its
    tables (entities), tools (and how many write) and policy rules, and its description."""
    specs = tool_specs(bp)
    return {
        "name": bp.name,
        "title": bp.title,
        "category": bp.category,
        "tables": len(bp.entities),
        "tools": len(specs),
        "writes": sum(s.mode == "write" for s in specs),
        "policy_rules": len(bp.policy.rules) if bp.policy is not None else 0,
        "description": bp.description,
    }


def summaries() -> list[dict[str, Any]]:
    """The :func:`summary` of every shipped app, sorted by name.

    Raises:
        BlueprintError: a shipped blueprint is invalid.
    """
    return [summary(load(e.name)) for e in entries()]


def load(name: str) -> Blueprint:
    """Load and validate a shipped blueprint by name (or by its file stem).

    Raises:
        BlueprintError: unknown name, or an invalid blueprint.
    """
    for e in entries():
        if name in (e.name, e.path.stem):
            return load_blueprint(e.path)
    raise BlueprintError("", f"no shipped domain {name!r}; choose from: {', '.join(names()) or '(none)'}")
