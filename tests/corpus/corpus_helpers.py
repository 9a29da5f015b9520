"""Constants and helpers shared by the corpus tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DATA = Path(__file__).parent.parent / "data"
COMPOSITION: dict[str, Any] = {"tasks_per_app": 3, "states": 2, "distractors": 2, "seed": 0}


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
