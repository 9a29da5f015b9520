"""Conditional goals decided by the state: "cancel my order placed on March 3 if it is still pending; otherwise, just
tell me where it stands".

A one-step action task whose write is allowed only in some states of its row (``cancel_order`` needs a pending
order) becomes, for a share of the task indexes where it fits, a request with two outcomes. The oracle first reads
the row (the app's get by id), then acts on it. The task's states alternate between the branches: in state 0
(and every even state) the row is in the state the write needs, so the read and the write are the oracle; in
every odd state the row is in another state that the write refuses (checked by running it), so the oracle is the
read alone and the answer is the row's state. One request, different correct outcomes in different states: an
agent must look before it acts. No description of the row may use that field (it differs between the states).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows
from envsynth.tasks.building.core import Core
from envsynth.tasks.building.instantiate import ChainFailed, execute
from envsynth.tasks.building.world import Instance
from envsynth.tasks.model import Call
from envsynth.tasks.planning.answer import Question

SHARE = 1.0
"""The share of eligible task indexes made conditional: all of them (few fit: a one-step write said of its row alone)."""


@dataclass(frozen=True)
class Conditional:
    """A goal decided by the state of one row: act when ``field`` is ``value``, else tell ``field``.

    Attributes:
        entity: the row's table.
        key: the row's key in state 0.
        field: the state field the write depends on (``status``).
        value: the state the write needs, the row's in the acting states (``pending``).
        other: the state the row has in the telling states, one the write refuses (``shipped``).
    """

    entity: str
    key: Any
    field: str
    value: Any
    other: Any

    @staticmethod
    def acts(index: int) -> bool:
        """Whether task state ``index`` takes the acting branch (even states) or the telling one (odd states)."""
        return index % 2 == 0


def make_conditional(inst: Instance, core: Core, question: Question) -> tuple[Conditional, Question] | None:
    """Make ``inst`` conditional when it fits and its draw says so: ``inst.calls`` become the read and the write.

    Returns the goal and the question with the row's field kept out of its descriptions, or None (nothing changed but,
    once the checks ran, the instance's workspace closed).
    """
    plan = inst.plan
    app = plan.app
    if plan.kind != "action" or question.step is not None or len(inst.calls) != 1 or inst.calls[0].refs:
        return None
    rng = random.Random(plan.base * 7_919 + 23)
    if rng.random() >= SHARE:
        return None
    write = inst.calls[0]
    spec = app.spec_by_name[write.tool]
    found = _row_and_read(app, spec, write, core.rows)
    if found is None:
        return None
    entity, key, read = found
    if core.derived:  # one workspace open at a time: the checks below load their own
        inst.ws0.close()
        core.derived = False
    ent = app.blueprint.entity(entity)
    row = next(r for r in core.rows[entity] if r[ent.id_field] == key)
    for field in (f for f in ent.fields if f.type == "state" and row.get(f.name) is not None):
        other = _refused_state(app, core.rows, [read, write], entity, key, field, row[field.name])
        if other is not None:
            cond = Conditional(entity, key, field.name, row[field.name], other)
            avoid = {**question.avoid, (entity, key): (*question.avoid.get((entity, key), ()), field.name)}
            inst.calls = [read, write]
            return cond, Question(None, None, avoid, question.group_row)
    return None


def telling_state(cond: Conditional, rows: Rows, key: Any, id_field: str) -> Rows:
    """``rows`` (a state's core, the row under its ``key``) with the row in the state the write refuses."""
    table = [dict(r, **{cond.field: cond.other}) if r[id_field] == key else r for r in rows[cond.entity]]
    return {**rows, cond.entity: table}


def telling_question(cond: Conditional, question: Question) -> Question:
    """The question of a telling state: the read's (step 0) value of the field."""
    return Question(0, cond.field, question.avoid, question.group_row)


def _row_and_read(app: App, spec: ToolSpec, call: Call, rows: Rows) -> tuple[str, Any, Call] | None:
    """(the table, the key of the row the write acts on, the get that reads it by id), or None."""
    if spec.mode != "write" or spec.kind in ("create", "book") or spec.code is not None:
        return None
    main = next((b for b in spec.bindings if b.param and not b.many and b.entity == spec.entity), None)
    if main is None or not isinstance(call.args.get(main.param or ""), str):
        return None
    if not set(call.args) <= {b.param for b in spec.bindings}:
        return None  # values to set ("; my new country is US") would split the condition from its row
    entity, key = spec.entity, call.args[main.param or ""]
    ent = app.blueprint.entity(entity)
    get = next(
        (
            s
            for s in app.specs
            if s.kind == "get" and s.bindings and s.bindings[0].entity == entity and s.bindings[0].key == ent.id_field and s.code is None
        ),
        None,
    )
    if get is None or not any(r[ent.id_field] == key for r in rows.get(entity, [])):
        return None
    return entity, key, Call(tool=get.name, args={get.bindings[0].param or "": key})


def _refused_state(app: App, rows: Rows, calls: list[Call], entity: str, key: Any, field: Any, value: Any) -> Any:
    """A state of ``field`` other than ``value`` in which the write is refused while the read still runs (None: none)."""
    ent = app.blueprint.entity(entity)
    if not _runs(app, rows, calls):
        return None
    for other in field.states or []:
        if other == value:
            continue
        changed = {**rows, entity: [dict(r, **{field.name: other}) if r[ent.id_field] == key else r for r in rows[entity]]}
        if _runs(app, changed, calls[:1]) and not _runs(app, changed, calls):
            return other
    return None


def _runs(app: App, rows: Rows, calls: list[Call]) -> bool:
    try:
        execute(app, rows, calls, seed=0)
    except ChainFailed:
        return False
    return True
