"""Archetype expansion: each blueprint action becomes an explicit ToolSpec.

The meaning of every archetype lives in :mod:`envsynth.blueprint.archetypes` and the
per-action bookkeeping and name checks in :mod:`envsynth.blueprint.expander`; this module
runs them over a blueprint, checks the entities' cross references and collects every
problem, each carrying the path of the offending item (``actions[4].to``).
"""

from __future__ import annotations

from collections.abc import Iterator

from envsynth.blueprint.archetypes import BY_KIND as _BY_KIND
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expander import _Expander, as_old
from envsynth.blueprint.fieldtypes import (  # re-exported: this module's names before the split
    _STRING_TYPES,
    DATE_PATTERN,
    DATETIME_PATTERN,
    EMAIL_PATTERN,
    GENERATED_LOCALS,
    article,
    default_value_expr,
    human,
    json_type,
)
from envsynth.blueprint.language import language_problems
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.policy import apply as apply_policy
from envsynth.blueprint.problems import suggest
from envsynth.blueprint.spec import ToolSpec

__all__ = [
    "DATETIME_PATTERN",
    "DATE_PATTERN",
    "EMAIL_PATTERN",
    "GENERATED_LOCALS",
    "article",
    "as_old",
    "default_value_expr",
    "expand",
    "expand_all",
    "human",
    "json_type",
]


def expand(bp: Blueprint) -> list[ToolSpec]:
    """Expand every action of a blueprint.

    Raises:
        BlueprintError: the first problem, carrying every problem found (see :func:`expand_all`).
    """
    specs, problems = expand_all(bp)
    if problems:
        raise BlueprintError.collected(problems)
    return specs  # type: ignore[return-value]


_CONSEQUENCES = (KeyError, TypeError, ValueError, AttributeError)
"""What expanding an action may raise when it trips over an entity problem already reported."""


def expand_all(bp: Blueprint) -> tuple[list[ToolSpec | None], list[BlueprintError]]:
    """Expand every action, collecting problems: the entities', then each action's, then the words'.

    Returns the tool specs (None for an action that has a problem) and the problems, in the
    order :func:`expand` reports them (its first problem is the first of this list).
    """
    problems = list(_entity_problems(bp))
    unknown = {f.ref for e in bp.entities for f in e.fields if f.type == "ref" and not bp.has_entity(f.ref or "")}  # reported once
    names: set[str] = set()
    specs: list[ToolSpec | None] = []
    for i, action in enumerate(bp.actions):
        if action.name in names:
            problems.append(BlueprintError(f"actions[{i}].name", f"duplicate action name {action.name!r}"))
        names.add(action.name)
        try:
            specs.append(_BY_KIND[action.kind](_Expander(bp, i, action), action))  # type: ignore[operator]
        except BlueprintError as exc:
            problems.extend(p for p in exc.all if not any(f"unknown entity {r!r}" in p.message for r in unknown))
            specs.append(None)
        except _CONSEQUENCES:
            if not problems:  # nothing reported explains it: a bug, not a blueprint problem
                raise
            specs.append(None)
    if all(s is not None for s in specs):
        try:
            specs = list(apply_policy(bp, specs))  # type: ignore[arg-type]  # policy rules and authorization (blueprint/policy.py)
        except BlueprintError as exc:
            problems.extend(exc.all)
    problems.extend(language_problems(bp, specs))
    return specs, problems


def _entity_problems(bp: Blueprint) -> Iterator[BlueprintError]:
    """The problems of the entities together: duplicate names and prefixes, labels, references, cycles."""
    seen: set[str] = set()
    prefixes: dict[str, str] = {}
    for i, ent in enumerate(bp.entities):
        if ent.name in seen:
            yield BlueprintError(f"entities[{i}].name", f"duplicate entity {ent.name!r}")
        seen.add(ent.name)
        if ent.prefix in prefixes:
            yield BlueprintError(
                f"entities[{i}].id_prefix", f"id prefix {ent.prefix!r} is also used by {prefixes[ent.prefix]!r}; set id_prefix"
            )
        prefixes.setdefault(ent.prefix, ent.name)
        if ent.label is not None and ent.field(ent.label).type not in _STRING_TYPES:
            yield BlueprintError(f"entities[{i}].label", "the label must be a text field")
    for i, ent in enumerate(bp.entities):
        for j, f in enumerate(ent.fields):
            if f.type == "ref" and not bp.has_entity(f.ref or ""):
                known = [e.name for e in bp.entities]
                yield BlueprintError(
                    f"entities[{i}].fields[{j}].ref", f"unknown entity {f.ref!r}{suggest(f.ref, known)} (entities: {', '.join(known)})"
                )
    # references must not form a cycle through non-nullable fields (rows could not be created)
    import networkx as nx

    g = nx.DiGraph()
    for ent in bp.entities:
        g.add_node(ent.name)
        for f in ent.fields:
            if f.type == "ref" and not f.nullable and f.ref != ent.name:
                g.add_edge(ent.name, f.ref)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    yield BlueprintError("entities", f"required references form a cycle {cycle}; make one of them nullable")
