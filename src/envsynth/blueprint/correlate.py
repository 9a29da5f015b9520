"""Correlated sample data: generators that depend on other fields of the same row, and composite keys.

A field's ``gen`` may say:

- ``after: <field>`` / ``before: <field>`` with ``by: [least, most]``: a date or datetime that
  far after (before) another date/datetime field of the row (``30min``, ``2h``, ``3d``, ``1w``);
- ``when: {field: value}`` (or a list of values): a value only on rows whose field has one of
  those values, NULL on the others (the field must be nullable);
- ``differs_from: <field>``: a value never equal to that field's in the same row (a choice
  list, another ref to the same table...);
- ``otherwise: <value>`` (with ``when``): the value on the other rows instead of NULL (a balance
  of 0 on credit cards);
- ``compute: <expression>``: a number worked out from the row's numeric fields (``+ - * /``,
  parentheses, numbers, ``round(x, n)``, ``min``, ``max``); money is rounded to cents;
- ``not_before: [<field> | <ref>.<field>]``: a date or datetime never before another of the row's
  (``placed_at``) or of the row a ref points to (``customer_id.joined_on``); the state builder
  moves an earlier draw to between that date and the generator's latest;
- ``past_when: {field: values}`` / ``future_when: {field: values}``: a date or datetime before (after)
  the clock, noon on the reference day, on rows whose field has one of the values (a landed flight
  departed in the past, a scheduled one departs later); the state builder moves a draw on the wrong side;
- ``sum_of: <table>.<field>``: a number that is the sum of ``field`` over the rows of ``table``
  that refer to this row (an order's total of its lines), kept by the state builder as they are added.

An entity's ``at_most_one: [{per: [fields], where: {field: value}}]`` keeps at most one drawn
row per owner matching ``where`` (one active membership a member).

``when`` and ``differs_from`` combine with any kind of generator, or stand alone (the field
type's own values). An entity's ``unique: [[a, b]]`` lists composite keys no two rows share.

:func:`check_correlations` checks all of it when a blueprint is loaded (with unique fields
and keys that have fewer distinct values than the entity's ``rows``); :func:`derive` draws
a correlated value, :func:`holds` tells whether a row still honours one (the fixture solver
redraws those that a repair broke).
"""

from __future__ import annotations

import ast
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
    return g is not None and (
        g.after is not None or g.before is not None or g.when is not None or g.differs_from is not None or g.compute is not None
    )


def depends_on(f: FieldDef) -> list[str]:
    """The fields of the row a derived field's value depends on."""
    g = f.gen
    if g is None:
        return []
    out = [n for n in (g.after, g.before, g.differs_from) if n is not None]
    out += [n for n in g.not_before or () if "." not in n]
    return out + list(g.when or {}) + (expression_names(g.compute) if g.compute is not None else [])


# -- compute: arithmetic of the row's fields ----------------------------------------------

_BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b if b else 0.0,
}
_CALLS: dict[str, Any] = {"round": round, "min": min, "max": max}


def _parse_expression(text: str) -> ast.expr:
    """The syntax tree of a ``compute`` expression.

    Raises:
        ValueError: it is not arithmetic of names and numbers (``+ - * /``, ``round``, ``min``, ``max``).
    """
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise ValueError(f"compute: {text!r} is not an expression") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _CALLS or node.keywords:
                raise ValueError(f"compute: {text!r} calls something other than round(x, n), min or max")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise ValueError(f"compute: {text!r} uses an operator other than + - * /")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                raise ValueError(f"compute: {text!r} holds {node.value!r}, not a number")
        elif not isinstance(node, ast.Name | ast.UnaryOp | ast.USub | ast.UAdd | ast.Load | ast.operator):
            raise ValueError(f"compute: {text!r} holds {type(node).__name__}; use + - * /, numbers, fields, round, min, max")
    return tree


def expression_names(text: str) -> list[str]:
    """The fields a ``compute`` expression reads (empty when it does not parse)."""
    try:
        tree = _parse_expression(text)
    except ValueError:
        return []
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in calls))


def _evaluate(node: ast.expr, row: dict[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return row.get(node.id)
    if isinstance(node, ast.UnaryOp):
        v = _evaluate(node.operand, row)
        return None if v is None else -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _evaluate(node.left, row), _evaluate(node.right, row)
        return None if a is None or b is None else _BINOPS[type(node.op)](a, b)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [_evaluate(a, row) for a in node.args]
    return None if None in args else _CALLS[node.func.id](*args)


def compute(f: FieldDef, row: dict[str, Any]) -> Any:
    """The value of a ``compute`` field for ``row`` (None when a field it reads is NULL); money in cents,
    counts whole."""
    g = f.gen
    assert g is not None and g.compute is not None
    v = _evaluate(g.index.of(_tree, g), row)
    if v is None:
        return None
    if f.type in ("int", "quantity"):
        return round(v)
    return round(float(v), 2) if f.type == "money" else v


def _tree(g: Generator) -> ast.expr:
    return _parse_expression(g.compute or "")


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
        return g.otherwise
    if g.compute is not None:
        v = compute(f, row)
        return v if v is not None or f.nullable else 0
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
        return v == g.otherwise
    if g.when is not None and v is None:
        return False
    if g.compute is not None:
        want = compute(f, row)
        return v == want or (isinstance(v, int | float) and isinstance(want, int | float) and abs(v - want) < 0.005)
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
            if f.gen is not None and f.gen.not_before is not None:
                _check_not_before(bp, ent, f, f.gen.not_before, f"{path}.gen.not_before")
            for key in ("past_when", "future_when"):
                if f.gen is not None and getattr(f.gen, key) is not None:
                    _check_timed(ent, f, getattr(f.gen, key), f"{path}.gen.{key}", key)
            if f.gen is not None and f.gen.sum_of is not None:
                _check_sum_of(bp, ent, f, f.gen.sum_of, f"{path}.gen.sum_of")
            if f.unique and f.type not in ("id", "ref"):
                _check_supply(ent, [f], path, "unique")
        for k, rule in enumerate(ent.at_most_one):
            _check_one_rule(ent, rule, f"entities[{i}].at_most_one[{k}]")
        _check_cycles(ent, f"entities[{i}]")
        for k, key in enumerate(ent.unique):
            _check_supply(ent, [ent.field(n) for n in key], f"entities[{i}].unique[{k}]", "unique")


def _no_correlation_in_part(g: Generator, path: str) -> None:
    for key in ("after", "before", "when", "differs_from", "otherwise", "not_before", "compute", "sum_of", "past_when", "future_when"):
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
    if g.compute is not None:
        _check_compute(ent, f, g.compute, f"{path}.compute")
    if g.when is not None and not f.nullable and "otherwise" not in g.model_fields_set:
        raise BlueprintError(
            f"{path}.when", f"{ent.name}.{f.name} is NULL on rows that do not match when: make it nullable: true, or set otherwise"
        )
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


_NUMERIC = ("money", "int", "quantity", "float")


def _check_compute(ent: Entity, f: FieldDef, text: str, path: str) -> None:
    """``compute``: arithmetic of numeric fields of the row, on a numeric field."""
    if f.type not in _NUMERIC:
        raise BlueprintError(path, f"compute draws a number; {ent.name}.{f.name} is {f.type}")
    try:
        _parse_expression(text)
    except ValueError as exc:
        raise BlueprintError(path, str(exc)) from None
    for name in expression_names(text):
        other = _other(ent, f, name, path)
        if other.type not in _NUMERIC:
            raise BlueprintError(path, f"compute reads {ent.name}.{name}, a {other.type} field; it needs numbers")


def _check_not_before(bp: Blueprint, ent: Entity, f: FieldDef, anchors: list[str], path: str) -> None:
    """``not_before``: date/datetime fields of the row, or ``<ref>.<field>`` of the row a ref points to."""
    if f.type not in _TEMPORAL:
        raise BlueprintError(path, f"not_before is for date or datetime fields; {ent.name}.{f.name} is {f.type}")
    for a in anchors:
        if "." in a:
            ref, name = a.split(".", 1)
            via = _other(ent, f, ref, path)
            if via.type != "ref":
                raise BlueprintError(path, f"{a}: {ent.name}.{ref} is {via.type}, not a ref; write <ref field>.<field>")
            if not bp.has_entity(via.ref or ""):
                continue  # a table left out for a problem of its own (reported there) or one the ref's check names
            target = bp.entity(via.ref or "")
            if not target.has(name):
                raise BlueprintError(path, f"{a}: {target.name} has no field {name!r} (fields: {', '.join(x.name for x in target.fields)})")
            other = target.field(name)
        else:
            other = _other(ent, f, a, path)
        if other.type not in _TEMPORAL:
            raise BlueprintError(path, f"{a} is {other.type}; not_before needs date or datetime fields")


def _check_timed(ent: Entity, f: FieldDef, where: dict[str, Any], path: str, key: str) -> None:
    """``past_when`` / ``future_when``: on a date or datetime field, naming fields of the row and their values."""
    if f.type not in _TEMPORAL:
        raise BlueprintError(path, f"{key} is for date or datetime fields; {ent.name}.{f.name} is {f.type}")
    for name, want in where.items():
        other = _other(ent, f, name, f"{path}.{name}")
        bad = [v for v in _wanted(want) if (other.choices and v not in other.choices) or (other.type == "bool" and not isinstance(v, bool))]
        if bad:
            raise BlueprintError(f"{path}.{name}", f"{bad[0]!r} is not a value of {ent.name}.{name} ({other.choices or [True, False]})")


def timed_matches(where: dict[str, Any] | None, row: dict[str, Any]) -> bool:
    """Whether ``row`` is one of the rows a ``past_when`` / ``future_when`` names."""
    return where is not None and all(row.get(k) in _wanted(v) for k, v in where.items())


def _check_sum_of(bp: Blueprint, ent: Entity, f: FieldDef, spec: str, path: str) -> None:
    """``sum_of``: a numeric field of a table with a ref to this entity, on a numeric field."""
    table, name = spec.split(".", 1)
    known = [e.name for e in bp.entities]
    if table not in known:
        raise BlueprintError(path, f"{spec}: no entity {table!r} (entities: {', '.join(known)})")
    child = bp.entity(table)
    if not any(x.type == "ref" and x.ref == ent.name for x in child.fields):
        raise BlueprintError(path, f"{spec}: {table} has no ref to {ent.name}; sum_of adds up the rows that refer to this one")
    if not child.has(name) or child.field(name).type not in _NUMERIC or f.type not in _NUMERIC:
        raise BlueprintError(path, f"{spec}: sum_of adds a numeric field of {table} into a numeric field")


def _check_one_rule(ent: Entity, rule: Any, path: str) -> None:
    """``at_most_one``: ``per`` and ``where`` name fields, ``where`` values are values of their field and each
    ``where`` field has another value to give a second matching row."""
    for name in rule.per:
        if not ent.has(name):
            raise BlueprintError(f"{path}.per", f"{ent.name} has no field {name!r}")
    for name, want in rule.where.items():
        if not ent.has(name):
            raise BlueprintError(f"{path}.where", f"{ent.name} has no field {name!r}")
        other = ent.field(name)
        allowed = other.choices or ([True, False] if other.type == "bool" else None)
        if allowed is None:
            raise BlueprintError(f"{path}.where.{name}", f"{ent.name}.{name} is {other.type}; where needs an enum, state or bool field")
        bad = [v for v in _wanted(want) if v not in allowed or (other.type == "bool" and not isinstance(v, bool))]
        if bad:
            raise BlueprintError(f"{path}.where.{name}", f"{bad[0]!r} is not a value of {ent.name}.{name} ({allowed})")
        if not [v for v in allowed if v not in _wanted(want)]:
            raise BlueprintError(f"{path}.where.{name}", f"every value of {ent.name}.{name} matches; a second row has no other value")


def one_rule_values(ent: Entity, rule: Any, name: str) -> list[Any]:
    """The values of ``where`` field ``name`` a row may take instead when it would be a second match."""
    other = ent.field(name)
    allowed = other.choices or [True, False]
    wanted = _wanted(rule.where[name])
    g = other.gen
    drawn = finite_values(g, other) if g is not None and g.choice is not None else None
    return [v for v in (drawn or allowed) if v not in wanted] or [v for v in allowed if v not in wanted]


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
