"""Entity reference schema used by the graph: id field and ref fields of every entity.

Built from a blueprint when one is available, otherwise inferred from the tool specs
alone (parameters carry ``field``/``ref``/``semantic``, bindings carry ``via``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ToolSpec


@dataclass
class EntityRefs:
    """The id field of one entity and its reference fields (field -> target entity)."""

    name: str
    id_field: str | None = None
    refs: dict[str, str] = field(default_factory=dict)

    def id_outputs(self) -> list[tuple[str, str]]:
        """``(target entity, 'entity.field')`` for every id-carrying column, id first."""
        out: list[tuple[str, str]] = []
        if self.id_field:
            out.append((self.name, f"{self.name}.{self.id_field}"))
        out.extend((target, f"{self.name}.{f}") for f, target in sorted(self.refs.items()))
        return out

    def carried(self, fname: str) -> str | None:
        """The entity whose id column ``fname`` holds, or None for a plain column."""
        if fname == self.id_field:
            return self.name
        return self.refs.get(fname)


class Schema(dict[str, EntityRefs]):
    """Entity name -> :class:`EntityRefs`."""

    def entity(self, name: str) -> EntityRefs:
        if name not in self:
            self[name] = EntityRefs(name)
        return self[name]

    def carried(self, qualified: str | None) -> str | None:
        """Entity whose id an ``'entity.field'`` column holds (None if not an id column)."""
        if not qualified or "." not in qualified:
            return None
        ent, fname = qualified.split(".", 1)
        return self[ent].carried(fname) if ent in self else None


def schema_from_blueprint(bp: Blueprint) -> Schema:
    """Exact schema from a blueprint's entity definitions.

    Args:
        bp: a validated blueprint.

    Returns:
        The id and ref fields of every entity.
    """
    s = Schema()
    for ent in bp.entities:
        er = s.entity(ent.name)
        er.id_field = ent.id_field
        for f in ent.fields:
            if f.type == "ref" and f.ref:
                er.refs[f.name] = f.ref
    return s


def schema_from_specs(specs: Iterable[ToolSpec]) -> Schema:
    """Best-effort schema inferred from tool specs when no blueprint is at hand.

    Args:
        specs: the tools of one app.

    Returns:
        Id fields and ref fields that some tool parameter or binding reveals.
    """
    s = Schema()
    specs = list(specs)
    for spec in specs:
        s.entity(spec.entity)
        alias_entity = {b.alias: b.entity for b in spec.bindings}
        for p in spec.params:
            if not p.field or "." not in p.field:
                continue
            ent, fname = p.field.split(".", 1)
            er = s.entity(ent)
            if p.semantic == "id":
                er.id_field = fname
            elif p.semantic == "ref" and p.ref:
                er.refs[fname] = p.ref
        for b in spec.bindings:
            s.entity(b.entity)
            if b.via and "." in b.via:
                src, fname = b.via.split(".", 1)
                if src in alias_entity:
                    s.entity(alias_entity[src]).refs[fname] = b.entity
            elif b.param:
                er = s.entity(b.entity)
                if er.id_field is None and b.key.endswith("_id"):
                    er.id_field = b.key
        for ef in spec.effects:
            s.entity(ef.entity)
            for fname, src in ef.values.items():
                if src == "new_id()":
                    s.entity(ef.entity).id_field = fname
    return s
