"""Language v2 effects: list parameters, ``for_each``, ``also`` on every write, increments and NULL.

Called by :mod:`envsynth.blueprint.expand` while it expands an action:

- :func:`list_param` turns a ``type: list`` parameter into an array ParamSpec; a list of
  ids also binds the list of their rows (``many`` binding, one ``exists:`` check naming
  the first unknown id);
- :func:`field_value` reads the value shapes of ``set``/``also``: an increment
  (``"+= amount"``, ``"-= 1"``) and NULL (``None`` or YAML ``null``, only on a nullable field);
- :func:`write_extras` adds the ``also`` updates and the ``for_each`` effects of a write action.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.fieldtypes import DATE_PATTERN, DATETIME_PATTERN, EMAIL_PATTERN, GENERATED_LOCALS, human, json_type
from envsynth.blueprint.models import Entity, FieldDef, ForEach, Param
from envsynth.blueprint.nouns import plural, row_noun, words
from envsynth.blueprint.spec import Binding, Check, EachEffect, Effect, ParamSpec

if TYPE_CHECKING:
    from envsynth.blueprint.expander import _Expander

_ITEM_FIELD_TYPES = {"integer": "int", "number": "float", "boolean": "bool"}


def list_alias(p: Param, ent: Entity) -> str:
    """Name of the rows a list of ids loads: ``alias``, else ``<entity>_rows``."""
    return p.alias or f"{ent.name}_rows"


def list_param(x: _Expander, p: Param, where: str) -> None:
    """Add a ``type: list`` parameter (ids with ``ref``, or objects with ``items``) and, for ids, bind their rows."""
    bounds: dict[str, Any] = {"min_items": p.min_items, "max_items": p.max_items}
    if p.ref is not None:
        ent = x.entity(p.ref, where + ".ref")
        desc = p.description or f"Ids of the {plural(row_noun(ent.name))} (like '{ent.prefix}_104233'), each at most once."
        spec = ParamSpec(
            name=p.name,
            type="array",
            description=desc,
            required=p.required,
            ref=ent.name,
            unique_items=True,
            semantic="list",
            field=f"{ent.name}.{ent.id_field}",
            **bounds,
        )
        x.add_param(spec, where)
        _bind_listed_rows(x, p, ent, list_alias(p, ent), ent.id_field, where, "; give the parameter an explicit alias")
        return
    fields = [_item_field(x, name, ftype, f"{where}.items.{name}") for name, ftype in (p.items or {}).items()]
    desc = p.description or f"{human(p.name).capitalize()}: a list of objects with {', '.join(f.name for f in fields)}."
    x.add_param(
        ParamSpec(name=p.name, type="array", description=desc, required=p.required, item_fields=fields, semantic="list", **bounds), where
    )
    for f in fields:
        if f.ref is not None:
            _bind_item_rows(x, p, f, where)


def _bind_item_rows(x: _Expander, p: Param, f: ParamSpec, where: str) -> None:
    """An item field copying an id or ref: the rows its values name are loaded (``<param>_<field>_rows``), each must exist."""
    _bind_listed_rows(x, p, x.bp.entity(f.ref or ""), f"{p.name}_{f.name}_rows", f.name, where, item=f.name)


def _bind_listed_rows(
    x: _Expander, p: Param, ent: Entity, alias: str, named_by: str, where: str, hint: str = "", item: str | None = None
) -> None:
    """Bind the rows of ``ent`` a list parameter names (by ``named_by``) as ``alias``, each of which must exist."""
    if any(b.alias == alias for b in x.bindings):
        raise x.err(where, f"two rows would be called {alias!r}{hint}")
    x.bindings.append(Binding(alias=alias, entity=ent.name, key=ent.id_field, param=p.name, optional=not p.required, many=True, item=item))
    x.pre.append(
        Check(
            id=f"exists:{alias}",
            check=f"{alias} is not None",
            message=f"No {row_noun(ent.name)} with one of the {plural(words(named_by))} given in {p.name}.",
            origin="implicit",
        )
    )


def _item_field(x: _Expander, name: str, ftype: str, where: str) -> ParamSpec:
    if "." in ftype:  # entity.field: that field's type and limits
        ent_name, fname = ftype.split(".")
        ent = x.entity(ent_name, where)
        return x.param_from_field(name, x.field(ent, fname, where), ent)

    semantic = _ITEM_FIELD_TYPES.get(ftype, ftype)
    minimum = 0 if semantic in ("money", "quantity") else None
    pattern = {"date": DATE_PATTERN, "datetime": DATETIME_PATTERN, "email": EMAIL_PATTERN}.get(semantic)
    return ParamSpec(
        name=name,
        type=json_type(ftype),  # type: ignore[arg-type]
        description=f"{human(name).capitalize()}.",
        minimum=minimum,
        pattern=pattern,
        semantic=semantic,
    )


def increment(src: str) -> tuple[str, str] | None:
    """``('+', 'amount')`` for the value ``"+= amount"`` (``'-'`` for ``"-= ..."``); None for a plain value."""
    text = src.strip()
    return (text[0], text[2:].strip()) if text[:2] in ("+=", "-=") else None


def field_value(x: _Expander, ent: Entity, alias: str | None, fname: str, src: str, where: str) -> str:
    """The expression a ``set``/``also`` entry writes: increments expanded, NULL allowed only on nullable fields.

    ``alias`` is the row being changed (None for a new row, which has nothing to increment).
    """
    f = x.field(ent, fname, where)
    text = src.strip()
    step = increment(text)
    if step is not None:
        if alias is None:
            raise x.err(where, f"{text!r} adds to the current value, but a new {ent.name} has none; give the value itself")
        if f.type not in ("money", "int", "quantity", "float"):
            raise x.err(where, f"{text!r}: only numeric fields can be incremented; {fname!r} is {f.type}")
        sign, rest = step
        x.expr_ok(rest, where)
        total = f"{alias}.{fname} {sign} ({rest})"
        return f"round({total}, 2)" if f.type == "money" else total
    if text == "None" and not f.nullable:
        raise x.err(where, f"{ent.name}.{fname} is not nullable, so it cannot be set to None (null); add 'nullable: true' to the field")
    return src


def write_extras(x: _Expander, a: Any, main_alias: str | None) -> None:
    """The ``also`` updates and ``for_each`` effects of write action ``a`` (its own row is ``main_alias``)."""
    for alias, upd in a.also.items():
        _also(x, alias, upd, main_alias)
    for k, fe in enumerate(a.for_each):
        x.each.append(_for_each(x, fe, f"for_each[{k}]"))


def _also(x: _Expander, alias: str, upd: dict[str, str], main_alias: str | None) -> None:
    where = f"also.{alias}"
    b = next((b for b in x.bindings if b.alias == alias), None)
    if b is None:
        bound = sorted(b.alias for b in x.bindings if not b.many)
        raise x.err(
            where,
            f"{alias!r} is not a bound row (bound: {bound}); bind it with 'bind: {{{alias}: <alias>.<ref_field>}}' or a ref parameter",
        )
    if alias == main_alias:
        raise x.err(where, f"{alias!r} is the row this action changes; put its fields in 'set'")
    if b.many:
        raise x.err(where, f"{alias!r} is a list of rows; change each of them with for_each: [{{param: {b.param}, set: ...}}]")
    other = x.bp.entity(b.entity)
    written = {f for ef in x.effects if ef.op == "update" and ef.alias == alias for f in ef.values}
    twice = sorted(written & set(upd))
    if twice:
        raise x.err(where, f"{alias}.{twice[0]} is already written by this {x.a.kind} action; one value per field")
    values = {fname: field_value(x, other, alias, fname, src, f"{where}.{fname}") for fname, src in upd.items()}
    for fname, src in values.items():
        x.expr_ok(src, f"{where}.{fname}")
    x.effects.append(Effect(op="update", alias=alias, entity=other.name, values=values))


def _for_each(x: _Expander, fe: ForEach, where: str) -> EachEffect:
    alias = fe.as_
    taken = {b.alias for b in x.bindings} | {p.name for p in x.params} | {"new", "row_values"} | GENERATED_LOCALS
    if alias in taken:
        raise x.err(f"{where}.as", f"{alias!r} already names a row or parameter here; pick another name for the item")
    row_ent, item_fields, param = _items(x, fe, where)
    for fname, src in fe.match.items():
        x.field(row_ent, fname, f"{where}.match.{fname}")  # type: ignore[arg-type]
        x.expr_ok(src, f"{where}.match.{fname}")
    with _ItemInScope(x, fe, row_ent, item_fields, where):
        if fe.where is not None:
            x.expr_ok(fe.where, f"{where}.where")
        if fe.insert is not None:
            ent = x.entity(fe.insert, f"{where}.insert")
            given = {f: field_value(x, ent, None, f, src, f"{where}.set.{f}") for f, src in fe.set.items()}
            values = x.insert_values(ent, given, f"{where}.set")
            op = "insert"
        else:
            if row_ent is None:
                raise x.err(where, f"the items of {param!r} are not rows; with a list of objects, say what to insert ('insert: <entity>')")
            ent = row_ent
            values = {}
            for fname, src in fe.set.items():
                if ent.has(fname) and ent.field(fname).type == "id":
                    raise x.err(f"{where}.set.{fname}", "the id of a row cannot change")
                values[fname] = field_value(x, ent, alias, fname, src, f"{where}.set.{fname}")
                x.expr_ok(values[fname], f"{where}.set.{fname}")
            op = "update"
    return EachEffect(
        alias=alias,
        op=op,  # type: ignore[arg-type]
        entity=ent.name,
        param=param,
        source=fe.rows,
        match=dict(fe.match),
        where=fe.where,
        values=values,
    )


def _items(x: _Expander, fe: ForEach, where: str) -> tuple[Entity | None, list[ParamSpec] | None, str | None]:
    """What an item is: a row of an entity, or an object with fields (and the list parameter, if any)."""
    if fe.rows is not None:
        return x.entity(fe.rows, f"{where}.rows"), None, None
    p = next((p for p in x.params if p.name == fe.param), None)
    if p is None or p.type != "array" or (p.ref is None and p.item_fields is None):
        lists = sorted(q.name for q in x.params if q.type == "array" and (q.ref or q.item_fields))
        raise x.err(f"{where}.param", f"{fe.param!r} is not a list parameter of this action (list parameters: {lists or 'none'})")
    if p.item_fields is not None:
        return None, p.item_fields, p.name
    return x.bp.entity(p.ref or ""), None, p.name


class _ItemInScope:
    """Make the item name of ``fe`` known to the expression checks of ``x`` for the duration of a ``with``."""

    def __init__(self, x: _Expander, fe: ForEach, ent: Entity | None, fields: list[ParamSpec] | None, where: str) -> None:
        self.x, self.fe, self.alias, self.ent, self.fields, self.where = x, fe, fe.as_, ent, fields, where
        self.added: Any = None

    def __enter__(self) -> None:
        x = self.x
        if self.ent is not None:
            self.added = Binding(alias=self.alias, entity=self.ent.name, key=self.ent.id_field, via="item.each")
            x.bindings.append(self.added)
        else:
            self.added = ParamSpec(name=self.alias, type="string", description="item", semantic="list")
            x.params.append(self.added)
            self._check_item_fields()

    def _check_item_fields(self) -> None:
        names = {f.name for f in self.fields or []}
        sources = [src for src in self.fe.set.values() if increment(src) is None]
        for src in [*sources, *([self.fe.where] if self.fe.where else [])]:
            for alias, fname in X.parse(src).fields():
                if alias == self.alias and fname not in names:
                    raise self.x.err(self.where, f"an item of the list has no field {fname!r} (fields: {sorted(names)})")

    def __exit__(self, *exc: object) -> None:
        x = self.x
        if isinstance(self.added, Binding):
            x.bindings.remove(self.added)
        else:
            x.params.remove(self.added)


def item_field_def(p: ParamSpec) -> FieldDef:
    """A FieldDef standing for a field of a list item (to draw sample values)."""
    return FieldDef(name=p.name, type=p.semantic if p.semantic != "list" else "string")  # type: ignore[arg-type]
