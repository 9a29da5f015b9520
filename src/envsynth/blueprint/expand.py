"""Archetype expansion: each blueprint action becomes an explicit ToolSpec.

This is where the meaning of every archetype lives: which rows it binds, which
implicit pre-conditions it checks (row exists, state allows the move, enough balance,
capacity left, unique value free), which effects it has and which post-conditions
those effects imply. It also checks the blueprint's cross references; errors carry
the path of the offending item (``actions[4].to``).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from typing import Any

from envsynth.blueprint import effects as V2
from envsynth.blueprint import expr as X
from envsynth.blueprint import exprcheck
from envsynth.blueprint.correlate import composite_unique_checks
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.language import language_problems
from envsynth.blueprint.machines import state_move_checks
from envsynth.blueprint.models import (
    Action,
    AggregateAction,
    Blueprint,
    BookAction,
    Condition,
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
from envsynth.blueprint.policy import apply as apply_policy
from envsynth.blueprint.problems import suggest
from envsynth.blueprint.spec import Binding, Check, EachEffect, Effect, FilterSpec, ParamSpec, Query, ToolSpec

_STRING_TYPES = {"id", "ref", "string", "text", "name", "email", "phone", "url", "address", "company", "enum", "state", "date", "datetime"}
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
DATETIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$"
GENERATED_LOCALS = {"where", "args", "clause", "total", "items", "value", "rows", "changes", "assignments", "limit", "offset", "key", "v"}
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


def human(name: str) -> str:
    return name.replace("_", " ")


def article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def json_type(ftype: str) -> str:
    if ftype in _STRING_TYPES:
        return "string"
    if ftype in ("int", "quantity", "integer"):
        return "integer"
    if ftype in ("money", "float", "number"):
        return "number"
    if ftype in ("bool", "boolean"):
        return "boolean"
    raise ValueError(ftype)


def default_value_expr(f: FieldDef) -> str | None:
    """Expression for a field a create leaves unset, or None when it must be given."""
    if f.nullable:
        return "None"
    if f.type == "state":
        return repr(f.initial or f.states[0])  # type: ignore[index]
    if f.type == "bool":
        return "False"
    if f.type in ("int", "quantity", "money", "float"):
        lb = f.lower_bound
        return repr(0 if lb is None or lb <= 0 else lb)
    if f.type == "datetime":
        return "now()"
    if f.type == "date":
        return "today()"
    return None


class _Expander:
    def __init__(self, bp: Blueprint, index: int, action: Action) -> None:
        self.bp = bp
        self.index = index
        self.a = action
        self.path = f"actions[{index}]"
        self.params: list[ParamSpec] = []
        self.bindings: list[Binding] = []
        self.pre: list[Check] = []
        self.effects: list[Effect] = []
        self.each: list[EachEffect] = []
        self.post: list[Check] = []

    # -- helpers -------------------------------------------------------------
    def err(self, where: str, msg: str) -> BlueprintError:
        return BlueprintError(f"{self.path}.{where}" if where else self.path, f"{self.a.name}: {msg}")

    def entity(self, name: str, where: str = "entity") -> Entity:
        if not self.bp.has_entity(name):
            known = ", ".join(e.name for e in self.bp.entities)
            raise self.err(where, f"unknown entity {name!r}{suggest(name, [e.name for e in self.bp.entities])} (entities: {known})")
        return self.bp.entity(name)

    def field(self, ent: Entity, name: str, where: str) -> FieldDef:
        if not ent.has(name):
            known = ", ".join(f.name for f in ent.fields)
            meant = suggest(name, [f.name for f in ent.fields])
            raise self.err(where, f"entity {ent.name!r} has no field {name!r}{meant} (fields: {known})")
        return ent.field(name)

    def param_from_field(self, name: str, f: FieldDef, ent: Entity, *, required: bool = True, description: str = "") -> ParamSpec:
        ptype = json_type(f.type)
        ref = ent.name if f.type == "id" else f.ref
        desc = description or f.description or self._default_desc(f, ent)
        pattern = {"date": DATE_PATTERN, "datetime": DATETIME_PATTERN, "email": EMAIL_PATTERN}.get(f.type)
        minimum = f.lower_bound if f.type in ("int", "quantity", "money", "float") else None
        return ParamSpec(
            name=name,
            type=ptype,  # type: ignore[arg-type]
            description=desc,
            required=required,
            enum=list(f.choices) if f.choices else None,
            minimum=minimum,
            maximum=f.max,
            pattern=pattern,
            ref=ref,
            field=f"{ent.name}.{f.name}",
            semantic=f.type,
        )

    def _default_desc(self, f: FieldDef, ent: Entity) -> str:
        if f.type == "id":
            return f"Id of the {human(ent.name)} (like '{ent.prefix}_104233')."
        if f.type == "ref":
            target = self.bp.entity(f.ref) if self.bp.has_entity(f.ref or "") else None
            prefix = target.prefix if target else "id"
            return f"Id of the {human(f.ref or '')} (like '{prefix}_104233')."
        if f.type == "date":
            return f"{human(f.name).capitalize()} as YYYY-MM-DD."
        if f.type == "datetime":
            return f"{human(f.name).capitalize()} as YYYY-MM-DDTHH:MM:SS."
        return f"{human(f.name).capitalize()} of the {human(ent.name)}."

    def add_param(self, p: ParamSpec, where: str) -> None:
        own = self.a.kind == "search" and where in ("limit", "offset")  # the paging parameters search adds itself
        if self.a.kind != "custom" and p.name in GENERATED_LOCALS and not own:
            raise self.err(
                where, f"parameter name {p.name!r} is used by the generated code; pick another (reserved: {sorted(GENERATED_LOCALS)})"
            )
        if any(q.name == p.name for q in self.params):
            raise self.err(where, f"parameter {p.name!r} is defined twice")
        self.params.append(p)

    def bind_param(self, alias: str, ent: Entity, p: ParamSpec, where: str, key: str | None = None) -> None:
        if any(b.alias == alias for b in self.bindings):
            raise self.err(where, f"two rows would be called {alias!r}; give the parameter an explicit alias")
        self.bindings.append(Binding(alias=alias, entity=ent.name, key=key or ent.id_field, param=p.name, optional=not p.required))
        label = ent.label
        what = f"No {human(ent.name)} with {human(key or ent.id_field)} '{{{p.name}}}'."
        self.pre.append(
            Check(
                id=f"exists:{alias}",
                check=f"{alias} is not None" if p.required else f"{p.name} is None or {alias} is not None",
                message=what,
                origin="implicit",
            )
        )
        del label

    def ref_param(self, f: FieldDef, ent: Entity, name: str, *, required: bool, alias: str | None, where: str) -> ParamSpec:
        p = self.param_from_field(name, f, ent, required=required)
        self.add_param(p, where)
        if f.type in ("ref", "id"):
            target = self.entity(f.ref if f.type == "ref" else ent.name, where)  # type: ignore[arg-type]
            self.bind_param(alias or target.name, target, p, where)
        return p

    def explicit_params(self) -> None:
        for j, p in enumerate(self.a.params):
            where = f"params[{j}]"
            if p.type == "list":
                V2.list_param(self, p, where)
                continue
            if p.field:
                ent_name, fname = p.field.split(".")
                ent = self.entity(ent_name, where + ".field")
                f = self.field(ent, fname, where + ".field")
                spec = self.param_from_field(p.name, f, ent, required=p.required, description=p.description)
                upd: dict[str, Any] = {}
                if p.min is not None:
                    upd["minimum"] = p.min
                if p.max is not None:
                    upd["maximum"] = p.max
                if p.default is not None:
                    upd["default"] = p.default
                spec = spec.model_copy(update=upd)
                self.add_param(spec, where)
                if f.type in ("ref", "id"):
                    target = self.entity(f.ref if f.type == "ref" else ent.name, where)  # type: ignore[arg-type]
                    self.bind_param(p.alias or target.name, target, spec, where)
                continue
            assert p.type is not None
            if p.type == "ref":
                target = self.entity(p.ref or "", where + ".ref")
                spec = self.param_from_field(p.name, target.fields[0], target, required=p.required, description=p.description)
                self.add_param(spec, where)
                self.bind_param(p.alias or target.name, target, spec, where)
                continue
            ptype = json_type(p.type)
            desc = p.description or f"{human(p.name).capitalize()}."
            self.add_param(
                ParamSpec(
                    name=p.name,
                    type=ptype,  # type: ignore[arg-type]
                    description=desc,
                    required=p.required,
                    enum=p.values,
                    minimum=p.min,
                    maximum=p.max,
                    default=p.default,
                    semantic=p.type
                    if p.type not in ("integer", "number", "boolean")
                    else {"integer": "int", "number": "float", "boolean": "bool"}[p.type],
                    pattern={"date": DATE_PATTERN, "datetime": DATETIME_PATTERN, "email": EMAIL_PATTERN}.get(p.type or ""),
                ),
                where,
            )

    def extra_bindings(self) -> None:
        for alias, via in self.a.bind.items():
            where = f"bind.{alias}"
            if "." not in via:
                raise self.err(where, f"expected 'alias.ref_field', got {via!r}")
            src_alias, fname = via.split(".", 1)
            src = next((b for b in self.bindings if b.alias == src_alias), None)
            if src is None:
                raise self.err(where, f"{src_alias!r} is not a bound row (bound: {[b.alias for b in self.bindings]})")
            f = self.field(self.bp.entity(src.entity), fname, where)
            if f.type != "ref":
                raise self.err(where, f"{via} is not a ref field")
            target = self.bp.entity(f.ref)  # type: ignore[arg-type]
            if any(b.alias == alias for b in self.bindings):
                raise self.err(where, f"alias {alias!r} is already bound")
            self.bindings.append(
                Binding(alias=alias, entity=target.name, key=target.id_field, via=via, optional=src.optional or f.nullable)
            )

    def declared(self, conds: list[Condition], kind: str) -> list[Check]:
        out = []
        problems: list[BlueprintError] = []
        for j, c in enumerate(conds):
            try:
                out.append(self.declared_one(c, kind, j))
            except BlueprintError as exc:  # each condition is checked, all problems are reported together
                problems.append(exc)
        if problems:
            raise BlueprintError.collected(problems)
        return out

    def declared_one(self, c: Condition, kind: str, j: int) -> Check:
        """The check of one declared condition (``kind`` is pre or post, ``j`` its index)."""
        try:
            e = X.parse(c.check)
        except X.ExprError as exc:
            raise self.err(f"{kind}[{j}]", str(exc)) from None
        self.check_names(e, f"{kind}[{j}]", post=(kind == "post"))
        if kind == "pre" and e.uses_old():
            raise self.err(f"{kind}[{j}]", "old() only makes sense in post-conditions")
        for placeholder in re.findall(r"\{([^{}]+)\}", c.message or ""):
            try:
                self.check_names(X.parse(placeholder), f"{kind}[{j}].message")
            except X.ExprError as exc:
                raise self.err(f"{kind}[{j}].message", f"placeholder {{{placeholder}}}: {exc}") from None
        return Check(id=f"{kind}[{j}]", check=c.check, message=c.message or f"Condition not met: {c.check}.")

    def check_names(self, e: X.Expr, where: str, *, post: bool = False) -> None:
        aliases = {b.alias for b in self.bindings} | ({"new", "result"} if post else set())
        if any(ef.op == "insert" for ef in self.effects):
            aliases |= {ef.alias for ef in self.effects if ef.op == "insert"}
        known = aliases | {p.name for p in self.params} | {e_.name for e_ in self.bp.entities}
        unknown = e.names() - known
        if unknown & {"result", "new"} and not post:
            only = sorted(unknown & {"result", "new"})[0]
            raise self.err(where, f"{only!r} is only allowed in post-conditions ('post'), not here: {e.source!r}")
        if unknown:
            raise self.err(
                where, f"unknown name(s) {sorted(unknown)} in {e.source!r}; known: {sorted(aliases | {p.name for p in self.params})}"
            )
        for alias, fname in e.fields():
            if alias in ("result",):
                continue
            ent = self._alias_entity(alias)
            if ent is not None and not ent.has(fname):
                raise self.err(where, f"{alias!r} ({ent.name}) has no field {fname!r} in {e.source!r}")
        for node in ast.walk(e.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
                self.entity(node.args[0].id, where)  # type: ignore[attr-defined]
        try:
            exprcheck.check(e, self.bp, self._alias_entity, self.params)
        except X.ExprError as exc:
            raise self.err(where, str(exc)) from None

    def _alias_entity(self, alias: str) -> Entity | None:
        for b in self.bindings:
            if b.alias == alias:
                return self.bp.entity(b.entity)
        for ef in self.effects:
            if ef.op == "insert" and ef.alias == alias:
                return self.bp.entity(ef.entity)
        return None

    def expr_ok(self, source: str, where: str) -> None:
        try:
            e = X.parse(source)
        except X.ExprError as exc:
            raise self.err(where, str(exc)) from None
        self.check_names(e, where)
        if e.uses_old():
            raise self.err(where, "old() only makes sense in post-conditions; a value is computed from the rows before the call anyway")

    def insert_values(self, ent: Entity, given: dict[str, str], where: str) -> dict[str, str]:
        """Values for every column of a new row: given ones, then defaults."""
        values: dict[str, str] = {ent.id_field: "new_id()"}
        for fname, src in given.items():
            self.field(ent, fname, f"{where}.{fname}")
            src = V2.field_value(self, ent, None, fname, src, f"{where}.{fname}")
            self.expr_ok(src, f"{where}.{fname}")
            values[fname] = src
        for f in ent.fields[1:]:
            if f.name in values:
                continue
            d = default_value_expr(f)
            if d is None:
                raise self.err(where, f"a new {ent.name} needs a value for {f.name!r}: add it to 'fields' or 'set', or make it nullable")
            values[f.name] = d
        return values

    def unique_checks(self, ent: Entity, fields: list[str], alias: str | None) -> None:
        for fname in fields:
            f = ent.field(fname)
            if not f.unique:
                continue
            if alias is None:
                check = f"not exists({ent.name}, {fname}={fname})"
            else:
                check = f"{fname} is None or {fname} == {alias}.{fname} or not exists({ent.name}, {fname}={fname})"
            self.pre.append(
                Check(
                    id=f"unique:{fname}",
                    check=check,
                    message=f"{article(human(ent.name)).capitalize()} {human(ent.name)} with {human(fname)} '{{{fname}}}' already exists.",
                    origin="implicit",
                )
            )

    def derive_post(self) -> None:
        """Post-conditions implied by the effects, evaluated on the state after the call."""
        aliases = {b.alias for b in self.bindings}
        for k, ef in enumerate(self.effects):
            if ef.op == "delete":
                ent = self.bp.entity(ef.entity)
                self.post.append(
                    Check(
                        id=f"effect[{k}]",
                        check=f"not exists({ent.name}, {ent.id_field}=old({ef.alias}.{ent.id_field}))",
                        message="row still exists",
                        origin="implicit",
                    )
                )
                continue
            for fname, src in ef.values.items():
                if src == "new_id()":
                    continue
                rhs = as_old(src, aliases)
                check = f"{ef.alias}.{fname} == ({rhs})"
                if fname in ef.when_given:
                    check = f"{ef.when_given[fname]} is None or {check}"
                self.post.append(Check(id=f"effect[{k}].{fname}", check=check, message=f"{ef.alias}.{fname} is wrong", origin="implicit"))

    def build(self, **kw: Any) -> ToolSpec:
        a = self.a
        self.check_stored_values()
        problems: list[BlueprintError] = []
        for conds, kind, checks in ((a.pre, "pre", self.pre), (a.post, "post", self.post)):
            try:
                checks.extend(self.declared(conds, kind))
            except BlueprintError as exc:
                problems.append(exc)
        if problems:
            raise BlueprintError.collected(problems)
        self.pre.extend(state_move_checks(self.bp.entity, self.bindings, self.params, self.pre, self.effects, self.err))
        self.pre.extend(composite_unique_checks(self.bp.entity, self.effects, {b.alias for b in self.bindings}))
        reads = sorted(
            {b.entity for b in self.bindings}
            | ({kw["query"].entity} if kw.get("query") else set())
            | self._exists_entities()
            | {e.source for e in self.each if e.source}
        )
        writes: dict[str, set[str]] = {}
        creates, deletes = set(), set()
        for ef in self.effects:
            if ef.op == "update":
                writes.setdefault(ef.entity, set()).update(ef.values)
            elif ef.op == "insert":
                creates.add(ef.entity)
            else:
                deletes.add(ef.entity)
                deletes.update(c for c, _ in ef.cascade)
        for each in self.each:
            if each.op == "update":
                writes.setdefault(each.entity, set()).update(each.values)
            else:
                creates.add(each.entity)
        if isinstance(a, CustomAction):
            for ent, fields in a.writes.items():
                e = self.entity(ent, f"writes.{ent}")
                for fname in fields:
                    self.field(e, fname, f"writes.{ent}")
                writes.setdefault(ent, set()).update(fields)
            for ent in a.creates:
                self.entity(ent, "creates")
            for ent in a.deletes:
                self.entity(ent, "deletes")
            creates.update(a.creates)
            deletes.update(a.deletes)
        mode = kw.pop("mode", None) or ("write" if (writes or creates or deletes) else "read")
        return ToolSpec(
            name=a.name,
            kind=a.kind,
            description=a.description,
            entity=a.entity,
            mode=mode,
            params=self.params,
            bindings=self.bindings,
            pre=self.pre,
            effects=self.effects,
            each=self.each,
            post=self.post,
            reads=reads,
            writes={k: sorted(v) for k, v in sorted(writes.items())},
            creates=sorted(creates),
            deletes=sorted(deletes),
            **kw,
        )

    def check_stored_values(self) -> None:
        """Every value an effect writes must fit its column: no duration, no datetime in a date column (language v2)."""
        for ef in self.effects:
            ent = self.bp.entity(ef.entity)
            for fname, src in ef.values.items():
                if src == "new_id()" or not ent.has(fname):
                    continue
                try:
                    exprcheck.check_stored(X.parse(src), self.bp, ent.field(fname).type, self._alias_entity, self.params)
                except X.ExprError as exc:
                    raise self.err(self._value_path(ef.alias, fname), str(exc)) from None

    def _value_path(self, alias: str, fname: str) -> str:
        """Where a written value comes from in the action (``set.f``, ``also.a.f``, ``log_set.f``), best effort."""
        a = self.a
        if alias in (getattr(a, "also", None) or {}):
            return f"also.{alias}.{fname}"
        for key in ("set", "log_set"):
            if fname in (getattr(a, key, None) or {}):
                return f"{key}.{fname}"
        return "fields" if fname in (getattr(a, "fields", None) or []) else f"set.{fname}"

    def _exists_entities(self) -> set[str]:
        out = set()
        for c in self.pre:
            for node in ast.walk(X.parse(c.check).tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
                    out.add(node.args[0].id)  # type: ignore[attr-defined]
        return out


def as_old(source: str, aliases: set[str]) -> str:
    """Rewrite ``alias.field`` as ``old(alias.field)`` (values before the call)."""

    class T(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            if isinstance(node.func, ast.Name) and node.func.id in ("old", *X.ROW_FUNCTIONS):
                return node
            return self.generic_visit(node)

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id in aliases:
                return ast.Call(func=ast.Name("old", ast.Load()), args=[node], keywords=[])
            return node

    tree = T().visit(ast.parse(source, mode="eval"))
    return ast.unparse(tree.body)


# -- archetypes -----------------------------------------------------------------


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
    return x.build(query=Query(op="get", entity=ent.name, alias=ent.name), returns=ent.name, returns_doc=f"The {human(ent.name)} record.")


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
                f"Only {human(ent.name)}s whose {human(f.name)} equals this." if flt.op == "eq" else f"{word} {human(f.name)}."
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
    return x.build(query=q, returns="query", returns_doc=f"{{'total': number of matches, 'items': matching {human(ent.name)} records}}.")


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
    return x.build(returns="new", returns_doc=f"The new {human(ent.name)} record.")


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
    return x.build(returns=ent.name, returns_doc=f"The updated {human(ent.name)} record.")


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
                            message=f"This {human(ent.name)} cannot be deleted: {human(other.name)} records still refer to it.",
                            origin="implicit",
                        )
                    )
    V2.write_extras(x, a, ent.name)
    x.effects.append(Effect(op="delete", alias=ent.name, entity=ent.name, cascade=cascade))
    x.derive_post()
    return x.build(returns="none", returns_doc=f"{{'deleted': id of the removed {human(ent.name)}}}.")


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
            message=f"This {human(ent.name)} is '{{{ent.name}.{f.name}}}'; {human(a.name)} needs it to be {need}.",
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
    return x.build(returns=ent.name, returns_doc=f"The {human(ent.name)} record after the change.")


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
            description=f"Id of the {human(ent.name)} to move {human(f.name)} {'from' if where == 'source' else 'to'}.",
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
            message=f"The source and the target {human(ent.name)} must be different.",
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
    return x.build(returns=a.source, returns_doc=f"The source {human(ent.name)} record after the transfer.")


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
    return x.build(returns="new", returns_doc=f"The new {human(ent.name)} record.")


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


_BY_KIND = {
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


def expand(bp: Blueprint) -> list[ToolSpec]:
    """Expand every action of a blueprint.

    Raises:
        BlueprintError: the first problem, carrying every problem found (see :func:`expand_all`).
    """
    specs, problems = expand_all(bp)
    if problems:
        raise BlueprintError.collected(problems)
    return specs  # type: ignore[return-value]


_CONSEQUENCES = (KeyError, TypeError, ValueError, AttributeError)
"""What expanding an action may raise when it trips over an entity problem already reported."""


def expand_all(bp: Blueprint) -> tuple[list[ToolSpec | None], list[BlueprintError]]:
    """Expand every action, collecting problems: the entities', then each action's, then the words'.

    Returns the tool specs (None for an action that has a problem) and the problems, in the
    order :func:`expand` reports them (its first problem is the first of this list).
    """
    problems = list(_entity_problems(bp))
    unknown = {f.ref for e in bp.entities for f in e.fields if f.type == "ref" and not bp.has_entity(f.ref or "")}  # reported once
    names: set[str] = set()
    specs: list[ToolSpec | None] = []
    for i, action in enumerate(bp.actions):
        if action.name in names:
            problems.append(BlueprintError(f"actions[{i}].name", f"duplicate action name {action.name!r}"))
        names.add(action.name)
        try:
            specs.append(_BY_KIND[action.kind](_Expander(bp, i, action), action))  # type: ignore[operator]
        except BlueprintError as exc:
            problems.extend(p for p in exc.all if not any(f"unknown entity {r!r}" in p.message for r in unknown))
            specs.append(None)
        except _CONSEQUENCES:
            if not problems:  # nothing reported explains it: a bug, not a blueprint problem
                raise
            specs.append(None)
    if all(s is not None for s in specs):
        try:
            specs = list(apply_policy(bp, specs))  # type: ignore[arg-type]  # policy rules and authorization (blueprint/policy.py)
        except BlueprintError as exc:
            problems.extend(exc.all)
    problems.extend(language_problems(bp, specs))
    return specs, problems


def _entity_problems(bp: Blueprint) -> Iterator[BlueprintError]:
    """The problems of the entities together: duplicate names and prefixes, labels, references, cycles."""
    seen: set[str] = set()
    prefixes: dict[str, str] = {}
    for i, ent in enumerate(bp.entities):
        if ent.name in seen:
            yield BlueprintError(f"entities[{i}].name", f"duplicate entity {ent.name!r}")
        seen.add(ent.name)
        if ent.prefix in prefixes:
            yield BlueprintError(
                f"entities[{i}].id_prefix", f"id prefix {ent.prefix!r} is also used by {prefixes[ent.prefix]!r}; set id_prefix"
            )
        prefixes.setdefault(ent.prefix, ent.name)
        if ent.label is not None and ent.field(ent.label).type not in _STRING_TYPES:
            yield BlueprintError(f"entities[{i}].label", "the label must be a text field")
    for i, ent in enumerate(bp.entities):
        for j, f in enumerate(ent.fields):
            if f.type == "ref" and not bp.has_entity(f.ref or ""):
                known = [e.name for e in bp.entities]
                yield BlueprintError(
                    f"entities[{i}].fields[{j}].ref", f"unknown entity {f.ref!r}{suggest(f.ref, known)} (entities: {', '.join(known)})"
                )
    # references must not form a cycle through non-nullable fields (rows could not be created)
    import networkx as nx

    g = nx.DiGraph()
    for ent in bp.entities:
        g.add_node(ent.name)
        for f in ent.fields:
            if f.type == "ref" and not f.nullable and f.ref != ent.name:
                g.add_edge(ent.name, f.ref)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        return
    yield BlueprintError("entities", f"required references form a cycle {cycle}; make one of them nullable")
