"""For-each goals: "cancel all my pending orders", an effect on every row that meets the request's criteria.

A one-step action task that acts on one row of the requester's (``cancel_order`` on their pending
order) becomes, for a share of the task indexes whose app has a search over that table by owner and
by a kind or state, a task over all such rows: the core gets 1-3 more rows of the owner with the
same value (so 2-4 rows meet the criteria) and a look-alike row of the owner with another value,
which must stay untouched. The oracle searches the owner's rows with that value, then makes the
write once for each row the search lists (``items[i]``). No distractor may meet the criteria too
(:func:`meets`): the request says "all", so every state holds exactly the rows the oracle changes.
The request names the rows by the criteria ("all my pending orders"), never one by one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.runtime.sampledata import StateBuilder
from envsynth.runtime.state import Rows
from envsynth.tasks.building.core import Core
from envsynth.tasks.building.instantiate import ChainFailed, execute
from envsynth.tasks.building.world import Instance, value_pool
from envsynth.tasks.model import Call, Ref
from envsynth.tasks.planning.answer import Question
from envsynth.tasks.wording.roles import asked_by

SHARE = 0.75
"""The share of eligible task indexes made for-each tasks (the others stay one-row tasks: easy ones a corpus needs too)."""
ROWS: tuple[int, ...] = (2, 3, 4)
"""How many rows meet a for-each request's criteria (one is drawn per task)."""
_VALUE_TYPES = ("state", "enum")


@dataclass(frozen=True)
class ForEach:
    """A for-each goal: the rows of ``entity`` whose ``owner_field`` is ``owner`` and ``field`` is ``value``.

    Attributes:
        entity: the table the write acts on.
        owner_field: the reference to the requester's row (``customer_id``).
        owner_table: the table of the requester (a declared user role's entity).
        owner: the requester's key in state 0.
        field: the kind or state the request names the rows by (``status``).
        value: that field's value (``pending``).
        write: the step index of the first write (the search is step 0, the writes follow).
    """

    entity: str
    owner_field: str
    owner_table: str
    owner: Any
    field: str
    value: Any
    write: int = 1

    def criteria(self, owner: Any) -> dict[str, Any]:
        """The criteria as field values, for a state whose requester key is ``owner``."""
        return {self.owner_field: owner, self.field: self.value}


def meets(fe: ForEach, row: dict[str, Any], owner: Any) -> bool:
    """Whether ``row`` (of ``fe.entity``) meets the for-each criteria in a state whose requester key is ``owner``."""
    return all(row.get(k) == v for k, v in fe.criteria(owner).items())


def expand_for_each(inst: Instance, core: Core, question: Question) -> ForEach | None:
    """Make ``inst`` a for-each task when it fits and its draw says so: rows added to ``core``, ``inst.calls`` rewritten.

    Returns the goal, or None (the instance is left as it was, but for its workspace, closed once the check ran).
    """
    plan = inst.plan
    app = plan.app
    if plan.kind != "action" or question.step is not None or len(inst.calls) != 1 or inst.calls[0].refs:
        return None
    rng = random.Random(plan.base * 104_729 + 11)
    if rng.random() >= SHARE:
        return None
    call = inst.calls[0]
    spec = app.spec_by_name[call.tool]
    found = _search_for(app, spec, call, core.rows)
    if found is None:
        return None
    search, main, fe = found
    k = rng.choice(ROWS)
    ent = app.blueprint.entity(fe.entity)
    source = next(r for r in core.rows[fe.entity] if r[ent.id_field] == call.args[main])
    rows = {t: list(rs) for t, rs in core.rows.items()}
    added = _add(app, rows, fe, source, k - 1, rng)
    if added is None:
        return None
    calls = [_search_call(search, fe)]
    args = {p: v for p, v in call.args.items() if p != main}
    calls += [Call(tool=call.tool, args=args, refs={main: Ref(step=0, item=i, field=ent.id_field)}) for i in range(k)]
    _close_workspace(inst, core)  # (one workspace open at a time: the check below loads its own)
    if not _runs(app, rows, calls, k):
        return None
    new = rows[fe.entity][len(core.rows.get(fe.entity, [])) :]
    core.rows = rows
    inst.s0 = {**inst.s0, fe.entity: [*inst.s0.get(fe.entity, []), *new]}  # a state widened to s0 keeps them
    inst.calls = calls
    core.targets = [tk for tk in core.targets if tk != (fe.entity, call.args[main])] or [(fe.owner_table, fe.owner)]
    if (fe.owner_table, fe.owner) not in core.targets:
        core.targets.append((fe.owner_table, fe.owner))
    core.acted_on = core.acted_on | {(fe.entity, key) for key in added}
    return fe


def _search_for(app: App, spec: ToolSpec, call: Call, rows: Rows) -> tuple[ToolSpec, str, ForEach] | None:
    """A search over the write's table by its row's owner and kind or state, the write's row parameter, and the goal."""
    if spec.mode != "write" or spec.kind in ("create", "book") or spec.code is not None:
        return None
    main = next((b.param for b in spec.bindings if b.param and not b.many and b.entity == spec.entity), None)
    if main is None or not isinstance(call.args.get(main), str):
        return None
    if any(isinstance(v, (bool, list)) for p, v in call.args.items() if p != main):
        return None  # "make sure it ..." and lists of rows are said of one row
    bp = app.blueprint
    ent = bp.entity(spec.entity)
    if any(_names_the_row(spec, ent, p) for p in call.args if p != main):
        return None  # every playlist renamed "Workout Vibes": a name is one row's
    row = next((r for r in rows.get(spec.entity, []) if r[ent.id_field] == call.args[main]), None)
    if row is None:
        return None
    roles = {u.entity for u in bp.users if u.entity and _may_ask(bp, u.role, spec.name)}  # the owner asks for all their rows
    for search in app.specs:
        q = search.query
        if q is None or q.op != "search" or q.entity != spec.entity or q.group_by is not None:
            continue
        owner = _filter(search, ent, ("eq",), lambda f: f.type == "ref" and f.ref in roles and row.get(f.name) is not None)
        value = _filter(search, ent, ("eq", "in"), lambda f: f.type in _VALUE_TYPES and row.get(f.name) is not None)
        if owner is None or value is None or _other_required(search, {owner[0], value[0]}):
            continue
        owner_table = ent.field(owner[1]).ref or ""
        fe = ForEach(spec.entity, owner[1], owner_table, row[owner[1]], value[1], row[value[1]])
        return search, main, fe
    return None


def _may_ask(bp: Any, role: str, tool: str) -> bool:
    """Whether a user of ``role`` may ask for ``tool`` (its action's ``asked_by``, docs/blueprints.md 10.4)."""
    allowed = asked_by(bp, tool)
    return allowed is None or role in allowed


def _filter(search: ToolSpec, ent: Any, ops: tuple[str, ...], fits: Any) -> tuple[str, str] | None:
    """The (parameter, field) of the search's first filter of ``ops`` on a field of ``ent`` that ``fits``."""
    q = search.query
    for flt in q.filters:
        if flt.op in ops and ent.has(flt.field) and fits(ent.field(flt.field)):
            return flt.param, flt.field
    return None


def _names_the_row(spec: ToolSpec, ent: Any, param: str) -> bool:
    """Whether ``param`` sets a field that names one row (its label, or a unique value)."""
    field = (spec.param(param).field or "").split(".")
    if len(field) != 2 or field[0] != ent.name or not ent.has(field[1]):
        return False
    f = ent.field(field[1])
    return bool(f.unique) or f.name in _NAME_FIELDS or f.type == "name"


_NAME_FIELDS = frozenset(("name", "title", "display_name", "nickname", "label", "handle", "username"))


def _other_required(search: ToolSpec, given: set[str]) -> bool:
    """Whether the search needs a parameter besides the ``given`` filters."""
    return any(p.required and p.name not in given for p in search.params)


def _search_call(search: ToolSpec, fe: ForEach) -> Call:
    """The oracle's search: the requester's rows with the goal's value."""
    args: dict[str, Any] = {}
    for flt in search.query.filters:
        if flt.op == "eq" and flt.field == fe.owner_field:
            args.setdefault(flt.param, fe.owner)
        elif flt.op in ("eq", "in") and flt.field == fe.field:
            args.setdefault(flt.param, [fe.value] if flt.op == "in" else fe.value)
    return Call(tool=search.name, args=args)


def _add(app: App, rows: Rows, fe: ForEach, source: dict[str, Any], n: int, rng: random.Random) -> list[Any] | None:
    """Add ``n`` rows meeting the criteria and one look-alike of the owner with another value; the new rows' keys.

    None (and ``rows`` unchanged) when the table's unique values do not allow copies or no other value exists.
    """
    bp = app.blueprint
    ent = bp.entity(fe.entity)
    fields = {fe.owner_field, fe.field}
    if any(f.unique and f.name in fields for f in ent.fields) or any(set(u) <= fields for u in ent.unique):
        return None
    others = [v for v in _values(ent.field(fe.field)) if v != fe.value]
    if not others or ent.one_only(fe.criteria(fe.owner)):
        return None  # (no other value for a look-alike; or the app allows one such row an owner: one active plan)
    builder = StateBuilder(bp, rng.randrange(1 << 30), app.order, {t: list(rs) for t, rs in rows.items()}).use_pool(value_pool(app))
    same = {f: source[f] for f in fields}
    made = [builder.add(ent, dict(same)) for _ in range(n)]
    alike = builder.add(ent, {fe.owner_field: fe.owner, fe.field: rng.choice(others)})
    if any(m is None for m in made) or alike is None:
        return None
    rows[fe.entity] = [*rows.get(fe.entity, []), *(m for m in made if m is not None), alike]
    return [m[ent.id_field] for m in made if m is not None]


def _runs(app: App, rows: Rows, calls: list[Call], k: int) -> bool:
    """Whether the for-each chain runs on ``rows`` and its search lists exactly the ``k`` rows it writes."""
    try:
        run = execute(app, rows, calls, seed=0)
    except ChainFailed:
        return False
    listed = run.results[0]
    return isinstance(listed, dict) and listed.get("total") == k and len(listed.get("items") or []) == k


def _values(field: Any) -> list[Any]:
    """The values a kind or state field takes."""
    return list(getattr(field, "states", None) or getattr(field, "values", None) or [])


def _close_workspace(inst: Instance, core: Core) -> None:
    """The instance's workspace holds the core as it was: close it, the states are loaded anew."""
    if core.derived:
        inst.ws0.close()
        core.derived = False
