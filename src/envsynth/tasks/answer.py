"""What an information task asks: the step whose result is the answer, and the field of it.

Part of the core stage: drawn once per task (from the plan's stream), before the states.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.models import Entity
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows
from envsynth.tasks.answerpath import answer_in, group_field
from envsynth.tasks.askable import ANSWER_TYPES, set_by_chain
from envsynth.tasks.chain import Step
from envsynth.tasks.instruction import identity_fields
from envsynth.tasks.model import Call
from envsynth.tasks.world import Instance


@dataclass(frozen=True)
class Question:
    """The answer of a task: ``step``'s result's ``field`` (both None for a task without a question).

    ``avoid`` maps (table, key) of the row a get reads to the field its description must
    not use (it is the answer).
    """

    step: int | None
    field: str | None
    avoid: dict[tuple[str, Any], tuple[str, ...]]

    def answer(self, results: list[Any]) -> Any:
        """The answer in a run's results (None when the task asks nothing or the result lacks it)."""
        return extract(results, self.step, self.field)


def ask(inst: Instance, core: Rows) -> Question:
    """The task's question (drawn from the plan's stream; none when the chain ends with a write)."""
    plan = inst.plan
    step, field = _answer_spec(plan.app, plan.steps, inst.calls, plan.rng, core)
    return Question(step, field, _answered_rows(plan.app, inst.calls, step, field))


def extract(results: list[Any], step: int | None, field: str | None) -> Any:
    """``field`` of the result of ``step`` (None when either is None or the result is no dict)."""
    if step is None or field is None:
        return None
    return answer_in(results[step], field)


def _answer_spec(app: App, steps: list[Step], calls: list[Call], rng: random.Random, core: Rows) -> tuple[int | None, str | None]:
    last = steps[-1].spec
    if last.mode == "write" or last.query is None:
        return None, None
    i = len(steps) - 1
    if last.query.op == "get":
        ent = app.blueprint.entity(last.entity)
        stated, computed = set_by_chain(app, [st.spec for st in steps[:-1]], ent.name)
        stated |= identity_fields(app.blueprint, ent)  # nobody asks for their own name or email
        # never a field the request itself gives (an argument, a state its verb names); the row's description leaves it out
        fields = [
            f.name
            for f in ent.fields
            if f.type in ANSWER_TYPES and f.name not in stated and _has_value(ent, f.name, calls[i], core, computed)
        ]
        preferred = [f for f in fields if f in computed] or fields  # what the chain worked out is worth asking about
        return i, rng.choice(preferred) if preferred else None
    if last.query.op == "aggregate" and last.query.group_by:  # one group's value: "how many of the orders are pending?"
        keys = sorted({r[last.query.group_by] for r in core.get(last.query.entity, ()) if isinstance(r.get(last.query.group_by), str)})
        return (i, group_field(last.query.group_by, rng.choice(keys))) if keys else (i, None)
    if last.query.op == "aggregate":
        return i, "value"
    return i, "total"


def _has_value(ent: Entity, field: str, get: Call, core: Rows, computed: set[str]) -> bool:
    """Whether the row a get reads can have a value in ``field``: not an empty field of the pre-existing row it reads,
    nor a field that may be empty of a row the chain made and did not fill (an order's tracking number)."""
    if field in computed:
        return True
    key = next((v for v in get.args.values() if isinstance(v, str)), None) if not get.refs else None
    row = next((r for r in core.get(ent.name, ()) if r.get(ent.id_field) == key), None) if key is not None else None
    if row is not None:
        return row.get(field) is not None
    return not ent.field(field).nullable


def _answered_rows(app: App, calls: list[Call], step: int | None, field: str | None) -> dict[tuple[str, Any], tuple[str, ...]]:
    """(table, key) of the row a get answer reads -> the field its description must not use (it is the answer)."""
    if step is None or field is None or app.spec_by_name[calls[step].tool].kind != "get":
        return {}
    b = app.spec_by_name[calls[step].tool].bindings[0]
    key = calls[step].args.get(b.param or "")
    return {(b.entity, key): (field,)} if key is not None else {}
