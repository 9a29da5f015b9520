"""A small catalogue corpus composition and a file-by-file hash of a folder, shared by the scale tests."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from envsynth import catalog
from envsynth.blueprint.models import Blueprint

APPS = ("tempo_music", "taskboard")
COMPOSITION: dict[str, Any] = {"tasks_per_app": 3, "states": 2, "distractors": 2, "seed": 0}


def blueprints() -> list[Blueprint]:
    return [catalog.load(name) for name in APPS]


def hashes(root: Path) -> dict[str, str]:
    """Every file under ``root``: relative path -> sha256 of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}
