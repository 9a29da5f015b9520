"""A variant stage: the oracle first looks the requester up by what they gave, as an agent would.

A person who says "Hi, this is Dana Whitfield (dana@example.net)" is found with the app's get
by that field (``find_customer_by_email``) before anything is done for them; the calls that
act on their row then take its id from that lookup's result. Registered in
:data:`envsynth.tasks.synth.VARIANTS`; the varied task is admitted again on its state.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.tasks.admission.admit import Admitted
from envsynth.tasks.model import Call, Ref, Rejection
from envsynth.tasks.planning.oracle import oracle_program
from envsynth.tasks.wording.instruction import identify_by, refers_to


def look_up_requester(app: App, admitted: Admitted) -> Admitted | Rejection:
    """``admitted`` with the requester's lookup as the oracle's first call (unchanged when nothing acts on their row)."""
    task = admitted.task
    found = _requester(app, admitted)
    if found is None:
        return admitted
    get, table, row = found
    id_field = app.blueprint.entity(table).id_field
    key = row[id_field]
    if not any(_names(app, c, table, key) for c in task.oracle):
        return admitted  # no call names the requester's row: a lookup would be an errand of its own
    oracle = [_shifted(app, c, table, key, id_field) for c in task.oracle]
    return _after_lookups(admitted, [_lookup(get, row)], oracle)


def _names(app: App, call: Call, table: str, key: Any) -> bool:
    """Whether ``call`` passes ``key`` as the id of a row of ``table`` (what :func:`_shifted` takes from the lookup)."""
    return any(call.args.get(p.name) == key and refers_to(app.blueprint, p) == table for p in app.spec_by_name[call.tool].params)


def _lookup(get: ToolSpec, row: dict[str, Any]) -> Call:
    """The call of ``get`` that finds ``row`` by the value it is looked up by."""
    binding = get.bindings[0]
    return Call(tool=get.name, args={binding.param or "": row[binding.key]})


def _after_lookups(admitted: Admitted, lookups: list[Call], oracle: list[Call]) -> Admitted:
    """``admitted`` whose oracle makes ``lookups`` first, then ``oracle`` (already shifted past them)."""
    n = len(lookups)
    answer_step = admitted.task.answer_step + n if admitted.task.answer_step is not None else None
    return with_oracle(admitted, [*lookups, *oracle], answer_step, (*range(n), *(s + n for s in admitted.lookups)))


def with_oracle(admitted: Admitted, calls: list[Call], answer_step: int | None, lookups: tuple[int, ...]) -> Admitted:
    """``admitted`` whose oracle is ``calls`` (``lookups``: the steps that are lookups), its new tools visible."""
    task = admitted.task
    lookups_tools = [calls[i].tool for i in lookups]
    visible = [*task.visible_tools, *dict.fromkeys(t for t in lookups_tools if t not in task.visible_tools)]
    varied = task.model_copy(
        update={
            "oracle": calls,
            "oracle_program": oracle_program(calls, answer_step, task.answer_field),
            "answer_step": answer_step,
            "visible_tools": visible,
            "stats": {**task.stats, "chain_length": len(calls), "visible_tools": len(visible)},
        }
    )  # sealed after the last variant (admission.vary)
    return replace(admitted, task=varied, lookups=lookups)


def _requester(app: App, admitted: Admitted) -> tuple[ToolSpec, str, dict[str, Any]] | None:
    """(the get that finds the requester by a value they gave, their table, their row), or None."""
    task = admitted.task
    text = task.instruction
    for spec, table, field in app.index.of(_identity_gets, app):
        rows = [
            r for r in admitted.state.get(table, ()) if task.user.name in r.values() and isinstance(r.get(field), str) and r[field] in text
        ]
        if len(rows) == 1:
            return spec, table, rows[0]
    return None


def requester_row(app: App, admitted: Admitted) -> tuple[str, dict[str, Any]] | None:
    """(the table, the row) of the person asking: the one row of a person's table with their name and a value they
    identify themselves by that the request states; None for staff or when none or several match."""
    task = admitted.task
    for table, fields in app.index.of(_people, app):
        rows = [
            r
            for r in admitted.state.get(table, ())
            if task.user.name in r.values() and any(isinstance(r.get(f), str) and r[f] in task.instruction for f in fields)
        ]
        if len(rows) == 1:
            return table, rows[0]
    return None


def _people(app: App) -> list[tuple[str, list[str]]]:
    """(table, the fields a person of it identifies themselves by) of each table of people: the declared roles' (every
    table's when none is declared), those with such fields (kept on the app's index)."""
    bp = app.blueprint
    tables = [u.entity for u in bp.users if u.entity is not None] if bp.users else [e.name for e in bp.entities]
    return [(t, fields) for t in dict.fromkeys(tables) if (fields := identify_by(bp, bp.entity(t)))]


def _identity_gets(app: App) -> list[tuple[ToolSpec, str, str]]:
    """(the get, the role's table, the field it finds by) of each get that finds a person of a declared role by what they
    identify themselves by, roles in the blueprint's order (kept on the app's index)."""
    out = []
    for role in app.blueprint.users:
        if role.entity is None or not role.identify_by:
            continue
        for spec in app.specs:
            if spec.kind == "get" and spec.bindings and spec.bindings[0].entity == role.entity and spec.bindings[0].key in role.identify_by:
                out.append((spec, role.entity, spec.bindings[0].key))
    return out


def _shifted(app: App, call: Call, table: str, key: Any, id_field: str) -> Call:
    """``call`` one step later: earlier results one step on, the requester's id taken from the lookup (step 0)."""
    spec = app.spec_by_name[call.tool]
    refs = {k: r.model_copy(update={"step": r.step + 1}) for k, r in call.refs.items()}  # a ref into a search's items keeps its item
    args = dict(call.args)
    for p in spec.params:
        if args.get(p.name) == key and refers_to(app.blueprint, p) == table:
            del args[p.name]
            refs[p.name] = Ref(step=0, field=id_field)
    return call.model_copy(update={"args": args, "refs": refs})
