"""Fixture synthesis: database rows and arguments that satisfy (or break) a tool's conditions.

The solver starts from a small random state, binds the tool's row aliases, then repairs
failing conditions one comparison at a time: it assigns a field of a bound row or a
parameter so that the comparison holds (``x >= e`` sets ``x`` to ``e`` or a bit more),
solving through ``+``/``-`` when the target sits inside arithmetic, rebinding an alias to
another row when an id must differ, and adding or removing rows for ``exists()``.
Breaking a condition (for negative cases) is the same machinery with the comparison
negated.
"""

from __future__ import annotations

import ast
import copy
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.correlate import derived_order
from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import Check, ParamSpec, ToolSpec
from envsynth.runtime import evaluate as E
from envsynth.runtime import toolkit as F
from envsynth.runtime.state import Rows, StateBuilder
from envsynth.testing import choose as C
from envsynth.testing import lists as L
from envsynth.testing import steer
from envsynth.testing.choose import Unsolvable  # re-exported: raised by the solver and steer
from envsynth.testing.toolview import tool_view


@lru_cache(maxsize=8192)
def _code(node: ast.expr) -> Any:
    """Compiled code of a (sub-)expression (a bounded memo per node object: parse() caches trees, and a
    key keeps its node alive, so it is never another node's)."""
    return compile(X.render(node, X.plain), "<condition>", "eval")


def _tree(check: Check) -> ast.expr:
    """The parsed condition of a check (kept on the check's index)."""
    return check.index.of(_parse, check)


def _parse(check: Check) -> ast.expr:
    return X.parse(check.check).tree


@dataclass
class Fixture:
    rows: Rows
    args: dict[str, Any]
    aliases: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    builder: StateBuilder | None = None
    helpers: tuple[str, dict[str, Any]] | None = field(default=None, repr=False, compare=False)  # see _eval_ns

    def call_args(self) -> dict[str, Any]:
        """Arguments as an agent would send them (unset optional ones left out)."""
        return {k: v for k, v in self.args.items() if v is not None}

    def clone(self) -> Fixture:
        rows = copy.deepcopy(self.rows)
        fx = Fixture(rows=rows, args=dict(self.args), builder=self.builder)
        return fx


def _eval_ns(fx: Fixture, now: str, tables: dict[str, Any] | None = None) -> dict[str, Any]:
    """Names a condition sees: arguments, aliases, then the helper functions (made once per fixture and clock)."""
    if fx.helpers is None or fx.helpers[0] != now:
        fx.helpers = (now, E.row_functions(fx.rows, now, tables))  # fx.rows is changed in place, never replaced
    return {**fx.args, **fx.aliases, **fx.helpers[1]}


class Solver:
    """Builds fixtures for one tool of one app."""

    def __init__(self, bp: Blueprint, spec: ToolSpec, order: list[Any], now: str, seed: int, rows_per_entity: int = 4) -> None:
        self.bp = bp
        self.spec = spec
        self.order = order
        self.now = now
        self.seed = seed
        self.rows_per_entity = rows_per_entity
        self.tool = tool_view(bp, spec)
        self._rng: random.Random | None = None

    @property
    def rng(self) -> random.Random:
        """The solver's own random stream (seeded with ``seed`` on first use)."""
        if self._rng is None:
            self._rng = random.Random(self.seed)
        return self._rng

    # -- construction ----------------------------------------------------------
    def base(self, mode: str, attempt: int = 0) -> Fixture:
        """A random fixture: small state, arguments drawn, aliases bound (conditions not yet solved)."""
        builder = StateBuilder(self.bp, self.seed * 1009 + attempt, self.order)
        builder.fill({e.name: max(self.rows_per_entity, 2) for e in self.bp.entities})
        return self._arguments(builder, mode, {})

    def on_rows(self, rows: Rows, fixed: dict[str, Any], mode: str, attempt: int = 0, pool: Rows | None = None) -> Fixture:
        """A fixture over a copy of given rows, with some arguments fixed in advance.

        ``mode`` is ``all`` (every optional parameter given), ``required`` (none) or
        ``some`` (a random subset; an update gets at least one field). ``pool``: pre-drawn
        rows whose plain values new rows and non-unique field parameters take (see
        :meth:`StateBuilder.use_pool`) instead of drawing them with Faker.
        """
        builder = StateBuilder(self.bp, self.seed * 1009 + attempt, self.order, {k: list(map(dict, v)) for k, v in rows.items()})
        if pool is not None:
            builder.use_pool(pool)
        return self._arguments(builder, mode, fixed)

    def _arguments(self, builder: StateBuilder, mode: str, fixed: dict[str, Any]) -> Fixture:
        fx = Fixture(rows=builder.rows, args={}, builder=builder)
        args = fx.args
        rng = builder.rng
        tool = self.tool
        used: dict[str, set[str]] = {}
        target = self._query_target(fx, rng)
        chosen: set[str] = set()  # the optional parameters given, in mode "some"
        if mode == "some":
            optional = tool.optional
            chosen = {n for n in optional if rng.random() < 0.5}
            if self.spec.kind == "update" and not chosen and optional:
                chosen = {rng.choice(optional)}
        for p, name, required in tool.params:
            b = tool.by_param.get(name)
            if name in fixed:
                args[name] = fixed[name]
                if b is not None:
                    used.setdefault(b[0], set()).add(fixed[name])
                continue
            if not required and (mode == "required" or (mode == "some" and name not in chosen)):
                args[name] = None
                continue
            if b is not None:
                entity, key = b
                table = fx.rows[entity]
                if not table:  # nothing to bind: the exists check will fail and the caller tries again
                    args[name] = None
                    continue
                taken = used.setdefault(entity, set())
                free = [r for r in table if r[key] not in taken] or table
                row = rng.choice(free)
                taken.add(row[key])
                args[name] = row[key]
            else:
                args[name] = self.draw_param(p, rng, builder, target, args)
        self.rebind(fx)
        return fx

    def _query_target(self, fx: Fixture, rng: random.Random) -> dict[str, Any] | None:
        q = self.spec.query
        if q is None or q.op == "get" or not fx.rows.get(q.entity):
            return None
        return rng.choice(fx.rows[q.entity])

    def draw_param(
        self, p: ParamSpec, rng: random.Random, builder: StateBuilder, target: dict[str, Any] | None, drawn: dict[str, Any] | None = None
    ) -> Any:
        """A valid value for a non-binding parameter (matching the query target for filters; ``drawn``: the
        arguments drawn so far, so that an email is the person's whose name was drawn)."""
        if target is not None:
            flt = self.tool.filters.get(p.name)
            if flt is not None:
                return C.filter_value(flt, target, rng)
        if p.name == "limit":
            return 50
        if p.name == "offset":
            return 0
        if p.type == "array" and (p.ref is not None or p.item_fields is not None):
            return L.draw_list(p, rng, builder, self.bp)
        if p.type == "array":
            return rng.sample(p.items_enum or ["x"], k=1)
        if p.enum:
            return rng.choice(p.enum)
        f = self._field_of(p)
        if p.type in ("integer", "number"):
            return C.draw_number(p, rng)
        if p.type == "boolean":
            return rng.random() < 0.5
        if f is not None:
            return self._draw_field(p, f, rng, builder, drawn)
        return builder.values.value(FieldDef(name="x", type=p.semantic if p.semantic not in ("int", "float", "bool") else "string"))  # type: ignore[arg-type]

    def _draw_field(self, p: ParamSpec, f: FieldDef, rng: random.Random, builder: StateBuilder, drawn: dict[str, Any] | None = None) -> Any:
        """A value of the field a parameter stands for: from the builder's pool when it has one, else drawn
        (an email from the name drawn for the same row: a person registers their own address; a user's name is a
        shared person's whom the state does not hold yet, :meth:`ValueMaker.user_name`)."""
        table = (p.field or "").split(".")[0]
        shared = builder.values.shares(f)  # a user's name, email or phone: a person no row of the state is yet
        source = builder.pool.get(table) if builder.pool and not f.unique and not shared else None
        if source and derived_order(self.bp.entity(table)):  # correlated fields: all from one pool row
            v = builder.donor(table).get(f.name)
        else:
            v = rng.choice(source).get(f.name) if source else None
        if v is not None:
            return v
        return builder.values.value(f, self._same_row(table, drawn) if (f.type == "email" or shared) and drawn else None)

    def _same_row(self, table: str, drawn: dict[str, Any]) -> dict[str, Any]:
        """The arguments drawn so far that stand for fields of ``table``, by field name."""
        prefix = table + "."
        return {
            q.field[len(prefix) :]: drawn[name]
            for q, name, _ in self.tool.params
            if q.field and q.field.startswith(prefix) and drawn.get(name) is not None
        }

    def _field_of(self, p: ParamSpec) -> FieldDef | None:
        """The entity field a parameter stands for, unless an id or reference (memoised per parameter object)."""
        hit = self.tool.fields.get(p.name)
        if hit is not None and hit[0] is p:
            return hit[1]
        if not p.field:
            return None
        ent, fname = p.field.split(".")
        e = self.bp.entity(ent)
        f = e.field(fname)
        out = None if f.type in ("id", "ref") else f
        self.tool.fields[p.name] = (p, out)
        return out

    def rebind(self, fx: Fixture) -> None:
        """Recompute alias -> row from the current arguments and rows."""
        fx.aliases = aliases = {}
        args, rows = fx.args, fx.rows
        for alias, entity, key_field, param, src_alias, fname in self.tool.binds:
            if param is not None:
                key = args.get(param)
            else:
                src = aliases.get(src_alias)
                key = src.get(fname) if src else None
            row = None
            if key is not None:
                for r in rows[entity]:
                    if r[key_field] == key:
                        row = r
                        break
            aliases[alias] = row
        for alias, entity, key_field, param, item in self.tool.many:
            aliases[alias] = L.rows_of(rows[entity], key_field, args.get(param), item)

    # -- evaluation ------------------------------------------------------------
    def holds(self, fx: Fixture, check: Check | ast.expr) -> bool:
        node = _tree(check) if isinstance(check, Check) else check
        try:
            return bool(E.evaluate(_code(node), _eval_ns(fx, self.now, self.bp.tables)))
        except E.EVALUATION_ERRORS:
            return False

    def value(self, fx: Fixture, node: ast.expr) -> Any:
        return E.evaluate(_code(node), _eval_ns(fx, self.now, self.bp.tables))

    # -- solving -----------------------------------------------------------------
    def satisfy(self, fx: Fixture, checks: list[Check], rounds: int = 12) -> bool:
        """Repair ``fx`` until every check holds (in order); False when stuck."""
        for _ in range(rounds):
            failing = self._failing(fx, checks)
            if failing is None:
                return True
            try:
                self.make(fx, _tree(failing), True)
            except Unsolvable:
                return False
            self.rebind(fx)
        return self._failing(fx, checks) is None

    def _failing(self, fx: Fixture, checks: list[Check]) -> Check | None:
        """The first check that does not hold (like :meth:`holds`; evaluating never changes the namespace)."""
        ns = _eval_ns(fx, self.now, self.bp.tables)
        for c in checks:
            node = _tree(c)
            try:
                if E.evaluate(_code(node), ns):
                    continue
            except E.EVALUATION_ERRORS:
                pass
            return c
        return None

    def make(self, fx: Fixture, node: ast.expr, want: bool) -> None:
        """Change ``fx`` so that ``node`` evaluates to ``want`` (best effort)."""
        if self.holds(fx, node) == want:
            return
        rng = self.rng
        if isinstance(node, ast.BoolOp):
            conj = isinstance(node.op, ast.And) == want  # all parts must become `want`
            parts = list(node.values)
            if conj:
                for part in parts:
                    self.make(fx, part, want)
                    self.rebind(fx)
                return
            rng.shuffle(parts)
            for part in parts:
                try:
                    self.make(fx, part, want)
                    self.rebind(fx)
                    if self.holds(fx, node) == want:
                        return
                except Unsolvable:
                    continue
            raise Unsolvable(X.describe(node))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.make(fx, node.operand, not want)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0]) if want else C.NEGATE[type(node.ops[0])]
            return self._compare(fx, node.left, op, node.comparators[0])
        if isinstance(node, ast.Compare):  # a < b < c: each pair
            sides = [node.left, *node.comparators]
            pairs = [ast.Compare(left=a, ops=[o], comparators=[b]) for a, o, b in zip(sides, node.ops, sides[1:])]
            return self.make(fx, ast.BoolOp(op=ast.And(), values=pairs), want)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("exists", "any", "all"):
            return self._exists(fx, node, want)
        raise Unsolvable(f"cannot steer {X.describe(node)}")

    def _compare(self, fx: Fixture, left: ast.expr, op: type, right: ast.expr) -> None:
        attempts = []
        if self._assignable(left):
            attempts.append((left, op, right))
        if self._assignable(right) and op in C.MIRROR:
            attempts.append((right, C.MIRROR[op], left))
        elif self._assignable(right) and op in (ast.Eq, ast.NotEq):
            attempts.append((right, op, left))
        if isinstance(left, ast.BinOp):
            attempts.append((left, op, right))
        why = ""
        for target, o, other in attempts:
            try:
                self._solve(fx, target, o, self.value(fx, other))
                return
            except Unsolvable as exc:
                why = f" ({exc})"
                continue
            except E.EVALUATION_ERRORS as exc:
                why = f" ({type(exc).__name__}: {exc})"
                continue
        raise Unsolvable(f"cannot make {X.describe(left)} {op.__name__} {X.describe(right)}{why}")

    def _assignable(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return node.value.id in self.tool.aliases
        if isinstance(node, ast.Name):
            return node.id in self.tool.names
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
            return self._assignable(node.left) or self._assignable(node.right)
        return steer.call_name(node) in steer.STEERED_CALLS

    def _solve(self, fx: Fixture, target: ast.expr, op: type, v: Any) -> None:
        if isinstance(target, ast.BinOp) and isinstance(target.op, ast.Mult | ast.Div):
            return steer.solve_scaled(self, fx, target, op, v)
        if isinstance(target, ast.BinOp) and isinstance(target.op, ast.Add | ast.Sub):
            return self._solve_shift(fx, target, op, v)
        if isinstance(target, ast.Call):
            return steer.solve_call(self, fx, target, op, v)
        if isinstance(target, ast.Attribute):
            return self._solve_field(fx, target, op, v)
        if isinstance(target, ast.Name):
            return self._solve_param(fx, target, op, v)
        raise Unsolvable(f"{X.describe(target)} is not a parameter, a field of a bound row or a form the solver steers")

    def _solve_shift(self, fx: Fixture, target: ast.BinOp, op: type, v: Any) -> None:
        """Solve ``a + b <op> v`` or ``a - b <op> v`` through the side that can change (dates move by durations)."""
        a, b = target.left, target.right
        if isinstance(target.op, ast.Add):  # date_add/date_sub: + and - that also move dates by durations
            if self._assignable(a):
                return self._solve(fx, a, op, F.date_sub(v, self.value(fx, b)))
            if self._assignable(b):
                return self._solve(fx, b, op, F.date_sub(v, self.value(fx, a)))
        else:
            if self._assignable(a):
                return self._solve(fx, a, op, F.date_add(v, self.value(fx, b)))
            if self._assignable(b):
                return self._solve(fx, b, C.MIRROR.get(op, op), F.date_sub(self.value(fx, a), v))
        raise Unsolvable(f"{X.describe(target)} has no parameter or field of a bound row to change")

    def _solve_field(self, fx: Fixture, target: ast.Attribute, op: type, v: Any) -> None:
        """Assign a field of a bound row (an id by rebinding the alias, a reference to a fitting row's id)."""
        alias = target.value.id  # type: ignore[attr-defined]
        row = fx.aliases.get(alias)
        if row is None:
            raise Unsolvable(f"{alias} is not bound")
        b = self.spec.binding(alias)
        ent = self.bp.entity(b.entity)
        f = ent.field(target.attr)
        if f.type == "id":
            return self._rebind_alias(fx, alias, op, v)
        if f.type == "ref" and op in (ast.Eq, ast.NotEq, ast.In, ast.NotIn):
            target_ent = self.bp.entity(f.ref or "")
            ids = [r[target_ent.id_field] for r in fx.rows.get(target_ent.name, []) if C.compare(op, r[target_ent.id_field], v)]
            if not ids:
                raise Unsolvable(f"no {target_ent.name} id fits")
            row[f.name] = self.rng.choice(ids)
            return None
        if op is ast.IsNot and row.get(f.name) is None and fx.builder is not None:
            row[f.name] = fx.builder.values.value(f, row) if f.type != "ref" else self._any_id(fx, f)
            return None
        row[f.name] = self._pick(op, v, f, None, row.get(f.name))
        if fx.builder is not None:  # fields drawn from this one follow it (a delivery date only on delivered orders)
            fx.builder.rederive(ent, row, f.name)
        return None

    def _solve_param(self, fx: Fixture, target: ast.Name, op: type, v: Any) -> None:
        """Assign a parameter (one that loads a binding by rebinding its alias to a fitting row)."""
        p = self.spec.param(target.id)
        if any(b.param == p.name for b in self.spec.bindings):
            b = next(b for b in self.spec.bindings if b.param == p.name)
            if op is ast.Is:
                fx.args[p.name] = None
                self.rebind(fx)
                return None
            return self._rebind_alias(fx, b.alias, ast.NotEq if op is ast.IsNot else op, v)
        if op is ast.IsNot and fx.args.get(p.name) is None and fx.builder is not None:
            fx.args[p.name] = self.draw_param(p, self.rng, fx.builder, None)
            return None
        fx.args[p.name] = self._pick(op, v, self._field_of(p), p, fx.args.get(p.name))
        return None

    def _any_id(self, fx: Fixture, f: FieldDef) -> Any:
        target = self.bp.entity(f.ref or "")
        rows = fx.rows.get(target.name) or []
        if not rows:
            raise Unsolvable(f"no {target.name} rows")
        return self.rng.choice(rows)[target.id_field]

    def _rebind_alias(self, fx: Fixture, alias: str, op: type, v: Any) -> None:
        b = self.spec.binding(alias)
        candidates = [r for r in fx.rows[b.entity] if C.compare(op, r[b.key], v)]
        if not candidates:
            raise Unsolvable(f"no {b.entity} row fits")
        row = self.rng.choice(candidates)
        if b.param is not None:
            fx.args[b.param] = row[b.key]
        else:
            src_alias, fname = (b.via or "").split(".", 1)
            src = fx.aliases.get(src_alias)
            if src is None:
                raise Unsolvable("via source unbound")
            src[fname] = row[b.key]
        self.rebind(fx)

    def _pick(self, op: type, v: Any, f: FieldDef | None, p: ParamSpec | None, current: Any) -> Any:
        return C.pick(self.rng, op, v, f, p, current)

    def _exists(self, fx: Fixture, node: ast.Call, want: bool) -> None:
        if want or steer.call_name(node) == "all":
            return steer.make_rows(self, fx, node, want)
        # make it false: change a parameter that the filter uses, else drop the matching rows
        for kw in node.keywords:
            if isinstance(kw.value, ast.Name) and not any(b.param == kw.value.id for b in self.spec.bindings):
                p = self.spec.param(kw.value.id)
                assert fx.builder is not None
                for _ in range(20):
                    fx.args[p.name] = self.draw_param(p, self.rng, fx.builder, None)
                    if not self.holds(fx, node):
                        return
        steer.make_rows(self, fx, node, want)

    def _drop(self, fx: Fixture, table: str, row: dict[str, Any]) -> None:
        ent = self.bp.entity(table)
        key = row[ent.id_field]
        fx.rows[table] = [r for r in fx.rows[table] if r is not row]
        bound = {id(r) for r in fx.aliases.values() if r is not None}
        for other in self.bp.entities:
            for f in other.fields:
                if f.type == "ref" and f.ref == table:
                    for child in [r for r in fx.rows[other.name] if r.get(f.name) == key]:
                        if id(child) in bound:
                            raise Unsolvable("would drop a bound row")
                        if f.nullable:
                            child[f.name] = None
                        else:
                            self._drop(fx, other.name, child)
