"""What the planned steps of a chain establish about the rows they touch, before any instantiation.

``plan_chain`` uses :class:`RowFacts` to refuse continuations that could never run: a
step whose pre-condition needs a row in a state that the earlier steps rule out (an item
added to a *pending* order, then returned as if the order were *delivered*; a product the
chain created as a *draft*, then discontinued as if *active*), or that needs a child row
of a row the chain itself created when no step adds one (paying an order no step put an
item in), or a row an earlier step deleted (an address removed, then used for an order),
or no child of a row that an earlier step gave a child (``not exists(order, address_id=a)``
after an order was placed to that address), or a write to a row an earlier step ended (moved to a state no
transition leaves: a student withdrawn, then invoiced) that does not ask for that state. The fixture solver cannot repair those:
changing the row in s0 breaks the earlier step, and it cannot add or remove rows the chain
creates.

Rows are symbols. A step's bound rows get the symbol of the earlier row they are pinned
or referred to, of the row a reference field leads to (``via`` bindings, the references
an inserted row was given), or a fresh one. Facts are only ever dropped or widened when
in doubt: an update may hit any row of its table (other symbols could be the same row),
custom code forgets what it may write, and a child row whose parent is not known may
belong to any parent. So a refused continuation is one that can never be instantiated;
what is allowed may still fail.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.models import FieldDef
from envsynth.blueprint.policy import acting_user_of
from envsynth.blueprint.spec import ToolSpec
from envsynth.graph.conditions import required_children, required_states, value_constants, value_key
from envsynth.runtime.app import App
from envsynth.runtime.state import id_fields

Keys = frozenset[tuple[str, Any]]  # value_key()s of the values a field can hold


@dataclass(frozen=True)
class _Facts:
    """Per tool: its bindings, state requirements, child-row requirements, constant updates and inserts."""

    binds: tuple[tuple[str, str, bool, str | None, str | None, str], ...]
    # (alias, entity, keyed by the id field, param, via alias or None, via ref field)
    states: tuple[tuple[str, str, Keys], ...]  # (alias, field, accepted values)
    children: tuple[tuple[str, str, str], ...]  # (child entity, child ref field, alias) for exists(child, f=alias.id)
    no_children: tuple[tuple[str, str, str], ...]  # the same for not exists(child, f=alias.id) with no other filter
    needed: tuple[str, ...]  # aliases of rows that must exist (bindings that are not optional)
    deletes: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (alias, its cascade: (child entity, ref field))
    updates: tuple[tuple[str, str, str, Keys | None, bool], ...]  # (alias, entity, field, values or None, only when given)
    inserts: tuple[tuple[str, str, tuple[tuple[str, Keys], ...], tuple[tuple[str, str, str], ...], tuple[str, ...]], ...]
    # (alias, entity, constant fields, ref fields -> ("param", binding alias, "") or ("via", alias, ref field),
    #  all ref fields of the entity)
    custom: bool  # the tool runs custom code
    writes: tuple[tuple[str, tuple[str, ...]], ...]  # custom code: entity -> fields it may write
    creates: tuple[str, ...]  # custom code: entities it may add rows to
    removes: tuple[str, ...]  # custom code: entities it may delete rows from
    returns: str
    checked: bool  # states, children or no_children is not empty
    gives: tuple[str, ...] = ()  # a create: the fields of its new row the request gives values for
    changes: tuple[str, ...] | None = None  # an update: the fields it can change (not the id or the acting user)


def _final_states(app: App, entity: str, field: str) -> Keys:
    """The states of a state field that no transition leaves (keys, as :func:`value_key` makes them); empty for another
    field, or a state field without transitions."""
    return app.index.of(_find_final_states, app, entity, field)  # type: ignore[no-any-return]


def _find_final_states(app: App, entity: str, field: str) -> Keys:
    ent = app.blueprint.entity(entity)
    f = ent.field(field) if ent.has(field) else None
    if f is None or f.type != "state" or not f.transitions:
        return frozenset()
    return frozenset(value_key(st) for st in f.states or () if not f.transitions.get(st))


def _keys(values: Any) -> Keys:
    return frozenset(value_key(v) for v in values)


def _facts(app: App, spec: ToolSpec) -> _Facts:
    """What :class:`RowFacts` reads of a tool (kept on the app's index, per tool spec)."""
    return app.index.paired(_find_facts, app, spec, spec.name)


def _find_facts(app: App, spec: ToolSpec, name: str) -> _Facts:
    bp = app.blueprint
    id_of = {b.alias: bp.entity(b.entity).id_field for b in spec.bindings}
    ent_of = {b.alias: b.entity for b in spec.bindings}
    binds = _binds(spec, id_of)
    states = tuple((a, f, _keys(v)) for a, f, v in required_states(spec) if a in ent_of)
    children = tuple((c, cf, a) for c, cf, a, af in required_children(spec) if id_of.get(a) == af) + _same_parent(app, spec)
    no_children = tuple((c, cf, a) for c, cf, a, af in _forbidden_children(spec) if id_of.get(a) == af)
    needed = tuple(b.alias for b in spec.bindings if not b.optional)
    deletes = tuple((ef.alias, tuple(ef.cascade)) for ef in spec.effects if ef.op == "delete")
    return _Facts(
        binds,
        states,
        children,
        no_children,
        needed,
        deletes,
        _updates(spec),
        _inserts(app, spec, ent_of),  # type: ignore[arg-type]
        spec.code is not None,
        tuple((ent, tuple(fields)) for ent, fields in spec.writes.items()),
        tuple(spec.creates),
        tuple(spec.deletes),
        spec.returns,
        bool(states or children or no_children),
        *_given_and_changed(app, spec),
    )


def _given_and_changed(app: App, spec: ToolSpec) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """:attr:`_Facts.gives` and :attr:`_Facts.changes` of a tool (an update's or a transition's fields from its parameters)."""
    if spec.kind not in ("create", "update", "transition"):
        return (), None
    ent = app.blueprint.entity(spec.entity)
    fields = {p.name: f for p in spec.params if (f := _field_of(p, ent)) is not None}
    if spec.kind == "create":
        return tuple(fields.values()), None
    actor = acting_user_of(app.blueprint, spec)
    return (), tuple(f for name, f in fields.items() if f != ent.id_field and name != actor)


def _field_of(p: Any, ent: Any) -> str | None:
    """The field of ``ent`` a parameter sets: the one its ``field`` names, else the one of its name."""
    name = p.field.split(".", 1)[1] if p.field and p.field.startswith(f"{ent.name}.") else p.name
    return name if ent.has(name) else None


def _binds(spec: ToolSpec, id_of: dict[str, str]) -> tuple[tuple[str, str, bool, str | None, str | None, str], ...]:
    """:attr:`_Facts.binds`: each binding, whether it is keyed by its id field, and the reference it follows."""
    binds = []
    for b in spec.bindings:
        parent, _, ref_field = (b.via or "").partition(".")
        binds.append((b.alias, b.entity, b.key == id_of[b.alias], b.param, parent if b.via else None, ref_field))
    return tuple(binds)


def _updates(spec: ToolSpec) -> tuple[tuple[str, str, str, Keys | None, bool], ...]:
    """:attr:`_Facts.updates`: each field an update effect writes, with its constant values when known."""
    updates: list[tuple[str, str, str, Keys | None, bool]] = []
    for ef in spec.effects:
        if ef.op != "update":
            continue
        for f, src in ef.values.items():
            vals = value_constants(spec, src)
            updates.append((ef.alias, ef.entity, f, None if vals is None else _keys(vals), f in ef.when_given))
    return tuple(updates)


def _inserts(app: App, spec: ToolSpec, ent_of: dict[str, str]) -> tuple[tuple[Any, ...], ...]:
    """:attr:`_Facts.inserts`: each insert effect's constant fields, the rows its ref fields link to, its ref fields."""
    inserts = []
    for ef in spec.effects:
        if ef.op != "insert":
            continue
        ent = app.blueprint.entity(ef.entity)
        consts, links = [], []
        for f, src in ef.values.items():
            vals = value_constants(spec, src)
            if vals is not None:
                consts.append((f, _keys(vals)))
            link = _insert_link(app, spec, ent.field(f), src, ent_of)
            if link is not None:
                links.append((f, *link))
        ref_fields = tuple(fld.name for fld in ent.fields if fld.type == "ref")
        inserts.append((ef.alias, ef.entity, tuple(consts), tuple(links), ref_fields))
    return tuple(inserts)


def _insert_link(app: App, spec: ToolSpec, fld: FieldDef, src: str, ent_of: dict[str, str]) -> tuple[str, str, str] | None:
    """The row an inserted ref field ``fld`` (given ``src``) refers to: ``("param", binding alias, "")`` for a
    parameter that loads a row, ``("via", alias, ref field)`` for ``alias.field``; None when not known."""
    if fld.type != "ref" or not fld.ref:
        return None
    try:
        node = ast.parse(src.strip(), mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Name):  # a parameter: the row a binding loaded by it
        for b in spec.bindings:
            if b.param == node.id and b.entity == fld.ref and b.key == app.blueprint.entity(fld.ref).id_field:
                return ("param", b.alias, "")
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ent_of:
        return ("via", node.value.id, node.attr)
    return None


def _forbidden_children(spec: ToolSpec) -> list[tuple[str, str, str, str]]:
    """``(child entity, child field, alias, alias field)`` for each top-level ``not exists(child, field=alias.f)``
    with no other filter (any such child, whatever its values, makes the pre-condition false)."""
    aliases_ = {b.alias for b in spec.bindings}
    out: list[tuple[str, str, str, str]] = []
    for c in spec.pre:
        for node in X.conjuncts(X.parse(c.check)):
            if not (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
                continue
            call = node.operand
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "exists"):
                continue
            if not (len(call.args) == 1 and isinstance(call.args[0], ast.Name) and len(call.keywords) == 1):
                continue
            kw = call.keywords[0]
            v = kw.value
            if kw.arg and isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id in aliases_:
                out.append((call.args[0].id, kw.arg, v.value.id, v.attr))
    return out


def _same_parent(app: App, spec: ToolSpec) -> tuple[tuple[str, str, str], ...]:
    """``alias.f == param`` pre-conditions, as (entity of alias, f, alias of the row ``param`` loads): the
    bound row must be a child of that row, like ``exists(child, f=parent.id)``."""
    bp = app.blueprint
    ent_of = {b.alias: b.entity for b in spec.bindings}
    out = []
    for c in spec.pre:
        for node in X.conjuncts(X.parse(c.check)):
            if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
                continue
            for attr, other in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                if not (isinstance(attr, ast.Attribute) and isinstance(attr.value, ast.Name) and isinstance(other, ast.Name)):
                    continue
                child = ent_of.get(attr.value.id)
                fld = bp.entity(child).field(attr.attr) if child and bp.entity(child).has(attr.attr) else None
                if fld is None or fld.type != "ref" or not fld.ref:
                    continue
                for b in spec.bindings:
                    if b.param == other.id and b.entity == fld.ref and b.key == bp.entity(fld.ref).id_field:
                        out.append((child, attr.attr, b.alias))
    return tuple(out)


class RowFacts:
    """Symbolic rows of a planned chain and what its steps establish about them (see the module doc)."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.id_field = id_fields(app.blueprint)  # entity -> its id field
        self.entity: list[str] = []  # symbol -> entity
        self.rows_of: dict[str, list[int]] = {}  # entity -> its symbols
        self.known: dict[int, dict[str, Keys]] = {}  # symbol -> field -> values it can hold now
        self.links: dict[tuple[int, str], int] = {}  # (symbol, ref field) -> symbol of the row referred to
        self.created: set[int] = set()  # rows the chain creates
        self.children: dict[tuple[str, str], set[int]] = {}  # (child entity, ref field) -> parents given a child
        self.any_parent: dict[tuple[str, str], int] = {}  # child added whose parent is not known -> rows existing then
        self.any_child: set[str] = set()  # entities custom code may add rows to
        self.deleted: set[int] = set()  # rows a step deleted
        self.kids: dict[tuple[str, str, int], set[int]] = {}  # (child entity, ref field, parent) -> rows the chain gave it
        self.bound: list[dict[str, int]] = []  # per step: alias -> symbol
        self.given: dict[int, frozenset[str]] = {}  # rows the chain creates -> the fields the request gave them
        self.returned: list[int | None] = []  # per step: the row its result is
        self.ended: set[int] = set()  # rows a step moved to a state no transition leaves (withdrawn, closed for good)

    def _new(self, entity: str) -> int:
        sym = len(self.entity)
        self.entity.append(entity)
        self.rows_of.setdefault(entity, []).append(sym)
        return sym

    def _result_field(self, step: int, name: str) -> int | None:
        row = self.returned[step]
        if row is None:
            return None
        if name == self.id_field[self.entity[row]]:
            return row
        return self.links.get((row, name))

    def _fixed(self, refs: dict[str, Any], pins: dict[str, tuple[int, str]]) -> dict[str, int]:
        out = {}
        for p, ref in refs.items():
            s = self._result_field(ref.step, ref.field)
            if s is not None:
                out[p] = s
        for p, (j, alias) in pins.items():
            s = self.bound[j].get(alias)
            if s is not None:
                out[p] = s
        return out

    def _bind(self, facts: _Facts, fixed: dict[str, int], create: bool) -> dict[str, int]:
        out: dict[str, int] = {}
        for alias, entity, by_id, param, parent, ref_field in facts.binds:
            sym = None
            if by_id:
                if param is not None:
                    sym = fixed.get(param)
                elif parent is not None:
                    p = out.get(parent)
                    if p is not None:
                        sym = self.links.get((p, ref_field))
                        if sym is None and create:
                            sym = self.links[(p, ref_field)] = self._new(entity)
            if sym is None and create:
                sym = self._new(entity)
            if sym is not None:
                out[alias] = sym
        return out

    def allows(self, spec: ToolSpec, refs: dict[str, Any], pins: dict[str, tuple[int, str]]) -> bool:
        """Whether a next step of ``spec`` (fed by ``refs``, pinned by ``pins``) could meet its pre-conditions."""
        facts = _facts(self.app, spec)
        if facts.changes is not None and self.given and self._erases(facts, self._fixed(refs, pins)):
            return False
        if self.ended and spec.mode == "write" and self._acts_on_ended(facts, self._fixed(refs, pins)):
            return False
        if not facts.checked and not self.deleted:
            return True
        return self._allows(facts, self._fixed(refs, pins))

    def allows_one(self, spec: ToolSpec, how: str, param: str, step: int, name: str) -> bool:
        """:meth:`allows` for a step with one argument fed by an earlier ``step``: ``how`` is
        ``"ref"`` (``param`` takes field ``name`` of that step's result) or ``"pin"`` (``param``
        loads the row that step bound as alias ``name``)."""
        facts = _facts(self.app, spec)
        s = self._result_field(step, name) if how == "ref" else self.bound[step].get(name)
        fixed = {} if s is None else {param: s}
        if self._erases(facts, fixed):
            return False
        if self.ended and spec.mode == "write" and self._acts_on_ended(facts, fixed):
            return False
        if not facts.checked and not self.deleted:
            return True
        return self._allows(facts, fixed)

    def _acts_on_ended(self, facts: _Facts, fixed: dict[str, int]) -> bool:
        """Whether a write would act on a row an earlier step ended (moved to a state no transition leaves) without asking
        for that state: a student taken off the roll, then invoiced. A write whose pre-condition names the row's state
        follows up on the ending (a refund of a cancelled order) and is left to the state checks."""
        rows = self._bind(facts, fixed, create=False)
        checked = {alias for alias, _, _ in facts.states}
        return any(rows.get(alias) in self.ended and alias not in checked for alias in facts.needed)

    def _erases(self, facts: _Facts, fixed: dict[str, int]) -> bool:
        """Whether an update could only change fields the request gave when it made the row the update is fed
        ("make a playlist called A, then rename it to B" takes back what the request asked for)."""
        if facts.changes is None or not facts.binds:
            return False
        s = fixed.get(facts.binds[0][3] or "")
        return s in self.given and bool(facts.changes) and set(facts.changes) <= self.given[s]

    def _allows(self, facts: _Facts, fixed: dict[str, int]) -> bool:
        rows = self._bind(facts, fixed, create=False)
        if self.deleted and any(rows.get(alias) in self.deleted for alias in facts.needed):
            return False  # a row an earlier step deleted: no later step can load it
        for child, cf, alias in facts.no_children:
            s = rows.get(alias)
            if s is not None and self.kids.get((child, cf, s), set()) - self.deleted:
                return False  # an earlier step gave the row a child, and nothing removed it
        for alias, f, vals in facts.states:
            s = rows.get(alias)
            have = None if s is None else self.known.get(s, {}).get(f)
            if have is not None and have.isdisjoint(vals):
                return False
        for child, cf, alias in facts.children:
            s = rows.get(alias)
            if (
                s in self.created
                and child not in self.any_child
                and self.any_parent.get((child, cf), 0) <= s  # no child of unknown parent added since s was made
                and s not in self.children.get((child, cf), ())
            ):
                return False
        return True

    def add(self, spec: ToolSpec, refs: dict[str, Any], pins: dict[str, tuple[int, str]]) -> None:
        """Record a planned step: what its pre-conditions require, then what its effects leave."""
        facts = _facts(self.app, spec)
        rows = self._bind(facts, self._fixed(refs, pins), create=True)
        for alias, f, vals in facts.states:
            known = self.known.setdefault(rows[alias], {})
            known[f] = vals if f not in known else known[f] & vals
        if facts.custom:
            self._forget_custom(facts)
        for alias, ent, f, vals, when_given in facts.updates:
            s = rows.get(alias)
            if when_given and vals is not None:  # written only when the parameter is given
                old = None if s is None else self.known.get(s, {}).get(f)
                vals = None if old is None else old | vals
            self._write(ent, s, f, vals)
            if s is not None and vals is not None and (final := _final_states(self.app, ent, f)):
                (self.ended.add if vals <= final else self.ended.discard)(s)
        new = {alias: self._insert(ent, consts, links, ref_fields, rows) for alias, ent, consts, links, ref_fields in facts.inserts}
        if facts.gives and new.get("new") is not None:
            self.given[new["new"]] = frozenset(facts.gives)
        for alias, cascade in facts.deletes:
            self._delete(rows.get(alias), cascade)
        self.bound.append(rows)
        self.returned.append(new.get("new") if facts.returns == "new" else rows.get(facts.returns))

    def _forget_custom(self, facts: _Facts) -> None:
        """Custom code: forget what it may write, allow any child of what it may create, drop children it may remove."""
        for ent, fields in facts.writes:
            for f in fields:
                self._write(ent, None, f, None)
        self.any_child.update(facts.creates)
        for key in [k for k in self.kids if k[0] in facts.removes]:  # the child may be gone
            del self.kids[key]

    def _insert(
        self,
        ent: str,
        consts: tuple[tuple[str, Keys], ...],
        links: tuple[tuple[str, str, str, str], ...],
        ref_fields: tuple[str, ...],
        rows: dict[str, int],
    ) -> int:
        """A new row of ``ent`` the step creates, linked to the rows its ref fields are known to refer to."""
        s = self._new(ent)
        self.created.add(s)
        self.known[s] = dict(consts)
        linked = set()
        for f, how, a, ref_field in links:
            src = rows.get(a)
            target = src if how == "param" else self.links.get((src, ref_field)) if src is not None else None
            if target is not None:
                self.links[(s, f)] = target
                self.kids.setdefault((ent, f, target), set()).add(s)
                linked.add(f)
                if target in self.created:
                    self.children.setdefault((ent, f), set()).add(target)
                    continue
            self.any_parent[(ent, f)] = s  # the parent may be any row existing now, one the chain created too
        for name in ref_fields:
            if name not in linked:
                self.any_parent[(ent, name)] = s
        return s

    def _delete(self, s: int | None, cascade: tuple[tuple[str, str], ...]) -> None:
        """Row ``s`` is deleted, and with it its children along ``cascade`` ((child entity, ref field), deleted first)."""
        if s is None:
            return
        gone = {s}
        for child, f in cascade:
            gone |= {t for t in self.rows_of.get(child, ()) if self.links.get((t, f)) == s}
        self.deleted |= gone

    def _write(self, entity: str, sym: int | None, f: str, vals: Keys | None) -> None:
        """``sym``.f now holds one of ``vals`` (None: unknown); any other row of the table may be the same row."""
        for key in [k for k in self.kids if k[0] == entity and k[1] == f]:  # the child may now refer to another row
            del self.kids[key]
        for t in self.rows_of.get(entity, ()):
            self.links.pop((t, f), None)
            known = self.known.get(t)
            if known is None:
                continue
            if t == sym and vals is not None:
                known[f] = vals
            elif vals is not None and f in known and t != sym:
                known[f] = known[f] | vals
            else:
                known.pop(f, None)
