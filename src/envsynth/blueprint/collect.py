"""Every problem of a blueprint at once: structure, cross references, generators.

:func:`collect` validates the whole document with the models (pydantic reports every
structural problem), then checks the cross references of what is valid: invalid
entities and actions are left out (invalid optional top-level keys take their
defaults) and the rest is expanded and checked, so independent problems are all
reported. A problem that only echoes an entity left out (``unknown entity 'pet'``
where ``pet`` is the invalid entity) is not reported again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from string import Formatter
from typing import Any

from pydantic import ValidationError

from envsynth.blueprint.correlate import check_correlations
from envsynth.blueprint.defaults import fill_defaults
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expand import expand_all
from envsynth.blueprint.models import Blueprint, Generator
from envsynth.blueprint.problems import problems_of
from envsynth.blueprint.spec import ToolSpec

_PLACEHOLDERS = {"name": "blueprint", "title": "Blueprint", "category": "other"}
"""Stand-ins for invalid required top-level values, so the rest can still be checked."""

SHAPE = "a blueprint is a mapping with the keys name, title, category, entities and actions"


def collect(data: Any, source: str | None = None) -> tuple[Blueprint | None, list[ToolSpec], list[BlueprintError]]:
    """Validate ``data`` (parsed YAML) and find all its problems.

    Returns:
        The blueprint and its tool specs when there is no problem (else None and []),
        and the problems, in the order :func:`envsynth.blueprint.load.from_dict` reports
        them (its error is the first of them).
    """
    if data is None:
        return None, [], [BlueprintError("", f"the blueprint is empty; {SHAPE}", source)]
    if not isinstance(data, dict):
        return None, [], [BlueprintError("", f"{SHAPE}, got {type(data).__name__}", source)]
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc, Blueprint, source)
        partial = _partial(data, exc)
        if partial is not None:
            _, more = _cross_problems(partial.blueprint)
            problems += [partial.renumbered(p, source) for p in more if partial.own(p)]
        return None, [], problems
    bp = fill_defaults(bp)  # the words it leaves out that its names do not give (blueprint/defaults.py)
    specs, problems = _cross_problems(bp)
    if problems:
        return None, [], [p.located(source) if source else p for p in problems]
    return bp, specs, []  # type: ignore[return-value]


def _cross_problems(bp: Blueprint) -> tuple[list[ToolSpec | None], list[BlueprintError]]:
    specs, problems = expand_all(bp)
    problems = problems + list(generator_problems(bp))
    try:
        check_correlations(bp)
    except BlueprintError as exc:
        problems.append(exc)
    return specs, problems


def _partial(data: dict[str, Any], exc: ValidationError) -> _Partial | None:
    """The valid part of an invalid blueprint: its invalid entities and actions left out, invalid optional keys at their defaults.

    None when the part cannot be had (entities or actions not a list, a required key
    without a stand-in, nothing valid left).
    """
    bad: dict[str, set[int]] = {"entities": set(), "actions": set()}
    part = dict(data)
    for err in exc.errors():
        if not _set_aside(err["loc"], bad, part):
            return None
    kept = {key: [i for i in range(len(data[key])) if i not in bad[key]] for key in bad}
    for key, indexes in kept.items():
        part[key] = [data[key][i] for i in indexes]
    dropped = [data["entities"][i].get("name") if isinstance(data["entities"][i], dict) else None for i in bad["entities"]]
    try:
        bp = Blueprint.model_validate(part)
    except ValidationError:
        return None
    return _Partial(bp, kept, {n for n in dropped if isinstance(n, str)})


def _set_aside(loc: tuple[Any, ...], bad: dict[str, set[int]], part: dict[str, Any]) -> bool:
    """Set aside what an error is about (an entity or action to leave out, an optional key to default); False when nothing can be."""
    key = loc[0] if loc else None
    if key in bad and len(loc) > 1 and isinstance(loc[1], int):
        bad[key].add(loc[1])  # type: ignore[index]
    elif key in bad or not isinstance(key, str):
        return False
    elif key in _PLACEHOLDERS:
        part[key] = _PLACEHOLDERS[key]
    elif key not in Blueprint.model_fields or not Blueprint.model_fields[key].is_required():
        part.pop(key, None)
    else:
        return False
    return True


@dataclass
class _Partial:
    """The valid part of a blueprint, where its items were in the file, and the names of the entities left out."""

    blueprint: Blueprint
    kept: dict[str, list[int]]  # "entities"/"actions" -> the file index of each item kept
    dropped: set[str]

    def own(self, p: BlueprintError) -> bool:
        """Whether a problem of the part is its own, not the echo of an entity left out (already reported)."""
        return not any(f"unknown entity {name!r}" in p.message for name in self.dropped)

    def renumbered(self, p: BlueprintError, source: str | None) -> BlueprintError:
        """A problem of the part with its entity or action index as in the file."""
        path = re.sub(r"^(entities|actions)\[(\d+)\]", lambda m: f"{m.group(1)}[{self.kept[m.group(1)][int(m.group(2))]}]", p.path)
        return BlueprintError(path, p.message, source)


def generator_problems(bp: Blueprint) -> Iterator[BlueprintError]:
    """Every Faker provider that does not exist, date offset that does not parse and template part missing."""
    for i, ent in enumerate(bp.entities):
        for j, f in enumerate(ent.fields):
            if f.gen is not None:
                yield from _generator(f.gen, f"entities[{i}].fields[{j}].gen")


def _generator(g: Generator, path: str) -> Iterator[BlueprintError]:
    from envsynth.blueprint.values import _offset_days, faker_provider_exists

    if g.faker is not None and not faker_provider_exists(g.faker):
        yield BlueprintError(f"{path}.faker", f"Faker has no provider {g.faker!r} (see the Faker docs for provider names)")
    for k, spec in enumerate(g.dates or ()):
        try:
            _offset_days(spec)
        except ValueError as exc:
            yield BlueprintError(f"{path}.dates[{k}]", str(exc))
    for name, part in g.parts.items():
        yield from _generator(part, f"{path}.parts.{name}")
    if g.template is not None:
        try:
            names = {n for _, n, _, _ in Formatter().parse(g.template) if n}
        except ValueError as exc:
            yield BlueprintError(f"{path}.template", f"not a template ({exc}); write parts as {{name}} and no other braces")
            return
        missing = names - set(g.parts)
        if missing:
            yield BlueprintError(f"{path}.template", f"placeholders {sorted(missing)} have no entry in parts")
