"""Correlated sample data: generators that depend on other fields of the same row, and composite keys.

A field's ``gen`` may say:

- ``after: <field>`` / ``before: <field>`` with ``by: [least, most]``: a date or datetime that
  far after (before) another date/datetime field of the row (``30min``, ``2h``, ``3d``, ``1w``);
- ``when: {field: value}`` (or a list of values): a value only on rows whose field has one of
  those values, NULL on the others (the field must be nullable);
- ``differs_from: <field>``: a value never equal to that field's in the same row (a choice
  list, another ref to the same table...).

``when`` and ``differs_from`` combine with any kind of generator, or stand alone (the field
type's own values). An entity's ``unique: [[a, b]]`` lists composite keys no two rows share.

:func:`check_correlations` checks all of it when a blueprint is loaded (with unique fields
and keys that have fewer distinct values than the entity's ``rows``); :func:`derive` draws
a correlated value, :func:`holds` tells whether a row still honours one (the fixture solver
redraws those that a repair broke).
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from typing import TYPE_CHECKING, Any

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Blueprint, Entity, FieldDef, Generator
from envsynth.blueprint.spec import Check, Effect

if TYPE_CHECKING:
    from envsynth.blueprint.values import ValueMaker

_DURATION = re.compile(r"^(\d+)\s*(min|h|d|w)$")
_MINUTES = {"min": 1, "h": 60, "d": 1440, "w": 10080}
FINITE_LIMIT = 100_000
"""Generators with more distinct values than this count as unbounded."""
_TEMPORAL = ("date", "datetime")


def duration_minutes(spec: str) -> int:
    """``30min``, ``2h``, ``3d``, ``1w`` as minutes.

    Raises:
        ValueError: for anything else.
    """
    m = _DURATION.match(str(spec).strip())
    if not m:
        raise ValueError(f"bad distance {spec!r}; use a whole number and min, h, d or w: 30min, 2h, 3d, 1w")
    return int(m.group(1)) * _MINUTES[m.group(2)]


def is_derived(f: FieldDef) -> bool:
    """Whether a field's value depends on other fields of its row."""
    g = f.gen
    return g is not None and (g.after is not None or g.before is not None or g.when is not None or g.differs_from is not None)


def depends_on(f: FieldDef) -> list[str]:
    """The fields of the row a derived field's value depends on."""
    g = f.gen
    if g is None:
        return []
    out = [n for n in (g.after, g.before, g.differs_from) if n is not None]
    return out + list(g.when or {})


def derived_order(ent: Entity) -> list[FieldDef]:
    """The derived fields of ``ent``, each after the derived fields it depends on (kept on the entity's index)."""
    return ent.index.of(_derived_order, ent)


def _derived_order(ent: Entity) -> list[FieldDef]:
    todo = [f for f in ent.fields if is_derived(f)]
    names = {f.name for f in todo}
    done: list[FieldDef] = []
    while todo:
        ready = [f for f in todo if not (set(depends_on(f)) & names - {d.name for d in done})]
        if not ready:  # a cycle (check_correlations reports it)
            return done + todo
        done += ready
        todo = [f for f in todo if f not in ready]
    return done


def _wanted(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list | tuple) else [v]


def when_holds(g: Generator, row: dict[str, Any]) -> bool:
    """Whether ``row`` is one of the rows a ``when`` generator gives a value (always, without ``when``)."""
    if g.when is None:
        return True
    return all(row.get(k) in wanted for k, wanted in g.index.of(_when_pairs, g))


def _when_pairs(g: Generator) -> tuple[tuple[str, list[Any]], ...]:
    """A ``when`` generator's (field, the values it wants) pairs (kept on the generator's index)."""
    return tuple((k, _wanted(v)) for k, v in (g.when or {}).items())


def _parse_time(v: str) -> dt.datetime:
    return dt.datetime.fromisoformat(v if "T" in v else v + "T00:00:00")


def _shift(vm: ValueMaker, f: FieldDef, base: str) -> str:
    g = f.gen
    assert g is not None and g.by is not None
    lo, hi = sorted(duration_minutes(s) for s in g.by)
    sign = 1 if g.after is not None else -1
    if f.type == "date" or (lo % 1440 == 0 and hi % 1440 == 0):
        minutes = vm.rng.randint(lo // 1440, max(lo // 1440, hi // 1440)) * 1440
    else:
        step = 5 if lo % 5 == 0 and hi % 5 == 0 else 1
        minutes = vm.rng.randint(lo // step, hi // step) * step
    t = _parse_time(base) + sign * dt.timedelta(minutes=minutes)
    return t.date().isoformat() if f.type == "date" else t.strftime("%Y-%m-%dT%H:%M:00")


def derive(vm: ValueMaker, f: FieldDef, row: dict[str, Any], redraw: Any = None) -> Any:
    """A value of derived field ``f`` for ``row`` (the other fields drawn); ``redraw()`` draws a plain
    value when the field is not drawn by ``vm`` (a ref, which the state builder draws)."""
    g = f.gen
    assert g is not None
    if g.when is not None and not when_holds(g, row):
        return None
    anchor = g.after or g.before
    if anchor is not None:
        base = row.get(anchor)
        if base is None:
            return None if f.nullable else redraw() if redraw else vm.value(f, row)
        return _shift(vm, f, str(base))
    if redraw is None:
        v = vm.value(f, row)
    else:
        v = row.get(f.name)
        if v is None:
            v = redraw()
    if g.differs_from is not None:
        draw = redraw or (lambda: vm.value(f, row))
        for _ in range(50):
            if v != row.get(g.differs_from):
                break
            v = draw()
        else:
            raise ValueError(f"cannot draw a {f.name} different from {g.differs_from} ({row.get(g.differs_from)!r})")
    return v


def holds(f: FieldDef, row: dict[str, Any]) -> bool:
    """Whether ``row``'s value of derived field ``f`` honours its generator."""
    g = f.gen
    assert g is not None
    v = row.get(f.name)
    if not when_holds(g, row):
        return v is None
    if g.when is not None and v is None:
        return False
    anchor = g.after or g.before
    if anchor is not None and v is not None and row.get(anchor) is not None and g.by is not None:
        lo, hi = sorted(duration_minutes(s) for s in g.by)
        gap = (_parse_time(str(v)) - _parse_time(str(row[anchor]))).total_seconds() / 60
        gap = gap if g.after is not None else -gap
        slack = 1440 if f.type == "date" else 0
        return lo - slack <= gap <= hi + slack
    return g.differs_from is None or v != row.get(g.differs_from)


# -- distinct values ------------------------------------------------------------------


def finite_values(g: Generator | None, f: FieldDef) -> list[Any] | None:
    """Every value a field's generator (or its type) can draw, when there are at most FINITE_LIMIT; else None."""
    if g is None or g.kind is None:
        if f.choices:
            return list(dict.fromkeys(f.choices))
        if f.type == "bool":
            return [False, True]
        return None
    if g.choice is not None:
        return list(dict.fromkeys(g.choice))
    if g.range is not None and f.type in ("int", "quantity"):
        lo, hi = int(g.range[0]), int(g.range[1])
        return list(range(lo, hi + 1)) if hi - lo < FINITE_LIMIT else None
    if g.template is not None:
        return _template_values(g)
    return None


def few_values(f: FieldDef) -> list[Any] | None:
    """:func:`finite_values` of a field's own generator (worked out once, kept on the field's index)."""
    return f.index.of(_few_values, f)


def _few_values(f: FieldDef) -> list[Any] | None:
    return finite_values(f.gen, f)


def _template_values(g: Generator) -> list[Any] | None:
    names = list(g.parts)
    lists = []
    size = 1
    for n in names:
        part = g.parts[n]
        vals = finite_values(part, FieldDef(name="x", type="string")) if part.choice is not None or part.template is not None else None
        if vals is None:
            return None
        size *= len(vals)
        if size > FINITE_LIMIT:
            return None
        lists.append(vals)
    out = [g.template.format(**dict(zip(names, combo))) for combo in itertools.product(*lists)]  # type: ignore[union-attr]
    return list(dict.fromkeys(out))


def value_count(g: Generator | None, f: FieldDef) -> int | None:
    """How many distinct values a field can draw (None: unbounded, or more than FINITE_LIMIT)."""
    if g is not None and g.bothify is not None:
        n = 10 ** g.bothify.count("#") * 24 ** g.bothify.count("?")
        return n if n <= FINITE_LIMIT else None
    if g is not None and g.dates is not None:
        from envsynth.blueprint.values import TIMES_A_DAY, offset_days

        lo, hi = sorted(offset_days(d) for d in g.dates)
        n = (hi - lo + 1) * (TIMES_A_DAY if f.type == "datetime" else 1)
        return n if n <= FINITE_LIMIT else None
    values = finite_values(g, f)
    return None if values is None else len(values)


# -- load checks --------------------------------------------------------------------------


def check_correlations(bp: Blueprint) -> None:
    """Check every correlated generator, composite key and unique field's supply of values.

    Raises:
        BlueprintError: the first problem, located (``entities[1].fields[4].gen.after``).
    """
    for i, ent in enumerate(bp.entities):
        for j, f in enumerate(ent.fields):
            path = f"entities[{i}].fields[{j}]"
            if f.gen is not None:
                for name, part in f.gen.parts.items():
                    _no_correlation_in_part(part, f"{path}.gen.parts.{name}")
            if is_derived(f):
                _check_derived(ent, f, f"{path}.gen")
            if f.unique and f.type not in ("id", "ref"):
                _check_supply(ent, [f], path, "unique")
        _check_cycles(ent, f"entities[{i}]")
        for k, key in enumerate(ent.unique):
            _check_supply(ent, [ent.field(n) for n in key], f"entities[{i}].unique[{k}]", "unique")


def _no_correlation_in_part(g: Generator, path: str) -> None:
    for key in ("after", "before", "when", "differs_from"):
        if getattr(g, key) is not None:
            raise BlueprintError(f"{path}.{key}", f"{key} is for a field's own gen, not for a template part")


def _other(ent: Entity, f: FieldDef, name: str, path: str) -> FieldDef:
    if name == f.name:
        raise BlueprintError(path, f"{ent.name}.{f.name} cannot depend on itself")
    if not ent.has(name):
        raise BlueprintError(path, f"{ent.name} has no field {name!r} (fields: {', '.join(x.name for x in ent.fields)})")
    return ent.field(name)


def _check_derived(ent: Entity, f: FieldDef, path: str) -> None:
    g = f.gen
    assert g is not None
    if f.unique:
        raise BlueprintError(path, f"{ent.name}.{f.name} is unique; a value drawn from other fields of the row cannot be kept unique")
    if (g.after or g.before) is not None:
        _check_anchor(ent, f, g, path)
    for name, want in (g.when or {}).items():
        other = _other(ent, f, name, f"{path}.when.{name}")
        bad = [v for v in _wanted(want) if (other.choices and v not in other.choices) or (other.type == "bool" and not isinstance(v, bool))]
        if bad:
            allowed = other.choices or [True, False]
            raise BlueprintError(f"{path}.when.{name}", f"{bad[0]!r} is not a value of {ent.name}.{name} ({allowed})")
    if g.when is not None and not f.nullable:
        raise BlueprintError(f"{path}.when", f"{ent.name}.{f.name} is NULL on rows that do not match when: make it nullable: true")
    if g.differs_from is not None:
        _check_differs(ent, f, g.differs_from, f"{path}.differs_from")


def _check_anchor(ent: Entity, f: FieldDef, g: Generator, path: str) -> None:
    """``after``/``before`` (of ``f``'s generator ``g``): both fields dates or datetimes, ``by`` a valid range of durations."""
    anchor = g.after or g.before
    key = "after" if g.after is not None else "before"
    other = _other(ent, f, anchor, f"{path}.{key}")  # type: ignore[arg-type]
    if f.type not in _TEMPORAL or other.type not in _TEMPORAL:
        raise BlueprintError(f"{path}.{key}", f"{key} needs date or datetime fields; {f.name} is {f.type}, {anchor} is {other.type}")
    try:
        lo, hi = (duration_minutes(s) for s in g.by or ())
    except ValueError as exc:
        raise BlueprintError(f"{path}.by", str(exc)) from None
    if lo > hi:
        raise BlueprintError(f"{path}.by", f"[{g.by[0]}, {g.by[1]}]: the least distance is more than the most")  # type: ignore[index]


def _check_differs(ent: Entity, f: FieldDef, name: str, path: str) -> None:
    other = _other(ent, f, name, path)
    if other.type != f.type or other.ref != f.ref:
        raise BlueprintError(path, f"{ent.name}.{f.name} ({f.type}) and {name} ({other.type}) never hold the same value; drop differs_from")
    count = value_count(f.gen if f.gen is not None and f.gen.kind is not None else None, f)
    if count is not None and count < 2:
        raise BlueprintError(path, f"{ent.name}.{f.name} has only {count} possible value; differs_from needs two or more")


def _check_cycles(ent: Entity, path: str) -> None:
    derived = {f.name: depends_on(f) for f in ent.fields if is_derived(f)}
    for start in derived:
        seen, todo = set(), list(derived[start])
        while todo:
            n = todo.pop()
            if n == start:
                raise BlueprintError(path, f"{ent.name}.{start} depends on itself through after/before/when/differs_from")
            if n not in seen:
                seen.add(n)
                todo += derived.get(n, [])


def _check_supply(ent: Entity, fields: list[FieldDef], path: str, what: str) -> None:
    """A unique field or key needs at least ``rows`` distinct values (counted when they are few)."""
    total = 1
    for f in fields:
        if f.type in ("id", "ref"):
            return
        n = value_count(f.gen, f)
        if n is None:
            return
        total *= n + (1 if f.nullable else 0)
    if total < ent.rows:
        names = " + ".join(f.name for f in fields)
        raise BlueprintError(
            path,
            f"{ent.name}: {what} {names} has only {total} distinct value(s) for rows: {ent.rows}; "
            "add choices, combine it with another part in a template, or lower rows",
        )


# -- composite keys in actions ------------------------------------------------------------


def _key_message(ent: Entity, key: tuple[str, ...] | list[str], exprs: list[str]) -> str:
    noun = ent.name.replace("_", " ")
    parts = " and ".join(f"{k.replace('_', ' ')} '{{{e}}}'" for k, e in zip(key, exprs))
    return f"{'An' if noun[:1] in 'aeiou' else 'A'} {noun} with {parts} already exists."


def composite_unique_checks(entity: Any, effects: list[Effect], bound: set[str]) -> list[Check]:
    """Implicit pre-conditions ``unique:<a>+<b>`` for the rows ``effects`` insert or update in a table with
    composite keys: no other row may hold the same values of a key (the database refuses them too)."""
    out: list[Check] = []
    for ef in effects:
        ent = entity(ef.entity)
        for key in ent.unique:
            exprs = _key_exprs(ef, key, bound)
            if exprs is None:
                continue
            where = ", ".join(f"{k}=({e})" for k, e in zip(key, exprs))
            cond = f"not exists({ent.name}, {where})"
            if ef.op == "update":
                same = " and ".join(f"({e}) == {ef.alias}.{k}" for k, e in zip(key, exprs))
                cond = f"({same}) or {cond}"
            check = Check(id=f"unique:{'+'.join(key)}", check=cond, message=_key_message(ent, key, exprs), origin="implicit")
            if all(c.id != check.id for c in out):
                out.append(check)
    return out


def _key_exprs(ef: Effect, key: list[str], bound: set[str]) -> list[str] | None:
    """The values an effect gives the fields of ``key`` (None when it does not write the key)."""
    if ef.op == "insert":
        if any(ef.values.get(k) in (None, "new_id()") for k in key):
            return None
        return [ef.values[k] for k in key]
    if ef.op != "update" or ef.alias not in bound or not any(k in ef.values for k in key):
        return None
    out = []
    for k in key:
        if k not in ef.values:
            out.append(f"{ef.alias}.{k}")
        elif k in ef.when_given:
            out.append(f"{ef.values[k]} if {ef.when_given[k]} is not None else {ef.alias}.{k}")
        else:
            out.append(ef.values[k])
    return out
