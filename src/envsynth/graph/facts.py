"""Data facts of a tool: the ids its result carries and the id parameters it takes."""

from __future__ import annotations

from dataclasses import dataclass

from envsynth.blueprint.spec import ToolSpec
from envsynth.graph.schema import Schema


@dataclass(frozen=True, order=True)
class Output:
    """Ids of ``entity`` found in the tool's result, in column ``via`` ('entity.field').

    ``fresh`` marks the id of a row the call itself created.
    """

    entity: str
    via: str
    fresh: bool = False


@dataclass(frozen=True, order=True)
class Input:
    """A parameter that carries an id of ``entity``."""

    param: str
    entity: str
    required: bool


def returned_rows(spec: ToolSpec) -> list[tuple[str, bool]]:
    """Entities whose rows the tool returns, with whether the row is newly created.

    Args:
        spec: the tool.

    Returns:
        ``(entity, fresh)`` pairs, sorted. Aggregates return no rows (see :func:`outputs`).
    """
    inserted = {ef.alias: ef.entity for ef in spec.effects if ef.op == "insert"}
    bound = {b.alias: b.entity for b in spec.bindings}
    rows: set[tuple[str, bool]] = set()
    if spec.returns == "new":
        rows.update((e, True) for e in inserted.values())
    elif spec.returns == "query":
        if spec.query is not None and spec.query.op in ("get", "search"):
            rows.add((spec.query.entity, False))
    elif spec.returns == "custom":
        rows.add((spec.entity, spec.entity in spec.creates))
        rows.update((e, True) for e in spec.creates)
    elif spec.returns in inserted:
        rows.add((inserted[spec.returns], True))
    elif spec.returns in bound:
        rows.add((bound[spec.returns], False))
    return sorted(rows)


def outputs(spec: ToolSpec, schema: Schema) -> list[Output]:
    """Every id the tool's result carries.

    A returned row yields the id of its entity and the ids of the entities it references;
    an aggregate grouped by an id or ref column yields ids of that column's entity.

    Args:
        spec: the tool.
        schema: entity id / ref columns.

    Returns:
        Sorted, de-duplicated outputs.
    """
    out: set[Output] = set()
    for ent, fresh in returned_rows(spec):
        if ent not in schema:
            continue
        er = schema[ent]
        for target, via in er.id_outputs():
            out.add(Output(target, via, fresh and via == f"{ent}.{er.id_field}"))
    q = spec.query
    if q is not None and q.op == "aggregate" and q.group_by:
        target = schema.carried(f"{q.entity}.{q.group_by}")
        if target:
            out.add(Output(target, f"{q.entity}.{q.group_by}"))
    # a fresh and a non-fresh output of the same column: keep the fresh one only
    fresh_vias = {(o.entity, o.via) for o in out if o.fresh}
    return sorted(o for o in out if o.fresh or (o.entity, o.via) not in fresh_vias)


def inputs(spec: ToolSpec, schema: Schema) -> list[Input]:
    """Parameters that carry an entity id.

    Declared ``ref`` parameters count, and so do equality filters of a query on an id or
    ref column (their ``ref`` is cleared by the expander, yet they take an id).

    Args:
        spec: the tool.
        schema: entity id / ref columns.

    Returns:
        Inputs in parameter order.
    """
    eq_filters: dict[str, str] = {}
    if spec.query is not None:
        for flt in spec.query.filters:
            if flt.op == "eq":
                eq_filters[flt.param] = f"{spec.query.entity}.{flt.field}"
    out = []
    for p in spec.params:
        if p.type == "array":  # a list of ids: no single earlier result fills it
            continue
        ent = p.ref
        if ent is None and p.name in eq_filters:
            ent = schema.carried(eq_filters[p.name])
        if ent is not None:
            out.append(Input(p.name, ent, p.required))
    return out


def required_inputs(spec: ToolSpec, schema: Schema) -> dict[str, str]:
    """Required id parameters (``p.ref`` set and ``p.required``): param -> entity."""
    return {i.param: i.entity for i in inputs(spec, schema) if i.required and spec.param(i.param).ref}
