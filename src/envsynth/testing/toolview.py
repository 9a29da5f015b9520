"""What the fixture solver looks up in a tool's spec: parameters, bindings, query filters.

Worked out once per (spec, blueprint) pair and kept on the spec's index, so that the
solver's hot loops read tuples instead of walking the spec's models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import ParamSpec, ToolSpec


@dataclass
class ToolView:
    """What the solver looks up in a tool's spec, worked out once per (spec, blueprint) objects (see :func:`tool_view`)."""

    params: tuple[tuple[ParamSpec, str, bool], ...]  # (param, name, required)
    optional: list[str]  # optional parameters other than limit and offset
    by_param: dict[str, tuple[str, str]]  # param -> (entity, key) of the first binding it loads
    binds: tuple[tuple[str, str, str, str | None, str, str], ...]  # (alias, entity, key, param, via alias, via field)
    aliases: frozenset[str]
    names: frozenset[str]  # parameter names
    filters: dict[str, Any]  # param -> the first query filter it feeds
    fields: dict[str, tuple[ParamSpec, FieldDef | None]] = field(default_factory=dict)  # see Solver._field_of
    many: tuple[tuple[str, str, str, str, str | None], ...] = ()  # (alias, entity, key, list param, item field) of rows a list loads


def tool_view(bp: Blueprint, spec: ToolSpec) -> ToolView:
    """What the solver looks up in ``spec`` (kept on the spec's index, per blueprint)."""
    return spec.index.paired(_find_view, spec, bp)


def _find_view(spec: ToolSpec, bp: Blueprint) -> ToolView:
    by_param: dict[str, tuple[str, str]] = {}
    binds = []
    for b in spec.bindings:
        if b.many:
            continue
        if b.param is not None:
            by_param.setdefault(b.param, (b.entity, b.key))
            binds.append((b.alias, b.entity, b.key, b.param, "", ""))
        else:
            src_alias, fname = (b.via or "").split(".", 1)
            binds.append((b.alias, b.entity, b.key, None, src_alias, fname))
    filters: dict[str, Any] = {}
    for flt in spec.query.filters if spec.query is not None else ():
        filters.setdefault(flt.param, flt)
    return ToolView(
        params=tuple((p, p.name, p.required) for p in spec.params),
        optional=[p.name for p in spec.params if not p.required and p.name not in ("limit", "offset")],
        by_param=by_param,
        binds=tuple(binds),
        aliases=frozenset(b.alias for b in spec.bindings),
        names=frozenset(p.name for p in spec.params),
        filters=filters,
        many=tuple((b.alias, b.entity, b.key, b.param or "", b.item) for b in spec.bindings if b.many),
    )
