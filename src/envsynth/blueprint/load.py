"""Loading blueprints from YAML files or dicts, with errors that point at the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from envsynth.blueprint.collect import collect
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ToolSpec


def from_dict(data: Any, source: str | None = None) -> Blueprint:
    """Validate a blueprint given as plain data (as parsed from YAML/JSON).

    Raises:
        BlueprintError: the first problem, with its path, e.g. ``entities[2].fields[1].type``;
            it carries every problem found in ``problems`` (see :func:`envsynth.blueprint.collect.collect`).
    """
    bp, _, problems = collect(data, source)
    if problems:
        raise BlueprintError.collected(problems)
    return bp  # type: ignore[return-value]


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader when PyYAML has it: ~10x faster


def read_yaml(text: str) -> Any:
    """``yaml.safe_load`` of ``text``, with libyaml's parser when available (the same data either way)."""
    return yaml.load(text, Loader=_LOADER)


def load_blueprint(path: str | Path) -> Blueprint:
    """Read and validate a blueprint YAML file.

    Raises:
        BlueprintError: the file cannot be read, is not YAML, or the blueprint has problems
            (the first one, carrying them all, see :func:`from_dict`).
    """
    return from_dict(read_blueprint_file(path), str(path))


def read_blueprint_file(path: str | Path) -> Any:
    """The data of a blueprint YAML file, parsed but not validated.

    Raises:
        BlueprintError: the file does not exist or cannot be read, or is not valid YAML
            (located at its line and column).
    """
    p = Path(path)
    if not p.is_file():
        raise BlueprintError("", "is a folder, not a blueprint file" if p.is_dir() else "no such blueprint file", str(p))
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BlueprintError("", f"cannot read: not UTF-8 text (byte {exc.start})", str(p)) from None
    except OSError as exc:
        raise BlueprintError("", f"cannot read: {exc.strerror or exc}", str(p)) from None
    try:
        return read_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BlueprintError(where, f"not valid YAML: {problem}", str(p)) from None


def tool_specs(bp: Blueprint) -> list[ToolSpec]:
    """The expanded tools of a validated blueprint."""
    return expand(bp)
