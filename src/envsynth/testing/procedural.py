"""Procedural testing (ScaleEnv): every tool is executed on synthesized fixtures and classified.

For each tool the tester builds
- positive cases (all pre-conditions hold): the call must be a Success, the state may
  change only where the tool's effects say, post-conditions must hold, and reads must
  return what an independent Python evaluation of the query returns;
- negative cases, one per pre-condition (only that condition broken, every earlier
  one holding), one per missing row, one per constrained parameter, plus a missing
  required argument and an unknown argument: each must be an Anticipated Rejection,
  raised by the expected check, with the state unchanged.

Each case ends as Success / Anticipated Rejection / Unexpected Failure; a verdict is
``ok`` when that outcome and the state checks are what the case expects.
"""

from __future__ import annotations

import ast
import sqlite3
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel

from envsynth.blueprint import expr as X
from envsynth.blueprint.spec import Check, ParamSpec, ToolSpec
from envsynth.runtime import evaluate as E
from envsynth.runtime import toolkit as F
from envsynth.runtime.app import App
from envsynth.runtime.episode import FAILURE, REJECTION, SUCCESS
from envsynth.runtime.state import Rows, diff_rows, read_rows, rows_to_bytes_fast
from envsynth.testing import each as EACH
from envsynth.testing import lists as L
from envsynth.testing.fixtures import Fixture, Solver, Unsolvable
from envsynth.testing.guard_cases import state_guard_cases

MAX_ATTEMPTS = 8


class Verdict(BaseModel):
    """One executed test case."""

    tool: str
    case: str
    kind: Literal["positive", "negative"]
    expected: Literal["success", "anticipated_rejection"]
    observed: Literal["success", "anticipated_rejection", "unexpected_failure", "not_constructed"]
    ok: bool
    detail: str = ""
    arguments: dict[str, Any] = {}


class TestReport(BaseModel):
    """All verdicts of an app, with counts."""

    app: str
    verdicts: list[Verdict]

    @property
    def failures(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.ok]

    @property
    def passed(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        c = Counter(v.observed for v in self.verdicts)
        return {
            "cases": len(self.verdicts),
            "positive": sum(v.kind == "positive" for v in self.verdicts),
            "negative": sum(v.kind == "negative" for v in self.verdicts),
            "success": c["success"],
            "anticipated_rejection": c["anticipated_rejection"],
            "unexpected_failure": c["unexpected_failure"],
            "not_constructed": c["not_constructed"],
            "failed": len(self.failures),
        }

    def by_tool(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for v in self.verdicts:
            d = out.setdefault(v.tool, {"positive": 0, "negative": 0, "failed": 0})
            d[v.kind] += 1
            d["failed"] += not v.ok
        return out

    def to_json(self) -> dict[str, Any]:
        return {"app": self.app, "summary": self.counts(), "verdicts": [v.model_dump(mode="json") for v in self.verdicts]}


def _post_hook(node: ast.AST) -> str | None:
    """Post-conditions: ``old(x)`` reads the state before the call (``_before``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "old":
        return X.render(node.args[0], _before_hook)
    return None


def _before_hook(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"_before[{node.value.id!r}][{node.attr!r}]"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
        table, sel, test = X.row_call(node, lambda n: X.render(n, _before_hook))
        if node.func.id == "all":
            return f"_all_before({table!r}, {sel}, {test})"
        return f"_{'exists' if node.func.id == 'any' else node.func.id}_before({table!r}, {sel})"
    return None


def _match(rows: list[dict[str, Any]], where: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in rows if F.row_matches(r, where)]


class ToolTester:
    """Runs the cases of one tool against an app."""

    def __init__(self, app: App, spec: ToolSpec, seed: int) -> None:
        self.app = app
        self.spec = spec
        self.bp = app.blueprint
        self.solver = Solver(self.bp, spec, app.order, app.now, seed)
        self.verdicts: list[Verdict] = []

    # -- running -----------------------------------------------------------------
    def run(self) -> list[Verdict]:
        self.positive("positive", "all")
        if any(not p.required for p in self.spec.params):
            self.positive("positive:required-only", "required")
        if self.spec.query is not None and self.spec.query.op == "search":
            self.positive("positive:paged", "all", paged=True)
        for check in self.spec.pre:
            self.negative_check(check)
        state_guard_cases(self)
        for p in self.spec.params:
            for case, value in _bad_values(p):
                self.negative_args(f"invalid:{p.name}:{case}", {p.name: value})
        required = [p for p in self.spec.params if p.required]
        if required:
            self.negative_args(f"missing:{required[0].name}", {required[0].name: _MISSING})
        self.negative_args("unknown_argument", {"not_a_parameter": 1})
        return self.verdicts

    def solved(self, mode: str, checks: list[Check] | None = None) -> Fixture | None:
        checks = self.spec.pre if checks is None else checks
        for attempt in range(MAX_ATTEMPTS):
            fx = self.solver.base(mode, attempt)
            if self.solver.satisfy(fx, checks) and self._materializes(fx):
                return fx
        return None

    def _selecting(self, mode: str) -> Fixture | None:
        """A fixture on which every for_each over rows selects at least one row (None if no attempt gives one)."""
        checks = [*self.spec.pre, *EACH.witnesses(self.spec)]
        for attempt in range(MAX_ATTEMPTS):
            fx = self.solver.base(mode, attempt)
            if self.solver.satisfy(fx, checks) and EACH.selects(self.bp, self.spec, fx, self.app.now) and self._materializes(fx):
                return fx
        return None

    def _materializes(self, fx: Fixture) -> bool:
        try:
            fx.__dict__["state"] = rows_to_bytes_fast(self.app.schema, self.app.order, fx.rows)
        except (sqlite3.IntegrityError, ValueError, OverflowError):
            return False
        return True

    def execute(self, fx: Fixture, args: dict[str, Any]) -> tuple[Any, Rows, Rows]:
        ep = self.app.episode(fx.__dict__["state"], seed=self.solver.seed)
        before = read_rows(ep.db, self.bp)
        res = ep.call(self.spec.name, args)
        if res.outcome == FAILURE and ep.log:
            res.content = ep.log[-1].trace or res.content
        after = read_rows(ep.db, self.bp)
        ep.close()
        return res, before, after

    def record(self, case: str, kind: str, expected: str, observed: str, problems: list[str], args: dict[str, Any]) -> None:
        ok = observed == expected and not problems
        self.verdicts.append(
            Verdict(
                tool=self.spec.name,
                case=case,
                kind=kind,  # type: ignore[arg-type]
                expected=expected,  # type: ignore[arg-type]
                observed=observed,  # type: ignore[arg-type]
                ok=ok,
                detail="; ".join(problems)[:2000],
                arguments={k: v for k, v in args.items() if k != "not_a_parameter" and v is not _MISSING},
            )
        )

    # -- positive ----------------------------------------------------------------
    def positive(self, case: str, mode: str, paged: bool = False) -> None:
        fx = (self._selecting(mode) if self.spec.each else None) or self.solved(mode)
        if fx is None:
            self.record(case, "positive", SUCCESS, "not_constructed", ["no fixture satisfies the pre-conditions"], {})
            return
        args = fx.call_args()
        if paged:
            args["limit"], args["offset"] = 1, 1
        res, before, after = self.execute(fx, args)
        problems: list[str] = []
        if res.outcome != SUCCESS:
            problems.append(f"{res.outcome}: {res.content[-800:]}")
        else:
            problems += self.check_changes(fx, before, after)
            problems += self.check_post(fx, args, before, after, res.data)
            problems += self.check_query(fx, args, before, res.data)
        self.record(case, "positive", SUCCESS, res.outcome, problems, args)

    def check_changes(self, fx: Fixture, before: Rows, after: Rows) -> list[str]:
        """Only the rows and fields the effects name may change."""
        diff = diff_rows(self.bp, before, after)
        spec = self.spec
        allowed_fields: dict[tuple[str, str], set[str]] = {}
        inserts: Counter[str] = Counter()
        deletes: dict[str, set[str]] = {}
        for ef in spec.effects:
            ent = self.bp.entity(ef.entity)
            if ef.op == "insert":
                inserts[ef.entity] += 1
                continue
            row = fx.aliases.get(ef.alias)
            if row is None:
                continue
            key = row[ent.id_field]
            if ef.op == "update":
                allowed_fields.setdefault((ef.entity, key), set()).update(ef.values)
            else:
                deletes.setdefault(ef.entity, set()).add(key)
                for child, ref in ef.cascade:
                    child_ent = self.bp.entity(child)
                    deletes.setdefault(child, set()).update(r[child_ent.id_field] for r in before[child] if r.get(ref) == key)
        each = self._each(fx, before, after, diff) if spec.each else EACH.EachExpectation()
        for (table, key), values in each.updates.items():
            allowed_fields.setdefault((table, key), set()).update(values)
        for table, wanted in each.inserts.items():
            inserts[table] += len(wanted)
        problems = []
        custom = spec.code is not None
        for table, d in diff.items():
            for key, cols in d.changed.items():
                ok_cols = set(spec.writes.get(table, [])) if custom else allowed_fields.get((table, key), set())
                bad = set(cols) - ok_cols
                if bad:
                    problems.append(f"unexpected change of {table} {key}: {sorted(bad)}")
            if custom:
                if d.added and table not in spec.creates:
                    problems.append(f"unexpected new {table} rows")
                if d.removed and table not in spec.deletes:
                    problems.append(f"unexpected removal of {table} rows")
                continue
            if len(d.added) != inserts.get(table, 0):
                problems.append(f"{len(d.added)} new {table} rows, expected {inserts.get(table, 0)}")
            if set(d.removed) != deletes.get(table, set()):
                problems.append(f"removed {table} rows {sorted(d.removed)}, expected {sorted(deletes.get(table, set()))}")
        for table, n in inserts.items():
            if table not in diff and n:
                problems.append(f"expected {n} new {table} row(s), none added")
        for table, keys in deletes.items():
            if keys and (table not in diff or set(diff[table].removed) != keys):
                if table not in diff:
                    problems.append(f"expected {table} rows {sorted(keys)} removed")
        added = {table: list(d.added.values()) for table, d in diff.items()}
        return problems + each.problems(self.bp, after, added)

    def _each(self, fx: Fixture, before: Rows, after: Rows, diff: Any) -> EACH.EachExpectation:
        """What the for_each effects must change, from the state before the call (``new``: the row the call inserted)."""
        ns: dict[str, Any] = {p.name: fx.args.get(p.name) for p in self.spec.params}
        ns.update(fx.aliases)
        main = next((ef for ef in self.spec.effects if ef.op == "insert" and ef.alias == "new"), None)
        added = list(diff[main.entity].added.values()) if main is not None and main.entity in diff else []
        ns["new"] = added[0] if added else None
        ns["_clock"] = self.app.now
        return EACH.expect(self.bp, self.spec, ns, before)

    def check_post(self, fx: Fixture, args: dict[str, Any], before: Rows, after: Rows, result: Any) -> list[str]:
        spec = self.spec
        if not spec.post:
            return []
        before_alias: dict[str, Any] = {}
        after_alias: dict[str, Any] = {}
        for b in spec.bindings:
            row = fx.aliases.get(b.alias)
            if row is None or b.many:  # the rows of a list of ids: as loaded
                before_alias[b.alias] = after_alias[b.alias] = row
                continue
            ent = self.bp.entity(b.entity)
            key = row[ent.id_field]
            before_alias[b.alias] = next((r for r in before[b.entity] if r[ent.id_field] == key), None)
            after_alias[b.alias] = next((r for r in after[b.entity] if r[ent.id_field] == key), None)
        diff = diff_rows(self.bp, before, after)
        for ef in spec.effects:
            if ef.op == "insert":
                added = list(diff.get(ef.entity).added.values()) if ef.entity in diff else []
                after_alias[ef.alias] = added[0] if len(added) == 1 else None
        ns: dict[str, Any] = {p.name: args.get(p.name) for p in spec.params}
        ns.update(after_alias)
        ns["result"] = result
        ns["_before"] = before_alias
        now = self.app.now
        ns.update(
            _now=lambda: now,
            _today=lambda: now[:10],
            _exists=lambda t, w: bool(_match(after[t], w)),
            _count=lambda t, w: len(_match(after[t], w)),
            _exists_before=lambda t, w: bool(_match(before[t], w)),
            _count_before=lambda t, w: len(_match(before[t], w)),
            _all=E.all_rows(after),
            _all_before=E.all_rows(before),
            _lookup=E.table_lookup(self.bp.tables),
        )
        problems = []
        for c in spec.post:
            code = compile(X.render(X.parse(c.check), _post_hook), "<post>", "eval")
            try:
                ok = E.evaluate(code, ns)
            except E.EVALUATION_ERRORS as exc:
                ok = False
                c = c.model_copy(update={"message": f"{c.message} ({type(exc).__name__}: {exc})"})
            if not ok:
                problems.append(f"post-condition {c.id} failed: {c.check}")
        return problems

    def check_query(self, fx: Fixture, args: dict[str, Any], before: Rows, result: Any) -> list[str]:
        q = self.spec.query
        if q is None:
            return []
        if q.op == "get":
            expected = fx.aliases.get(q.alias or "")
            ent = self.bp.entity(q.entity)
            ref = next((r for r in before[q.entity] if expected and r[ent.id_field] == expected[ent.id_field]), None)
            return [] if result == ref else [f"get returned {result!r}, expected {ref!r}"]
        rows = [r for r in before[q.entity] if _passes(r, q.filters, args)]
        if q.op == "search":
            ent = self.bp.entity(q.entity)
            rows.sort(key=lambda r: r[ent.id_field])
            rows.sort(key=lambda r: _sort_key(r.get(q.sort or ent.id_field)), reverse=q.descending)
            limit = args.get("limit", self.spec.param("limit").default)
            offset = args.get("offset", 0)
            want = {"total": len(rows), "items": rows[offset : offset + limit]}
            return (
                []
                if result == want
                else [
                    f"search returned total {result.get('total')} / {len(result.get('items', []))} items, expected {want['total']} / {len(want['items'])}"
                ]
            )
        want_val = _aggregate(q.agg or "count", q.field, q.group_by, rows)
        if not _close(result, want_val):
            return [f"aggregate returned {result!r}, expected {want_val!r}"]
        return []

    # -- negative ----------------------------------------------------------------
    def negative_check(self, check: Check) -> None:
        case = f"violate:{check.id}"
        idx = self.spec.pre.index(check)
        earlier = self.spec.pre[:idx]
        if check.id.startswith("exists:"):
            alias = check.id.split(":", 1)[1]
            b = self.spec.binding(alias)
            if b.param is None:
                return
            fx = self.solved("all")
            if fx is None:
                return
            args = fx.call_args()
            missing = self._missing_key(fx, b.entity, b.key)
            args[b.param] = missing if not b.many else L.with_missing(args.get(b.param) or [], missing, b.item)
            self._expect_rejection(case, fx, args, check.id)
            return
        why = _WhyNot()
        for attempt in range(MAX_ATTEMPTS):
            fx = self.solver.base("all", attempt)
            if not self.solver.satisfy(fx, self.spec.pre):
                why.note("base")
                continue
            try:
                self.solver.make(fx, X.parse(check.check).tree, False)
            except (Unsolvable, *E.EVALUATION_ERRORS) as exc:  # a value the condition cannot take: the reason is kept
                why.note("steer", f"{type(exc).__name__}: {exc}" if not isinstance(exc, Unsolvable) else str(exc))
                continue
            self.solver.rebind(fx)
            if self.solver.holds(fx, check):
                why.note("steer", "the change the solver made left it true")
                continue
            if not all(self.solver.holds(fx, c) for c in earlier):
                if not self.solver.satisfy(fx, earlier) or self.solver.holds(fx, check):
                    why.note("implied")
                    continue
            if not self._materializes(fx):
                why.note("constraint")
                continue
            self._expect_rejection(case, fx, fx.call_args(), check.id)
            return
        self.record(case, "negative", REJECTION, "not_constructed", [], {})
        self.verdicts[-1].ok = True
        self.verdicts[-1].detail = why.detail()

    def _missing_key(self, fx: Fixture, entity: str, key: str) -> Any:
        """A well-formed key value that no row of ``entity`` has."""
        ent = self.bp.entity(entity)
        taken = {r[key] for r in fx.rows[entity]}
        if key == ent.id_field:
            return f"{ent.prefix}_000000"
        assert fx.builder is not None
        for _ in range(50):
            v = fx.builder.values.value(ent.field(key))
            if v not in taken:
                return v
        raise RuntimeError(f"cannot draw an unused {entity}.{key}")

    def negative_args(self, case: str, override: dict[str, Any]) -> None:
        fx = self.solved("all")
        if fx is None:
            self.record(case, "negative", REJECTION, "not_constructed", ["no base fixture"], {})
            return
        args = fx.call_args()
        for k, v in override.items():
            if v is _MISSING:
                args.pop(k, None)
            elif callable(v):  # breaks the valid value (a list parameter's items)
                args[k] = v(args.get(k))
            else:
                args[k] = v
        self._expect_rejection(case, fx, args, "invalid_arguments")

    def _expect_rejection(self, case: str, fx: Fixture, args: dict[str, Any], code: str) -> None:
        res, before, after = self.execute(fx, args)
        problems = []
        if res.outcome == REJECTION and res.code != code and self.spec.code is None:
            problems.append(f"rejected by {res.code!r} ({res.content}), expected {code!r}")
        if res.outcome == SUCCESS:
            problems.append("the call succeeded: the check is missing")
        elif res.outcome == FAILURE:
            problems.append(res.content[-800:])
        if diff_rows(self.bp, before, after):
            problems.append("state changed")
        self.record(case, "negative", REJECTION, res.outcome, problems, args)


class _WhyNot:
    """Why no fixture broke a condition, from what happened in each attempt (the detail of a ``not_constructed``)."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.reason = ""

    def note(self, what: str, reason: str = "") -> None:
        self.seen[what] += 1
        if reason:
            self.reason = reason

    def detail(self) -> str:
        if self.seen["implied"]:
            return "no fixture breaks only this condition (it is implied by the others)"
        if self.seen["constraint"]:
            return "every fixture that breaks this condition also breaks a column constraint of the schema"
        if self.seen["steer"]:
            return f"the solver cannot make this condition false: {self.reason}"
        return "no fixture satisfies the pre-conditions before this one"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _bad_values(p: ParamSpec) -> list[tuple[str, Any]]:
    if p.type == "array" and (p.ref is not None or p.item_fields is not None):
        return L.bad_lists(p)  # type: ignore[return-value]
    out: list[tuple[str, Any]] = []
    if p.enum:
        out.append(("enum", "not_a_valid_value"))
    if p.items_enum:
        out.append(("enum", ["not_a_valid_value"]))
    if p.minimum is not None:
        out.append(("minimum", p.minimum - 1))
    if p.exclusive_minimum is not None:
        out.append(("exclusive_minimum", p.exclusive_minimum if p.type == "number" else int(p.exclusive_minimum)))
    if p.maximum is not None:
        out.append(("maximum", p.maximum + 1))
    if p.pattern is not None:
        out.append(("pattern", "not-a-date"))
    wrong = {"string": 12345, "integer": "three", "number": "3.5", "boolean": "yes", "array": "x"}[p.type]
    if p.required or p.constrained:
        out.append(("type", wrong))
    return out


def _passes(row: dict[str, Any], filters: list[Any], args: dict[str, Any]) -> bool:
    for f in filters:
        v = args.get(f.param)
        if v is None:
            continue
        x = row.get(f.field)
        if f.op == "eq" and x != v:
            return False
        if f.op == "contains" and (x is None or str(v).lower() not in str(x).lower()):
            return False
        if f.op == "gte" and (x is None or x < v):
            return False
        if f.op == "lte" and (x is None or x > v):
            return False
        if f.op == "in" and x not in v:
            return False
    return True


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, 0) if v is None else (1, v)


def _aggregate(op: str, field: str | None, group_by: str | None, rows: list[dict[str, Any]]) -> Any:
    def agg(rs: list[dict[str, Any]]) -> Any:
        vals = [r[field] for r in rs if field and r.get(field) is not None]
        if op == "count":
            return len(rs)
        if op == "sum":
            return round(float(sum(vals)), 2)
        if not vals:
            return None
        if op == "avg":
            return round(sum(vals) / len(vals), 2)
        return min(vals) if op == "min" else max(vals)

    if group_by:
        keys = sorted({r.get(group_by) for r in rows}, key=_sort_key)
        return {"groups": [{group_by: k, "value": agg([r for r in rows if r.get(group_by) == k])} for k in keys]}
    return {"value": agg(rows)}


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) < 0.005 + 1e-9 * abs(b)
    return a == b


def test_app(app: App, seed: int = 0) -> TestReport:
    """Run the procedural tests of every tool of ``app``."""
    verdicts: list[Verdict] = []
    for i, spec in enumerate(app.specs):
        verdicts += ToolTester(app, spec, seed * 7919 + i).run()
    return TestReport(app=app.name, verdicts=verdicts)


test_app.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
