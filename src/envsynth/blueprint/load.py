"""Loading blueprints from YAML files or dicts, with errors that point at the field."""

from __future__ import annotations

import difflib
from pathlib import Path
from string import Formatter
from typing import Any

import yaml
from pydantic import ValidationError

from envsynth.blueprint.correlate import check_correlations
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import ARCHETYPES, Blueprint, Generator
from envsynth.blueprint.spec import ToolSpec


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ARCHETYPES and out.endswith("]"):
            continue  # the discriminator tag pydantic inserts for tagged unions
        elif str(part).startswith(("function-after", "function-before", "tagged-union")):
            continue
        else:
            out += f".{part}" if out else str(part)
    return out


def from_dict(data: Any, source: str | None = None) -> Blueprint:
    """Validate a blueprint given as plain data (as parsed from YAML/JSON).

    Raises:
        BlueprintError: the first problem, with its path, e.g. ``entities[2].fields[1].type``.
    """
    if not isinstance(data, dict):
        raise BlueprintError("", f"a blueprint is a mapping, got {type(data).__name__}", source)
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc, source) from None
    try:
        expand(bp)
        _check_generators(bp)
        check_correlations(bp)
    except BlueprintError as exc:
        raise exc.located(source) if source else exc from None
    return bp


def _first_error(exc: ValidationError, source: str | None) -> BlueprintError:
    """The problem to report first: an unknown key (a typo hides the key it meant), else pydantic's first."""
    errors = exc.errors()

    def more(shown: int) -> str:
        return f" (and {len(errors) - shown} more problem(s))" if len(errors) > shown else ""

    unknown = next((e for e in errors if e["type"] == "extra_forbidden"), None)
    if unknown is not None:
        meant = _meant_key(unknown["loc"], errors)
        if meant is None:
            return BlueprintError(_path(unknown["loc"]), "unknown key" + more(1), source)
        hidden = any(e["type"] == "missing" and e["loc"] == (*unknown["loc"][:-1], meant) for e in errors)
        return BlueprintError(_path(unknown["loc"]), f"unknown key; did you mean {meant}?" + more(2 if hidden else 1), source)
    first = errors[0]
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "literal_error" or first["type"] == "union_tag_invalid":
        msg = f"{msg} (got {first.get('input')!r})"
    return BlueprintError(_path(first["loc"]), msg + more(1), source)


def _meant_key(loc: tuple[Any, ...], errors: list[Any]) -> str | None:
    """The key an unknown key most likely meant: a close missing key beside it, or a close top-level field."""
    key, parent = str(loc[-1]), loc[:-1]
    missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and e["loc"][:-1] == parent]
    known = missing or (list(Blueprint.model_fields) if not parent else [])
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return close[0] if close else None


def _check_generators(bp: Blueprint) -> None:
    """Every Faker provider named exists and every date offset parses."""
    from envsynth.blueprint.values import _offset_days, faker_provider_exists

    def walk(g: Generator, path: str) -> None:
        if g.faker is not None and not faker_provider_exists(g.faker):
            raise BlueprintError(f"{path}.faker", f"Faker has no provider {g.faker!r} (see the Faker docs for provider names)")
        if g.dates is not None:
            for k, spec in enumerate(g.dates):
                try:
                    _offset_days(spec)
                except ValueError as exc:
                    raise BlueprintError(f"{path}.dates[{k}]", str(exc)) from None
        for name, part in g.parts.items():
            walk(part, f"{path}.parts.{name}")
        if g.template is not None:
            missing = {n for _, n, _, _ in Formatter().parse(g.template) if n} - set(g.parts)
            if missing:
                raise BlueprintError(f"{path}.template", f"placeholders {sorted(missing)} have no entry in parts")

    for i, ent in enumerate(bp.entities):
        for j, f in enumerate(ent.fields):
            if f.gen is not None:
                walk(f.gen, f"entities[{i}].fields[{j}].gen")


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader when PyYAML has it: ~10x faster


def read_yaml(text: str) -> Any:
    """``yaml.safe_load`` of ``text``, with libyaml's parser when available (the same data either way)."""
    return yaml.load(text, Loader=_LOADER)


def load_blueprint(path: str | Path) -> Blueprint:
    """Read and validate a blueprint YAML file."""
    p = Path(path)
    if not p.is_file():
        raise BlueprintError("", f"no such blueprint file: {p}")
    try:
        data = read_yaml(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise BlueprintError(where, f"not valid YAML: {getattr(exc, 'problem', exc)}", str(p)) from None
    return from_dict(data, str(p))


def tool_specs(bp: Blueprint) -> list[ToolSpec]:
    """The expanded tools of a validated blueprint."""
    return expand(bp)
