"""A variant stage: the oracle first looks the requester up by what they gave, as an agent would.

A person who says "Hi, this is Dana Whitfield (dana@example.net)" is found with the app's get
by that field (``find_customer_by_email``) before anything is done for them; the calls that
act on their row then take its id from that lookup's result. Registered in
:data:`envsynth.tasks.admission.VARIANTS`; the varied task is admitted again on its state.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.tasks.admission import Admitted
from envsynth.tasks.instruction import refers_to
from envsynth.tasks.model import Call, Ref, Rejection
from envsynth.tasks.oracle import oracle_program


def look_up_requester(app: App, admitted: Admitted) -> Admitted | Rejection:
    """``admitted`` with the requester's lookup as the oracle's first call (unchanged when nothing acts on their row)."""
    task = admitted.task
    found = _requester(app, admitted)
    if found is None:
        return admitted
    get, table, row = found
    key = row[app.blueprint.entity(table).id_field]
    id_field = app.blueprint.entity(table).id_field
    oracle = [_shifted(app, c, table, key, id_field) for c in task.oracle]
    if oracle == [c.model_copy(update={"refs": {k: Ref(step=r.step + 1, field=r.field) for k, r in c.refs.items()}}) for c in task.oracle]:
        return admitted  # no call names the requester's row: a lookup would be an errand of its own
    binding = get.bindings[0]
    lookup = Call(tool=get.name, args={binding.param or "": row[binding.key]})
    calls = [lookup, *oracle]
    answer_step = task.answer_step + 1 if task.answer_step is not None else None
    visible = task.visible_tools if get.name in task.visible_tools else [*task.visible_tools, get.name]
    varied = task.model_copy(
        update={
            "oracle": calls,
            "oracle_program": oracle_program(calls, answer_step, task.answer_field),
            "answer_step": answer_step,
            "visible_tools": visible,
            "stats": {**task.stats, "chain_length": len(calls), "visible_tools": len(visible)},
        }
    ).sealed()
    return Admitted(varied, admitted.state)


def _requester(app: App, admitted: Admitted) -> tuple[ToolSpec, str, dict[str, Any]] | None:
    """(the get that finds the requester by a value they gave, their table, their row), or None."""
    task = admitted.task
    text = task.instruction
    for role in app.blueprint.users:
        if role.entity is None or not role.identify_by:
            continue
        for spec in app.specs:
            if spec.kind != "get" or not spec.bindings or spec.bindings[0].entity != role.entity:
                continue
            field = spec.bindings[0].key
            if field not in role.identify_by:
                continue
            rows = [
                r
                for r in admitted.state.get(role.entity, ())
                if task.user.name in r.values() and isinstance(r.get(field), str) and r[field] in text
            ]
            if len(rows) == 1:
                return spec, role.entity, rows[0]
    return None


def _shifted(app: App, call: Call, table: str, key: Any, id_field: str) -> Call:
    """``call`` one step later: earlier results one step on, the requester's id taken from the lookup (step 0)."""
    spec = app.spec_by_name[call.tool]
    refs = {k: Ref(step=r.step + 1, field=r.field) for k, r in call.refs.items()}
    args = dict(call.args)
    for p in spec.params:
        if args.get(p.name) == key and refers_to(app.blueprint, p) == table:
            del args[p.name]
            refs[p.name] = Ref(step=0, field=id_field)
    return call.model_copy(update={"args": args, "refs": refs})
