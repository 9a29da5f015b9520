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

import sqlite3
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel

from envsynth.blueprint import expr as X
from envsynth.blueprint.spec import Check, ParamSpec, ToolSpec
from envsynth.runtime import evaluate as E
from envsynth.runtime.app import App
from envsynth.runtime.episode import FAILURE, REJECTION, SUCCESS
from envsynth.runtime.state import Rows, diff_rows, read_rows, rows_to_bytes_fast
from envsynth.testing import each as EACH
from envsynth.testing import lists as L
from envsynth.testing.expected import change_problems, post_problems, query_problems
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
            problems += change_problems(self.bp, self.spec, self.app.now, fx, before, after)
            problems += post_problems(self.bp, self.spec, self.app.now, fx, args, before, after, res.data)
            problems += query_problems(self.bp, self.spec, fx, args, before, res.data)
        self.record(case, "positive", SUCCESS, res.outcome, problems, args)

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


def test_app(app: App, seed: int = 0) -> TestReport:
    """Run the procedural tests of every tool of ``app``."""
    verdicts: list[Verdict] = []
    for i, spec in enumerate(app.specs):
        verdicts += ToolTester(app, spec, seed * 7919 + i).run()
    return TestReport(app=app.name, verdicts=verdicts)


test_app.__test__ = False  # type: ignore[attr-defined]  # not a pytest test
