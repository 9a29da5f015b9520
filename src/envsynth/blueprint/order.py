"""The order in which a blueprint's tables can be filled: referenced tables first."""

from __future__ import annotations

from envsynth.blueprint.models import Blueprint, Entity


def creation_order(bp: Blueprint) -> list[Entity]:
    """Entities ordered so that every referenced table comes first (nullable refs may point back)."""
    done: list[Entity] = []
    names: set[str] = set()
    pending = list(bp.entities)
    while pending:
        progressed = False
        for ent in list(pending):
            deps = {f.ref for f in ent.fields if f.type == "ref" and not f.nullable and f.ref != ent.name}
            if deps <= names:
                done.append(ent)
                names.add(ent.name)
                pending.remove(ent)
                progressed = True
        if not progressed:  # pragma: no cover - expand() rejects required-ref cycles
            raise ValueError(f"reference cycle among {[e.name for e in pending]}")
    return done
