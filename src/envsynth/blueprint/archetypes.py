"""The archetypes: what each kind of blueprint action means as a tool.

Which rows it binds, which implicit pre-conditions it checks (row exists, state allows
the move, enough balance, capacity left, unique value free), which effects it has and
which post-conditions those effects imply: one function per kind (``get``, ``search``,
``aggregate``, ``create``, ``update``, ``delete``, ``transition``, ``transfer``, ``book``,
``custom``), registered in :data:`BY_KIND`.
"""

from __future__ import annotations

import textwrap

from envsynth.blueprint import effects as V2
from envsynth.blueprint.expander import _Expander
from envsynth.blueprint.fieldtypes import default_value_expr, human, json_type
from envsynth.blueprint.models import (
    AggregateAction,
    BookAction,
    CreateAction,
    CustomAction,
    DeleteAction,
    Entity,
    FieldDef,
    Filter,
    GetAction,
    SearchAction,
    TransferAction,
    TransitionAction,
    UpdateAction,
)
from envsynth.blueprint.nouns import plural, row_noun
from envsynth.blueprint.spec import Check, Effect, FilterSpec, ParamSpec, Query, ToolSpec


def _get(x: _Expander, a: GetAction) -> ToolSpec:
    ent = x.entity(a.entity)
    by = a.by or ent.id_field
    f = x.field(ent, by, "by")
    if by != ent.id_field and not f.unique:
        raise x.err("by", f"{by!r} is not unique, a get by it could match several rows")
    p = x.param_from_field(by, f, ent)
    x.add_param(p, "by")
    x.bind_param(ent.name, ent, p, "by", key=by)
    x.explicit_params()
    x.extra_bindings()
    return x.build(
        query=Query(op="get", entity=ent.name, alias=ent.name), returns=ent.name, returns_doc=f"The {row_noun(ent.name)} record."
    )


def _filters(x: _Expander, ent: Entity, filters: list[Filter]) -> list[FilterSpec]:
    out = []
    for j, flt in enumerate(filters):
        f = x.field(ent, flt.field, f"filters[{j}].field")
        pname = flt.param_name
        if flt.op == "contains":
            if json_type(f.type) != "string":
                raise x.err(f"filters[{j}].op", "contains only applies to text fields")
            p = ParamSpec(
                name=pname,
                type="string",
                description=flt.description or f"Text to look for in the {human(f.name)} (case-insensitive).",
                required=False,
                field=f"{ent.name}.{f.name}",
                semantic=f.type,
            )
        elif flt.op == "in":
            if not f.choices:
                raise x.err(f"filters[{j}].op", "'in' only applies to enum or state fields")
            p = ParamSpec(
                name=pname,
                type="array",
                description=flt.description or f"Keep rows whose {human(f.name)} is one of these.",
                required=False,
                items_enum=list(f.choices),
                field=f"{ent.name}.{f.name}",
                semantic=f.type,
            )
        else:
            if flt.op in ("gte", "lte") and f.type not in ("money", "int", "quantity", "float", "date", "datetime"):
                raise x.err(f"filters[{j}].op", f"{flt.op} needs a numeric or date field")
            word = {"eq": "Only rows whose", "gte": "Minimum", "lte": "Maximum"}[flt.op]
            desc = flt.description or (
                f"Only {plural(row_noun(ent.name))} whose {human(f.name)} equals this." if flt.op == "eq" else f"{word} {human(f.name)}."
            )
            p = x.param_from_field(pname, f, ent, required=False, description=desc)
            if flt.op != "eq":
                p = p.model_copy(update={"minimum": None, "maximum": None, "ref": None})
            else:
                p = p.model_copy(update={"ref": None})
        x.add_param(p, f"filters[{j}]")
        out.append(FilterSpec(field=f.name, op=flt.op, param=pname))
    return out


def _search(x: _Expander, a: SearchAction) -> ToolSpec:
    ent = x.entity(a.entity)
    filters = _filters(x, ent, a.filters)
    sort = a.sort or ent.label or ent.id_field
    x.field(ent, sort, "sort")
    x.add_param(
        ParamSpec(
            name="limit",
            type="integer",
            description=f"Maximum number of results (default {a.limit}).",
            required=False,
            minimum=1,
            maximum=200,
            default=a.limit,
            semantic="int",
        ),
        "limit",
    )
    x.add_param(
        ParamSpec(
            name="offset",
            type="integer",
            description="Number of results to skip, for paging (default 0).",
            required=False,
            minimum=0,
            default=0,
            semantic="int",
        ),
        "offset",
    )
    x.explicit_params()
    q = Query(op="search", entity=ent.name, filters=filters, sort=sort, descending=a.descending)
    return x.build(query=q, returns="query", returns_doc=f"{{'total': number of matches, 'items': matching {row_noun(ent.name)} records}}.")


def _aggregate(x: _Expander, a: AggregateAction) -> ToolSpec:
    ent = x.entity(a.entity)
    if a.op != "count":
        if not a.field:
            raise x.err("field", f"{a.op} needs a numeric 'field'")
        f = x.field(ent, a.field, "field")
        if f.type not in ("money", "int", "quantity", "float"):
            raise x.err("field", f"{a.op} needs a numeric field, {a.field!r} is {f.type}")
    if a.group_by:
        x.field(ent, a.group_by, "group_by")
    filters = _filters(x, ent, a.filters)
    x.explicit_params()
    q = Query(op="aggregate", entity=ent.name, filters=filters, agg=a.op, field=a.field, group_by=a.group_by)
    doc = "{'groups': [{'<group>': value, 'value': number}]}" if a.group_by else "{'value': number}"
    return x.build(query=q, returns="query", returns_doc=doc)


def _create(x: _Expander, a: CreateAction) -> ToolSpec:
    ent = x.entity(a.entity)
    given: dict[str, str] = {}
    for j, fname in enumerate([*a.fields, *a.optional]):
        f = x.field(ent, fname, f"fields[{j}]")
        if f.type == "id":
            raise x.err(f"fields[{j}]", "the id of a new row is generated, do not take it as a parameter")
        optional = fname in a.optional
        if optional and not f.nullable and default_value_expr(f) is None:
            raise x.err(f"optional[{a.optional.index(fname)}]", f"{fname!r} is optional but has no default; make the field nullable")
        x.ref_param(f, ent, fname, required=not optional, alias=None, where=f"fields[{j}]")
        given[fname] = fname if not optional else f"{fname} if {fname} is not None else {default_value_expr(f)}"
    x.explicit_params()
    x.extra_bindings()
    given.update(a.set)
    values = x.insert_values(ent, given, "set")
    x.unique_checks(ent, [f for f in a.fields], None)
    x.effects.append(Effect(op="insert", alias="new", entity=ent.name, values=values))
    V2.write_extras(x, a, None)
    x.derive_post()
    return x.build(returns="new", returns_doc=f"The new {row_noun(ent.name)} record.")


def _update(x: _Expander, a: UpdateAction) -> ToolSpec:
    ent = x.entity(a.entity)
    p = x.param_from_field(ent.id_field, ent.fields[0], ent)
    x.add_param(p, "entity")
    x.bind_param(ent.name, ent, p, "entity")
    values: dict[str, str] = {}
    when: dict[str, str] = {}
    for j, fname in enumerate(a.fields):
        f = x.field(ent, fname, f"fields[{j}]")
        if f.type in ("id", "state"):
            raise x.err(f"fields[{j}]", f"{fname!r} is {'the id' if f.type == 'id' else 'a state field: use a transition action'}")
        alias = None if f.type != "ref" else f"new_{f.ref}"
        x.ref_param(f, ent, fname, required=False, alias=alias, where=f"fields[{j}]")
        values[fname] = fname
        when[fname] = fname
    if a.fields:  # an update with only 'set' writes it on every call
        x.pre.append(
            Check(
                id="given",
                check=" or ".join(f"{f} is not None" for f in a.fields),
                message=f"Nothing to change: give at least one of {', '.join(a.fields)}.",
                origin="implicit",
            )
        )
    x.explicit_params()
    x.extra_bindings()
    for fname, src in a.set.items():
        x.field(ent, fname, f"set.{fname}")
        src = V2.field_value(x, ent, ent.name, fname, src, f"set.{fname}")
        x.expr_ok(src, f"set.{fname}")
        values[fname] = src
    x.unique_checks(ent, list(a.fields), ent.name)
    x.effects.append(Effect(op="update", alias=ent.name, entity=ent.name, values=values, when_given=when))
    V2.write_extras(x, a, ent.name)
    x.derive_post()
    return x.build(returns=ent.name, returns_doc=f"The updated {row_noun(ent.name)} record.")


def _delete(x: _Expander, a: DeleteAction) -> ToolSpec:
    ent = x.entity(a.entity)
    p = x.param_from_field(ent.id_field, ent.fields[0], ent)
    x.add_param(p, "entity")
    x.bind_param(ent.name, ent, p, "entity")
    x.explicit_params()
    x.extra_bindings()
    cascade: list[tuple[str, str]] = []
    for other in x.bp.entities:
        for f in other.fields:
            if f.type == "ref" and f.ref == ent.name:
                if a.cascade:
                    for grand in x.bp.entities:
                        if any(g.type == "ref" and g.ref == other.name for g in grand.fields):
                            raise x.err("cascade", f"cascade goes one level deep, but {grand.name} references {other.name}")
                    cascade.append((other.name, f.name))
                else:
                    x.pre.append(
                        Check(
                            id=f"children:{other.name}.{f.name}",
                            check=f"not exists({other.name}, {f.name}={ent.name}.{ent.id_field})",
                            message=f"This {row_noun(ent.name)} cannot be deleted: {human(other.name)} records still refer to it.",
                            origin="implicit",
                        )
                    )
    V2.write_extras(x, a, ent.name)
    x.effects.append(Effect(op="delete", alias=ent.name, entity=ent.name, cascade=cascade))
    x.derive_post()
    return x.build(returns="none", returns_doc=f"{{'deleted': id of the removed {row_noun(ent.name)}}}.")


def _transition(x: _Expander, a: TransitionAction) -> ToolSpec:
    ent = x.entity(a.entity)
    states = [f for f in ent.fields if f.type == "state"]
    if a.field:
        f = x.field(ent, a.field, "field")
        if f.type != "state":
            raise x.err("field", f"{a.field!r} is not a state field")
    elif len(states) == 1:
        f = states[0]
    else:
        raise x.err("field", f"{ent.name} has {len(states)} state fields; name one in 'field'")
    assert f.states is not None and f.transitions is not None
    if a.to not in f.states:
        raise x.err("to", f"{a.to!r} is not a state of {ent.name}.{f.name} ({f.states})")
    allowed = [s for s in f.states if a.to in f.transitions.get(s, [])]
    froms = a.from_ if a.from_ is not None else allowed
    bad = [s for s in froms if s not in allowed]
    if bad or not froms:
        raise x.err(
            "from",
            f"the state machine of {ent.name}.{f.name} has no move {bad or froms} -> {a.to!r} (moves into {a.to!r} come from {allowed})",
        )
    p = x.param_from_field(ent.id_field, ent.fields[0], ent)
    x.add_param(p, "entity")
    x.bind_param(ent.name, ent, p, "entity")
    x.explicit_params()
    x.extra_bindings()
    listed = ", ".join(repr(s) for s in froms)
    need = f"one of {listed}" if len(froms) > 1 else listed
    x.pre.append(
        Check(
            id="state",
            check=f"{ent.name}.{f.name} in {froms!r}",
            message=f"This {row_noun(ent.name)} is '{{{ent.name}.{f.name}}}'; {human(a.name)} needs it to be {need}.",
            origin="implicit",
        )
    )
    values = {f.name: repr(a.to)}
    for fname, src in a.set.items():
        x.field(ent, fname, f"set.{fname}")
        src = V2.field_value(x, ent, ent.name, fname, src, f"set.{fname}")
        x.expr_ok(src, f"set.{fname}")
        values[fname] = src
    x.effects.append(Effect(op="update", alias=ent.name, entity=ent.name, values=values))
    V2.write_extras(x, a, ent.name)
    x.derive_post()
    return x.build(returns=ent.name, returns_doc=f"The {row_noun(ent.name)} record after the change.")


def _money_round(f: FieldDef, source: str) -> str:
    return f"round({source}, 2)" if f.type == "money" else source


def _transfer(x: _Expander, a: TransferAction) -> ToolSpec:
    ent = x.entity(a.entity)
    f = x.field(ent, a.field, "field")
    if f.type not in ("money", "int", "quantity", "float"):
        raise x.err("field", f"a transfer moves a numeric field; {a.field!r} is {f.type}")
    for alias, where in ((a.source, "source"), (a.target, "target")):
        p = x.param_from_field(
            f"{'from' if where == 'source' else 'to'}_{ent.id_field}",
            ent.fields[0],
            ent,
            description=f"Id of the {row_noun(ent.name)} to move {human(f.name)} {'from' if where == 'source' else 'to'}.",
        )
        x.add_param(p, where)
        x.bind_param(alias, ent, p, where)
    amount = x.param_from_field(a.amount, f, ent, description=f"How much {human(f.name)} to move (greater than 0).")
    amount = amount.model_copy(update={"minimum": None, "exclusive_minimum": 0, "field": f"{ent.name}.{f.name}", "ref": None})
    x.add_param(amount, "amount")
    x.explicit_params()
    x.extra_bindings()
    idf = ent.id_field
    x.pre.append(
        Check(
            id="distinct",
            check=f"{a.source}.{idf} != {a.target}.{idf}",
            message=f"The source and the target {row_noun(ent.name)} must be different.",
            origin="implicit",
        )
    )
    x.pre.append(
        Check(
            id="sufficient",
            check=f"{a.source}.{f.name} >= {a.amount}",
            message=f"Not enough {human(f.name)}: {{{a.source}.{f.name}}} available, {{{a.amount}}} requested.",
            origin="implicit",
        )
    )
    x.effects.append(
        Effect(op="update", alias=a.source, entity=ent.name, values={f.name: _money_round(f, f"{a.source}.{f.name} - {a.amount}")})
    )
    x.effects.append(
        Effect(op="update", alias=a.target, entity=ent.name, values={f.name: _money_round(f, f"{a.target}.{f.name} + {a.amount}")})
    )
    if a.log:
        log_ent = x.entity(a.log, "log")
        values = x.insert_values(log_ent, dict(a.log_set), "log_set")
        x.effects.append(Effect(op="insert", alias="new", entity=log_ent.name, values=values))
    V2.write_extras(x, a, None)
    x.derive_post()
    return x.build(returns=a.source, returns_doc=f"The source {row_noun(ent.name)} record after the transfer.")


def _book(x: _Expander, a: BookAction) -> ToolSpec:
    ent = x.entity(a.entity)
    rf = x.field(ent, a.resource, "resource")
    if rf.type != "ref":
        raise x.err("resource", f"{a.resource!r} must be a ref field pointing at the resource")
    res = x.entity(rf.ref or "", "resource")
    cap = x.field(res, a.capacity, "capacity")
    used = x.field(res, a.used, "used")
    for fd, where in ((cap, "capacity"), (used, "used")):
        if fd.type not in ("int", "quantity"):
            raise x.err(where, f"{fd.name!r} must be an int or quantity field")
    x.ref_param(rf, ent, a.resource, required=True, alias=None, where="resource")
    given: dict[str, str] = {a.resource: a.resource}
    qty = "1"
    if a.quantity:
        qf = x.field(ent, a.quantity, "quantity")
        qp = x.param_from_field(a.quantity, qf, ent).model_copy(update={"minimum": 1})
        x.add_param(qp, "quantity")
        given[a.quantity] = a.quantity
        qty = a.quantity
    for j, fname in enumerate(a.fields):
        f = x.field(ent, fname, f"fields[{j}]")
        x.ref_param(f, ent, fname, required=True, alias=None, where=f"fields[{j}]")
        given[fname] = fname
    x.explicit_params()
    x.extra_bindings()
    given.update(a.set)
    values = x.insert_values(ent, given, "set")
    r = res.name
    x.pre.append(
        Check(
            id="capacity",
            check=f"{r}.{used.name} + {qty} <= {r}.{cap.name}",
            message=f"Not enough room: {{{r}.{cap.name} - {r}.{used.name}}} of {{{r}.{cap.name}}} left, {qty if qty == '1' else '{' + qty + '}'} requested.",
            origin="implicit",
        )
    )
    x.effects.append(Effect(op="update", alias=r, entity=r, values={used.name: f"{r}.{used.name} + {qty}"}))
    x.effects.append(Effect(op="insert", alias="new", entity=ent.name, values=values))
    V2.write_extras(x, a, None)
    x.derive_post()
    return x.build(returns="new", returns_doc=f"The new {row_noun(ent.name)} record.")


def _custom(x: _Expander, a: CustomAction) -> ToolSpec:
    x.entity(a.entity)
    x.explicit_params()
    x.extra_bindings()
    if a.untrusted:  # parsed by the checker, never compiled or run in this process
        from envsynth.blueprint.codecheck import check_tool_code

        problems = check_tool_code(a.code)
        if problems:
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise x.err("code", "untrusted code refused: " + "; ".join(problems[:3]) + more)
    else:
        try:
            compile("def _tool():\n" + textwrap.indent(a.code, "    "), f"<{a.name}>", "exec")
        except SyntaxError as exc:
            raise x.err("code", f"does not compile: {exc.msg} (line {exc.lineno})") from None
    return x.build(code=a.code, untrusted=a.untrusted, returns="custom", returns_doc=a.returns or "A JSON object.", mode=a.mode)


BY_KIND = {
    "get": _get,
    "search": _search,
    "aggregate": _aggregate,
    "create": _create,
    "update": _update,
    "delete": _delete,
    "transition": _transition,
    "transfer": _transfer,
    "book": _book,
    "custom": _custom,
}
