"""What an information task asks: the step whose result is the answer, and the field of it.

Part of the core stage: drawn once per task (from the plan's stream), before the states.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from envsynth.blueprint.models import Entity
from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.answerpath import answer_in, group_field, group_of
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows
from envsynth.tasks.building.world import Instance
from envsynth.tasks.model import Call
from envsynth.tasks.planning.askable import ANSWER_TYPES, set_by_chain
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.wording.instruction import identity_fields


@dataclass(frozen=True)
class Question:
    """The answer of a task: ``step``'s result's ``field`` (both None for a task without a question).

    ``avoid`` maps (table, key) of the row a get reads to the field its description must
    not use (it is the answer). ``group_row``: for one group of an aggregate grouped by a
    reference ("how many memberships are on the plan ...?"), the index of the row the group
    is of among the core's targets (the request names it).
    """

    step: int | None
    field: str | None
    avoid: dict[tuple[str, Any], tuple[str, ...]]
    group_row: int | None = None

    def answer(self, results: list[Any]) -> Any:
        """The answer in a run's results (None when the task asks nothing or the result lacks it)."""
        return extract(results, self.step, self.field)

    def in_state(self, app: App, calls: list[Call], targets: list[tuple[str, Any]]) -> Question:
        """The question under a task state's ids (its ``calls`` and ``targets``): the group of a row takes that row's id."""
        group = group_of(self.field) if self.field else None
        if self.step is None or group is None:
            return self
        key = _named_group(app.spec_by_name[calls[self.step].tool], calls[self.step])
        if key is None and self.group_row is not None:
            key = targets[self.group_row][1]
        return replace(self, field=group_field(group[0], key)) if key is not None else self


def ask(inst: Instance, core: Rows, targets: list[tuple[str, Any]]) -> Question:
    """The task's question (drawn from the plan's stream; none when the chain ends with a write).

    The row of an asked group of an aggregate grouped by a reference is added to ``targets``
    (the core's: the request names it).
    """
    plan = inst.plan
    step, field = _answer_spec(plan.app, plan.steps, inst.calls, plan.rng, core)
    return Question(step, field, _answered_rows(plan.app, inst.calls, step, field), _group_row(plan.app, inst.calls, step, field, targets))


def _group_row(app: App, calls: list[Call], step: int | None, field: str | None, targets: list[tuple[str, Any]]) -> int | None:
    """The index in ``targets`` (appended when missing) of the row an asked group is of, when the aggregate groups by a
    reference its call does not narrow to; else None."""
    group = group_of(field) if field else None
    if step is None or group is None or _named_group(app.spec_by_name[calls[step].tool], calls[step]) is not None:
        return None
    q = app.spec_by_name[calls[step].tool].query
    f = app.blueprint.entity(q.entity).field(group[0]) if q is not None else None
    if f is None or f.type != "ref" or f.ref is None:
        return None
    row = (f.ref, group[1])
    if row not in targets:
        targets.append(row)
    return targets.index(row)


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
        by = last.query.group_by
        named = _named_group(last, calls[i])
        if named is not None:  # narrowed to one row's group: "how many people follow the artist ...?"
            return i, group_field(by, named)
        keys = _group_keys(last, calls[i], core)
        return (i, group_field(last.query.group_by, rng.choice(keys))) if keys else (i, None)
    if last.query.op == "aggregate":
        return i, "value"
    return i, "total"


def _group_keys(spec: ToolSpec, call: Call, core: Rows) -> list[str]:
    """The groups a grouped aggregate ``call`` can answer with: those of the core rows its filters keep (a group no row
    falls in is not in the result), else of every core row."""
    q = spec.query
    if q is None or not q.group_by:
        return []
    rows = [r for r in core.get(q.entity, ()) if isinstance(r.get(q.group_by), str)]
    kept = [r for r in rows if all(_passes(r.get(flt.field), flt.op, call.args.get(flt.param)) for flt in q.filters)]
    return sorted({r[q.group_by] for r in kept or rows})


def _passes(value: Any, op: str, arg: Any) -> bool:
    """Whether a row's ``value`` passes a filter ``op`` with argument ``arg`` (None: no filter), as the query tools filter."""
    if arg is None:
        return True
    if value is None:
        return False
    try:
        if op == "contains":
            return str(arg).lower() in str(value).lower()
        if op == "in":
            return value in arg
        return bool(value >= arg) if op == "gte" else bool(value <= arg) if op == "lte" else bool(value == arg)
    except TypeError:  # a value the tool would compare in SQL: count it as kept
        return True


def _named_group(spec: ToolSpec, call: Call) -> str | None:
    """The key of the one group a grouped aggregate ``call`` narrows to (its filter on the field it groups by), or None."""
    q = spec.query
    if q is None or not q.group_by:
        return None
    return next((v for flt in q.filters if flt.field == q.group_by and isinstance(v := call.args.get(flt.param), str)), None)


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
