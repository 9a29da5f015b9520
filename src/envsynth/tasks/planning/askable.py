"""What a question about a row can ask: the fields of a row that a chain's request does not already state.

Shared by planning (a chain ends with a get only when something about its row is left to ask)
and the question stage (:mod:`envsynth.tasks.planning.answer`).
"""

from __future__ import annotations

from collections.abc import Sequence

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.tasks.wording.instruction import identity_fields

ANSWER_TYPES = ("money", "quantity", "int", "float", "enum", "state", "date", "string", "name", "email", "company")


def set_by_chain(app: App, specs: Sequence[ToolSpec], entity: str) -> tuple[set[str], set[str]]:
    """Fields of ``entity`` the tools write: (stated by the request, worked out by the tools).

    A field set to an argument as given, or a state field (the request's verb names the
    state), is stated; anything else the tools write (a new balance, a timestamp) is worked out.
    """
    stated: set[str] = set()
    computed: set[str] = set()
    states = {f.name for f in app.blueprint.entity(entity).fields if f.type == "state"}
    for spec in specs:
        params = {p.name for p in spec.params}
        for ef in spec.effects:
            if ef.entity != entity:
                continue
            for f, expr in ef.values.items():
                (stated if f in states or expr.strip() in params else computed).add(f)
        for f in spec.writes.get(entity, []) if not spec.effects else []:  # custom code: only what it may write is known
            (stated if f in states or f in params else computed).add(f)
    return stated, computed - stated


def askable(app: App, specs: Sequence[ToolSpec], entity: str, made: bool) -> bool:
    """Whether a get of a row of ``entity`` after the calls of ``specs`` has a field left to ask about.

    Not a field the request states (an argument, a state its verb names) nor the row's own name or
    email; for a row the chain made (``made``), not a field that may be empty which the chain did not fill.
    """
    ent = app.blueprint.entity(entity)
    stated, computed = set_by_chain(app, specs, entity)
    stated |= identity_fields(app.blueprint, ent)
    return any(f.type in ANSWER_TYPES and f.name not in stated and (f.name in computed or not (made and f.nullable)) for f in ent.fields)
