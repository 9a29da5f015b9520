"""A variant stage: the oracle first looks the requester up by what they gave, as an agent would.

A person who says "Hi, this is Dana Whitfield (dana@example.net)" is found with the app's get
by that field (``find_customer_by_email``) before anything is done for them; the calls that
act on their row then take its id from that lookup's result. Registered in
:data:`envsynth.tasks.admission.VARIANTS`; the varied task is admitted again on its state.
"""

from __future__ import annotations

import re
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
    task = admitted.task
    calls = [*lookups, *oracle]
    answer_step = task.answer_step + len(lookups) if task.answer_step is not None else None
    visible = [*task.visible_tools, *dict.fromkeys(c.tool for c in lookups if c.tool not in task.visible_tools)]
    varied = task.model_copy(
        update={
            "oracle": calls,
            "oracle_program": oracle_program(calls, answer_step, task.answer_field),
            "answer_step": answer_step,
            "visible_tools": visible,
            "stats": {**task.stats, "chain_length": len(calls), "visible_tools": len(visible)},
        }
    )  # sealed after the last variant (admission.vary)
    return Admitted(varied, admitted.state)


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
    refs = {k: Ref(step=r.step + 1, field=r.field) for k, r in call.refs.items()}
    args = dict(call.args)
    for p in spec.params:
        if args.get(p.name) == key and refers_to(app.blueprint, p) == table:
            del args[p.name]
            refs[p.name] = Ref(step=0, field=id_field)
    return call.model_copy(update={"args": args, "refs": refs})


def look_up_named_rows(app: App, admitted: Admitted) -> Admitted | Rejection:
    """``admitted`` with a lookup first for every row the request names by a unique value the app has a get by.

    "Apply the coupon SPRING10 to my order": the agent finds the coupon with
    ``get_coupon_by_code`` and passes on its id; so does the oracle. Unchanged when the
    request names no row that way. Runs after :func:`look_up_requester` (the requester's row
    is already taken from their lookup).
    """
    task = admitted.task
    found = _named_rows(app, admitted)
    if not found:
        return admitted
    step_of = {(table, row[app.blueprint.entity(table).id_field]): i for i, (_, table, row) in enumerate(found)}
    oracle = [_taken(app, c, step_of, len(found)) for c in task.oracle]
    return _after_lookups(admitted, [_lookup(get, row) for get, _, row in found], oracle)


def _named_rows(app: App, admitted: Admitted) -> list[tuple[ToolSpec, str, dict[str, Any]]]:
    """(the get by a unique field, the table, the row) of each pre-existing row an oracle call passes the id of
    whose value of that field the request states, in the order the calls first name them."""
    task, bp = admitted.task, app.blueprint
    gets = app.index.of(_unique_gets, app)
    out: list[tuple[ToolSpec, str, dict[str, Any]]] = []
    seen: set[tuple[str, Any]] = set()
    for call in task.oracle:
        spec = app.spec_by_name[call.tool]
        for p in spec.params:
            table, key = refers_to(bp, p), call.args.get(p.name)
            if table is None or not isinstance(key, str) or (table, key) in seen:
                continue
            seen.add((table, key))
            row = next((r for r in admitted.state.get(table, ()) if r.get(bp.entity(table).id_field) == key), None)
            get = next((g for g in gets if g.bindings[0].entity == table and row is not None and _stated(row, g, task.instruction)), None)
            if get is not None and row is not None:
                out.append((get, table, row))
    return out


def _unique_gets(app: App) -> list[ToolSpec]:
    """The app's gets by a unique field other than the id (kept on the app's index)."""
    return [s for s in app.specs if s.kind == "get" and s.bindings and _by_unique_value(app, s)]


def _by_unique_value(app: App, get: ToolSpec) -> bool:
    ent = app.blueprint.entity(get.bindings[0].entity)
    key = get.bindings[0].key
    return key != ent.id_field and ent.has(key) and ent.field(key).unique


def _stated(row: dict[str, Any], get: ToolSpec, text: str) -> bool:
    """Whether the request states the row's value of the get's field (as a word of 3+ characters)."""
    value = row.get(get.bindings[0].key)
    return isinstance(value, str) and len(value) >= 3 and re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text) is not None


def _taken(app: App, call: Call, step_of: dict[tuple[str, Any], int], n: int) -> Call:
    """``call`` ``n`` steps later, the ids of the looked-up rows taken from their lookups."""
    spec = app.spec_by_name[call.tool]
    refs = {k: Ref(step=r.step + n, field=r.field) for k, r in call.refs.items()}
    args = dict(call.args)
    for p in spec.params:
        table = refers_to(app.blueprint, p)
        step = step_of.get((table or "", args.get(p.name))) if isinstance(args.get(p.name), str) else None
        if step is not None:
            del args[p.name]
            refs[p.name] = Ref(step=step, field=app.blueprint.entity(table or "").id_field)
    return call.model_copy(update={"args": args, "refs": refs})
