"""Sample data: the rows of a state drawn from one seed (the app's sample state, test fixtures, task states).

:class:`StateBuilder` draws rows entity by entity, respecting references, unique fields and
composite keys, correlated fields and capacity invariants; :class:`ValuePool` and
:class:`TakenIds` keep what a state already holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from envsynth.blueprint.correlate import depends_on, derive, derived_order, few_values, holds, one_rule_values, timed_matches, when_holds
from envsynth.blueprint.entities import OneRule
from envsynth.blueprint.models import Blueprint, Entity, FieldDef
from envsynth.blueprint.people import shared_fields
from envsynth.blueprint.values import ValueMaker, offset_days
from envsynth.runtime.state import Rows, id_fields


class TakenIds(dict[str, set[str]]):
    """The ids taken per table, collected from ``rows`` when a table is first asked for."""

    def __init__(self, rows: Rows, ids: dict[str, str]) -> None:
        super().__init__()
        self._rows = rows
        self._ids = ids

    def __missing__(self, table: str) -> set[str]:
        key = self._ids[table]
        taken = self[table] = {r[key] for r in self._rows.get(table, ())}
        return taken


def distinct_values(rows: list[dict[str, Any]], name: str) -> tuple[list[Any], dict[Any, int]]:
    """The distinct non-null values of field ``name`` in ``rows`` in a fixed order, and each one's position."""
    values = sorted({v for r in rows if (v := r.get(name)) is not None}, key=repr)
    return values, {v: i for i, v in enumerate(values)}


class ValuePool(dict[str, list[dict[str, Any]]]):
    """Pre-drawn rows per table whose plain values seed other states (see :meth:`StateBuilder.use_pool`).

    It also keeps, per (table, field), the field's :func:`distinct_values` once asked for.
    """

    def __init__(self, rows: Rows) -> None:
        super().__init__(rows)
        self._distinct: dict[tuple[str, str], tuple[list[Any], dict[Any, int]]] = {}

    def distinct(self, table: str, name: str) -> tuple[list[Any], dict[Any, int]]:
        """:func:`distinct_values` of field ``name`` in this pool's ``table`` rows (worked out once)."""
        key = (table, name)
        hit = self._distinct.get(key)
        if hit is None:
            hit = self._distinct[key] = distinct_values(self.get(table, []), name)
        return hit


class StateBuilder:
    """Draws rows for a blueprint's entities from one seed, respecting references.

    Used for the sample state of an app, for test fixtures and for task states.
    """

    def __init__(self, bp: Blueprint, seed: int, order: list[Entity], rows: Rows | None = None) -> None:
        """``rows``: existing rows to add to (this dict is used and extended, its row lists too)."""
        self.bp = bp
        self.values = ValueMaker(bp, seed)
        self.rng = self.values.rng
        self.order = order
        tables, self._invariants = _builder_facts(bp)
        self._plans = _plans(bp)
        self.taken_ids: dict[str, set[str]]
        if rows is None:
            self.rows: Rows = {t: [] for t in tables}
            self.taken_ids = {t: set() for t in tables}
        else:
            for t in tables:
                rows.setdefault(t, [])
            self.rows = rows
            self.taken_ids = TakenIds(rows, id_fields(bp))
            for plan in self._plans.values():
                for name in plan.person_names:
                    for r in rows.get(plan.table) or ():
                        self.values.take_person(r.get(name))
        self.unique_seen: dict[tuple[str, str], set[Any]] = {}
        self.pool: Rows | None = None
        self._sums_into = any(p.sums for p in self._plans.values())  # some table's total is summed from its children

    def use_pool(self, pool: Rows) -> StateBuilder:
        """Draw plain values from ``pool`` rows (pre-drawn, e.g. an app's sample state) instead of Faker.

        Ids and references are still drawn fresh; a unique value already taken is drawn anew.
        Much faster when many small states are made (task synthesis).
        """
        self.pool = pool
        return self

    def donor(self, table: str) -> dict[str, Any]:
        """One pool row of ``table``, the same for this builder's life: parameters that stand for fields of a
        table with correlated fields take their values from it together (an arrival after its departure)."""
        donors = self.__dict__.setdefault("_donors", {})
        row = donors.get(table)
        if row is None:
            rows = (self.pool or {}).get(table) or [{}]
            row = donors[table] = rows[self.rng._randbelow(len(rows))]
        return row

    def fill(self, counts: dict[str, int] | None = None) -> Rows:
        """Add ``counts[entity]`` rows (default: the entity's ``rows``) to every table."""
        add = self.add
        for ent in self.order:
            n = ent.rows if counts is None else counts.get(ent.name, 0)
            for _ in range(n):
                add(ent)
        return self.rows

    def add(self, ent: Entity, fixed: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Draw one row of ``ent`` (fields in ``fixed`` are taken as given); None if a ref has no target."""
        plan = self._plans.get(ent.name)
        if plan is None or plan.entity is not ent:  # an entity object of another blueprint (not kept)
            plan = _build_plan(ent, self.bp)
        table = plan.table
        fixed = fixed or _NOTHING
        rng = self.rng
        rows = self.rows
        row, source = self._start_row(plan, fixed)
        for name, null_rate, unique, f, ref, ref_key in plan.steps:
            if name in fixed:
                row[name] = fixed[name]
            elif ref:
                value = self._ref_value(rows.get(ref), ref_key, null_rate)
                if value is EXHAUSTED:  # no row to refer to
                    return None
                row[name] = value
            elif null_rate and rng.random() < null_rate:
                row[name] = None
            elif source is not None and (not unique or self._free(table, name, source[name])):
                row[name] = source[name]
            elif unique:
                row[name] = self._unique(ent, f, row)
                if row[name] is EXHAUSTED:  # every value of the field is taken: the table is full
                    return None
            else:
                row[name] = self.values.value(f, row)
        if (plan.derived or plan.keys or plan.rules) and not self._correlate(plan, row, fixed):
            return None
        return self._keep_row(plan, row, fixed)

    def _ref_value(self, targets: list[dict[str, Any]] | None, ref_key: str, null_rate: float | None) -> Any:
        """A reference to a random row of ``targets`` (by ``ref_key``), None at the field's null rate, or
        :data:`EXHAUSTED` when there is no row to refer to and the field cannot be null."""
        if null_rate is not None and (not targets or self.rng.random() < null_rate):
            return None
        if not targets:
            return EXHAUSTED
        return targets[self.rng._randbelow(len(targets))][ref_key]

    def _start_row(self, plan: _Plan, fixed: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """A new row holding its id (given, or a fresh one), and the pool row its plain values come from (None: drawn)."""
        source = None
        if self.pool:
            candidates = self.pool.get(plan.table)
            if candidates:
                source = candidates[self.rng._randbelow(len(candidates))]
                for _ in range(8 if plan.person_names else 0):  # a user row is a person the state does not hold yet
                    if not any(self.values.has_person(source.get(n)) for n in plan.person_names):
                        break
                    source = candidates[self.rng._randbelow(len(candidates))]
        id_name = plan.id_name
        if id_name in fixed:
            return {id_name: fixed[id_name]}, source
        return {id_name: self.values.new_key(plan.prefix, self.taken_ids[plan.table])}, source

    def _keep_row(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> dict[str, Any]:
        """Add the finished ``row`` to its table: a given id is taken, a used amount is capped by its capacity."""
        table = plan.table
        if plan.id_name in fixed:
            self.taken_ids[table].add(fixed[plan.id_name])
        caps = self._invariants.get(table)
        if caps:
            for used, cap in caps:
                if row.get(used) is not None and row.get(cap) is not None and row[used] > row[cap]:
                    row[used] = row[cap]
        self.rows[table].append(row)
        for name in plan.person_names:  # a user row copied from a pool row is that person: no other row is drawn as them
            self.values.take_person(row.get(name))
        if self._sums_into:
            self.__dict__.setdefault("_drawn", set()).add(id(row))
        for ref, parent_table, parent_field, child_field in plan.sums:
            self._sum_into(plan, row, ref, parent_table, parent_field, child_field)
        return row

    def _row_by_id(self, table: str, key: Any) -> dict[str, Any] | None:
        """The row of ``table`` with id ``key`` in this state (an index rebuilt when the table has grown)."""
        index = self.__dict__.setdefault("_by_id", {})
        rows = self.rows.get(table) or []
        hit = index.get(table)
        if hit is None or hit[0] != len(rows):
            id_name = self.bp.entity(table).id_field
            hit = index[table] = (len(rows), {r.get(id_name): r for r in rows})
        return hit[1].get(key)

    def _sum_into(self, plan: _Plan, row: dict[str, Any], ref: str, parent_table: str, parent_field: str, child_field: str) -> None:
        """``sum_of``: the parent ``row`` refers to holds the sum of ``child_field`` over its rows of this table, when
        this builder drew the parent (rows it was given are only added to, never changed)."""
        parent = self._row_by_id(parent_table, row.get(ref)) if row.get(ref) is not None else None
        if parent is None or id(parent) not in self.__dict__.get("_drawn", ()) or not isinstance(row.get(child_field), int | float):
            return
        total = sum(v for r in self.rows[plan.table] if r.get(ref) == row[ref] and isinstance(v := r.get(child_field), int | float))
        parent[parent_field] = round(total, 2) if isinstance(total, float) else total

    def _anchor(self, plan: _Plan, row: dict[str, Any], anchor: str) -> Any:
        """The value ``not_before`` anchor ``anchor`` names: a field of ``row``, or ``<ref>.<field>`` of the row it points to."""
        if "." not in anchor:
            return row.get(anchor)
        ref, name = anchor.split(".", 1)
        target = plan.entity.field(ref).ref or ""
        parent = self._row_by_id(target, row.get(ref)) if row.get(ref) is not None else None
        return None if parent is None else parent.get(name)

    def _not_before(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> None:
        """Move each ``not_before`` date of ``row`` that is earlier than its anchors to between the latest anchor and
        the generator's latest date (the reference day without ``dates``), then redraw the fields drawn from it."""
        for f, anchors in plan.not_before:
            v = row.get(f.name)
            if f.name in fixed or not isinstance(v, str):
                continue
            floors = [a for x in anchors if isinstance(a := self._anchor(plan, row, x), str)]
            if not floors:
                continue
            floor = max(floors, key=lambda t: t[:19] if len(t) > 10 else t + "T00:00:00")
            if not _earlier(v, floor):
                continue
            row[f.name] = self._at_or_after(f, floor)
            self._follow(plan, row, f.name, fixed)

    def _parents_before(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> None:
        """A ``not_before`` date the caller gave (a distractor copying its target) that is earlier than a parent's date:
        the ref, when not given too, points instead to a row whose date is not later (when there is one)."""
        for f, anchors in plan.not_before:
            v = row.get(f.name)
            if f.name not in fixed or not isinstance(v, str):
                continue
            for anchor in anchors:
                ref, _, name = anchor.partition(".")
                if not name or ref in fixed or not isinstance(a := self._anchor(plan, row, anchor), str) or not _earlier(v, a):
                    continue
                target = plan.entity.field(ref).ref or ""
                key = self.bp.entity(target).id_field
                fits = [r[key] for r in self.rows.get(target) or () if not (isinstance(r.get(name), str) and _earlier(v, r[name]))]
                if fits:
                    row[ref] = fits[self.rng._randbelow(len(fits))]

    def _at_or_after(self, f: FieldDef, floor: str) -> str:
        """A date (datetime) of field ``f`` at or after ``floor`` and, when there is room, by the generator's latest day."""
        import datetime as dt

        g = f.gen
        ref_day = self.values.ref_day
        last = ref_day + dt.timedelta(days=max(offset_days(d) for d in g.dates)) if g is not None and g.dates else ref_day
        first = dt.date.fromisoformat(floor[:10])
        if f.type == "date":
            return (first + dt.timedelta(days=self.rng.randint(0, max(0, (last - first).days)))).isoformat()
        if last > first:
            return self.values._with_time(first + dt.timedelta(days=self.rng.randint(1, (last - first).days)))
        base = dt.datetime.fromisoformat(floor if len(floor) > 10 else floor + "T08:00:00")
        return (base + dt.timedelta(minutes=15 * self.rng.randint(1, 8))).strftime("%Y-%m-%dT%H:%M:00")

    def _one_rules(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> None:
        """``at_most_one``: a row that would be a second match of a rule for its owner gets other values of the
        rule's ``where`` fields (those the caller did not fix)."""
        for rule in plan.one_rules:
            if not _matches(rule, row):
                continue
            owner = tuple(row.get(p) for p in rule.per)
            if None in owner or not any(_matches(rule, r) and tuple(r.get(p) for p in rule.per) == owner for r in self.rows[plan.table]):
                continue
            for name in rule.where:
                if name not in fixed:
                    values = one_rule_values(plan.entity, rule, name)
                    row[name] = values[self.rng._randbelow(len(values))]
                    self._follow(plan, row, name, fixed)

    def _seen(self, table: str, name: str) -> set[Any]:
        """The values of a unique field taken in this state (collected on first use, then kept up to date)."""
        seen = self.unique_seen.get((table, name))
        if seen is None:
            seen = self.unique_seen[(table, name)] = {r[name] for r in self.rows[table]}
        return seen

    def _free(self, table: str, name: str, value: Any) -> bool:
        """Whether a unique field's value is still unused in this state (and claim it if so)."""
        seen = self.unique_seen.get((table, name)) or self._seen(table, name)
        if value in seen:
            return False
        seen.add(value)
        return True

    def _unique(self, ent: Entity, f: Any, row: dict[str, Any]) -> Any:
        """A value of unique field ``f`` no row has yet: random draws, then (after 20) one of the values
        still free when the generator has few (never a made-up suffix in text people read)."""
        seen = self._seen(ent.name, f.name)
        values = few_values(f)
        if values is not None and len(seen) >= len(values) and not set(values) - seen:
            return EXHAUSTED  # a full table: no draw
        for attempt in range(50):
            v = self.values.value(f, row)
            if attempt > 20:
                if f.type == "email":  # an address with more digits is still an address
                    v = v.replace("@", f"{self.rng.randint(100, 999)}@")
                elif values is not None:
                    return self._unused(ent, f, seen, values)
            if v not in seen:
                seen.add(v)
                return v
        return EXHAUSTED  # 50 draws all taken (a generator of many values, nearly all used): the table is full

    def _unused(self, ent: Entity, f: FieldDef, seen: set[Any], values: list[Any]) -> Any:
        """One of ``values`` (every value ``f``'s generator draws) that no row has, drawn from the stream;
        :data:`EXHAUSTED` when every one is taken (no row is added: a sample state's ``rows`` fit, which
        loading checks; bigger states drawn for tasks hold as many rows as there are values)."""
        free = [v for v in values if v not in seen]
        if not free:
            return EXHAUSTED
        v = free[self.rng._randbelow(len(free))]
        seen.add(v)
        return v

    def _correlate(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> bool:
        """Draw the row's derived fields from its other fields, then keep its composite keys unique
        (False: a key has no free values left, the row is not added)."""
        for f in plan.derived:
            if f.name in fixed:  # given (a distractor copying its target): taken as is, as plain fields are
                row[f.name] = fixed[f.name]
                self._imply_when(plan, f, row, fixed)
            else:
                row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
        if plan.not_before:
            self._parents_before(plan, row, fixed)
        if not all(self._unique_key(plan, key, row, fixed) for key in plan.keys):
            return False
        if plan.not_before:
            self._not_before(plan, row, fixed)
        if plan.one_rules:
            self._one_rules(plan, row, fixed)
        if plan.timed:
            self._timed(plan, row, fixed)
        return True

    def _timed(self, plan: _Plan, row: dict[str, Any], fixed: dict[str, Any]) -> None:
        """``past_when`` / ``future_when``: a date of a row in those states on the wrong side of the clock is moved to
        the other side (within the generator's days when they reach it, else up to a week), then the fields drawn
        from it are redrawn."""
        import datetime as dt

        for f in plan.timed:
            v, g = row.get(f.name), f.gen
            if f.name in fixed or not isinstance(v, str) or g is None:
                continue
            today = self.values.ref_day
            lo, hi = sorted(offset_days(d) for d in g.dates) if g.dates else (-365, 120)
            if timed_matches(g.past_when, row) and v[:10] >= today.isoformat():
                days = -self.rng.randint(1, -lo) if lo <= -1 else -self.rng.randint(1, 7)
            elif timed_matches(g.future_when, row) and v[:10] <= today.isoformat():
                days = self.rng.randint(1, hi) if hi >= 1 else self.rng.randint(1, 7)
            else:
                continue
            day = today + dt.timedelta(days=days)
            row[f.name] = day.isoformat() if f.type == "date" else self.values._with_time(day)
            self._follow(plan, row, f.name, fixed)

    def _imply_when(self, plan: _Plan, f: FieldDef, row: dict[str, Any], fixed: dict[str, Any]) -> None:
        """A ``when`` field given a value only its matching rows hold (a balance on a payment method): the fields of
        its condition the caller left free take a matching value (the method becomes a gift card)."""
        g = f.gen
        if g is None or g.when is None or row[f.name] == g.otherwise or when_holds(g, row):
            return
        for name, want in g.when.items():
            wanted = want if isinstance(want, list) else [want]
            if name not in fixed and row.get(name) not in wanted:
                row[name] = wanted[self.rng._randbelow(len(wanted))]
                self._follow(plan, row, name, fixed)

    def _ref_draw(self, f: FieldDef) -> Any:
        rows = self.rows.get(f.ref or "") or []
        key = self.bp.entity(f.ref or "").id_field
        return lambda: rows[self.rng._randbelow(len(rows))][key] if rows else None

    def _unique_key(self, plan: _Plan, key: tuple[str, ...], row: dict[str, Any], fixed: dict[str, Any]) -> bool:
        """Redraw the fields of composite key ``key`` that are not fixed until no other row has the same values;
        False when 50 redraws all collide (the key's values are all, or nearly all, taken) or the caller
        fixed the whole key to values another row has."""
        label = "+".join(key)
        seen = self.unique_seen.get((plan.table, label))
        if seen is None:
            seen = self.unique_seen[(plan.table, label)] = {
                t for r in self.rows[plan.table] if None not in (t := tuple(r.get(k) for k in key))
            }
        free = [plan.entity.field(k) for k in key if k not in fixed]
        for _ in range(50):
            values = tuple(row.get(k) for k in key)
            if None in values or values not in seen:
                if None not in values:
                    seen.add(values)
                return True
            if not free:
                return False  # the caller fixed the whole key, and it is taken: the database would refuse the row
            f = free[self.rng._randbelow(len(free))]
            if f in plan.derived:
                row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
            else:
                row[f.name] = self._ref_draw(f)() if f.type == "ref" else self.values.value(f, row)
            self._follow(plan, row, f.name, fixed)
        return False

    def rederive(self, ent: Entity, row: dict[str, Any], changed: str) -> None:
        """Redraw the derived fields of ``row`` that depend on field ``changed`` and no longer honour their generator
        (the fixture solver calls it after changing a field)."""
        plan = self._plans.get(ent.name)
        if plan is not None and plan.derived:
            self._follow(plan, row, changed, _NOTHING, only_broken=True)

    def _follow(self, plan: _Plan, row: dict[str, Any], changed: str, fixed: dict[str, Any], only_broken: bool = False) -> None:
        """Redraw the derived fields that depend on ``changed``, directly or through one another (``only_broken``:
        only those that no longer honour their generator)."""
        touched = {changed}
        for f in plan.derived:
            if f.name in fixed or not set(depends_on(f)) & touched or (only_broken and holds(f, row)):
                continue
            row[f.name] = derive(self.values, f, row, self._ref_draw(f) if f.type == "ref" else None)
            touched.add(f.name)


def _earlier(a: str, b: str) -> bool:
    """Whether time ``a`` is before ``b``; a date against a datetime compares the days."""
    return a[:10] < b[:10] if len(a) == 10 or len(b) == 10 else a[:19] < b[:19]


def _matches(rule: OneRule, row: dict[str, Any]) -> bool:
    return all(row.get(k) in (v if isinstance(v, list) else [v]) for k, v in rule.where.items())


_NOTHING: dict[str, Any] = {}
EXHAUSTED = object()
"""What :meth:`StateBuilder._unique` returns when every value of a unique field is taken."""


class _Plan(NamedTuple):
    """How :meth:`StateBuilder.add` draws a row of one entity, as plain values."""

    entity: Entity
    table: str
    id_name: str
    prefix: str
    # per field after the id: (name, null rate (None: not nullable), unique, field, referenced table or "", its id field)
    steps: tuple[tuple[str, float | None, bool, FieldDef, str, str], ...]
    # fields drawn from other fields of the row, in dependency order (see blueprint.correlate), and composite unique keys
    derived: tuple[FieldDef, ...] = ()
    keys: tuple[tuple[str, ...], ...] = ()
    # not_before fields with their anchors; at_most_one rules; (ref, parent table, parent field, own field) per sum_of
    not_before: tuple[tuple[FieldDef, tuple[str, ...]], ...] = ()
    one_rules: tuple[OneRule, ...] = ()
    sums: tuple[tuple[str, str, str, str], ...] = ()
    timed: tuple[FieldDef, ...] = ()  # fields with past_when / future_when
    person_names: tuple[str, ...] = ()  # name fields a user row takes from its shared person (blueprint.people)

    @property
    def rules(self) -> bool:
        """Whether rows of this plan have not_before or timed dates, or at_most_one rules, to keep."""
        return bool(self.not_before or self.one_rules or self.timed)


def _plans(bp: Blueprint) -> dict[str, _Plan]:
    """Table -> how :meth:`StateBuilder.add` draws its rows (kept on the blueprint's index)."""
    return bp.index.of(_build_plans, bp)


def _build_plans(bp: Blueprint) -> dict[str, _Plan]:
    return {e.name: _build_plan(e, bp) for e in reversed(bp.entities)}


def _build_plan(e: Entity, bp: Blueprint) -> _Plan:
    """How rows of ``e`` are drawn, its refs read in ``bp``."""
    steps, shared = [], shared_fields(bp)
    derived = derived_order(e)
    for f in e.fields[1:]:
        null_rate = f.null_rate if f.nullable else None
        if f in derived and f.type != "ref":  # drawn after the row's other fields (a ref is drawn first, then checked)
            continue
        if f.type == "ref":  # a ref field names its table (FieldDef checks it)
            steps.append((f.name, null_rate, f.unique, f, f.ref or "", bp.entity(f.ref or "").id_field))
        else:
            steps.append((f.name, null_rate, f.unique, f, "", ""))
    not_before = tuple((f, tuple(f.gen.not_before)) for f in e.fields if f.gen is not None and f.gen.not_before)
    sums = tuple(
        (c.name, p.name, pf.name, pf.gen.sum_of.split(".", 1)[1])
        for p in bp.entities
        for pf in p.fields
        if pf.gen is not None and pf.gen.sum_of and pf.gen.sum_of.split(".", 1)[0] == e.name
        for c in e.fields
        if c.type == "ref" and c.ref == p.name
    )
    return _Plan(
        e,
        e.name,
        e.id_field,
        e.prefix,
        tuple(steps),
        tuple(derived),
        tuple(tuple(k) for k in e.unique),
        not_before,
        tuple(e.at_most_one),
        sums,
        tuple(f for f in e.fields if f.gen is not None and (f.gen.past_when is not None or f.gen.future_when is not None)),
        tuple(f.name for f in e.fields if shared.get(id(f)) == "name"),
    )


def _builder_facts(bp: Blueprint) -> tuple[tuple[str, ...], dict[str, list[tuple[str, str]]]]:
    """The tables of a blueprint, and per table the ``used <= capacity`` pairs implied by booking
    actions, kept true in drawn rows (kept on the blueprint's index)."""
    return bp.index.of(_build_builder_facts, bp)


def _build_builder_facts(bp: Blueprint) -> tuple[tuple[str, ...], dict[str, list[tuple[str, str]]]]:
    return tuple(e.name for e in bp.entities), _find_capacity_invariants(bp)


def _find_capacity_invariants(bp: Blueprint) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for a in bp.actions:
        if a.kind == "book":
            res = bp.entity(bp.entity(a.entity).field(a.resource).ref or "")
            pair = (a.used, a.capacity)
            if pair not in out.setdefault(res.name, []):
                out[res.name].append(pair)
    return out


def entity_ids(rows: Rows, ent: Entity) -> Iterable[str]:
    return (r[ent.id_field] for r in rows.get(ent.name, []))
