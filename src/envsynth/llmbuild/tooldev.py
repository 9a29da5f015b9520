"""Custom tools: the code agent writes them, the test agent tests them, the debug agent repairs them.

For each custom tool of a design:

1. the code agent writes its body (checked statically before anything runs it: a body
   that imports outside the allow-list or touches files, the network or processes is
   sent back with the reasons);
2. the test agent writes cases with fixtures;
3. the tool is compiled into the app (its body as untrusted code, so it runs only in
   sandboxed workers) and runs the agent's cases plus the procedural cases derived from
   its pre- and post-conditions;
4. while some verdict is wrong, the debug agent gets the failing verdicts and repairs the
   code, the cases or both, up to ``rounds`` times. A tool that never passes is dropped
   with the reason recorded, never shipped.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from envsynth.blueprint.errors import BlueprintError
from envsynth.compiler.compile import compile_app
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.design import DomainDesign
from envsynth.llmbuild.prompts import prompt
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, StateBuilder, read_rows, rows_to_bytes
from envsynth.sandbox.checks import check_tool_code
from envsynth.testing.procedural import ToolTester

DEFAULT_ROUNDS = 3


def _body_problems(code: str) -> list[str]:
    """Why a body cannot be accepted: a syntax error, or what the static check rejects (parsed, never compiled here)."""
    return check_tool_code(code)


class CodeReply(BaseModel):
    """The code agent's reply: a function body that compiles and passes the static check."""

    model_config = ConfigDict(extra="ignore")

    code: str = Field(min_length=1)
    notes: str = ""

    @field_validator("code")
    @classmethod
    def _safe(cls, code: str) -> str:
        problems = _body_problems(code)
        if problems:
            raise ValueError("the code is rejected: " + "; ".join(problems))
        return code


class TestCase(BaseModel):
    """One unit test of a custom tool, with its fixture (partial rows per table)."""

    model_config = ConfigDict(extra="ignore")
    __test__ = False  # not a pytest class

    name: str
    fixture: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    arguments: dict[str, Any] = Field(default_factory=dict)
    expect: Literal["success", "rejection"]
    expect_result: dict[str, Any] | None = None
    expect_rows: dict[str, list[dict[str, Any]]] | None = None


class TestPlan(BaseModel):
    """The test agent's reply."""

    model_config = ConfigDict(extra="ignore")
    __test__ = False

    cases: list[TestCase] = Field(min_length=1)


class DebugReply(BaseModel):
    """The debug agent's reply: a diagnosis, and a new body and/or new cases (None: keep)."""

    model_config = ConfigDict(extra="ignore")

    diagnosis: str
    code: str | None = None
    cases: list[TestCase] | None = None

    @field_validator("code")
    @classmethod
    def _safe(cls, code: str | None) -> str | None:
        if code is not None:
            problems = _body_problems(code)
            if problems:
                raise ValueError("the code is rejected: " + "; ".join(problems))
        return code


@dataclass
class CaseVerdict:
    """One executed case: the agent's (``kind`` ``unit``) or a procedural one."""

    case: str
    kind: Literal["unit", "procedural"]
    ok: bool
    expected: str
    observed: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case,
            "kind": self.kind,
            "ok": self.ok,
            "expected": self.expected,
            "observed": self.observed,
            "detail": self.detail,
        }


@dataclass
class ToolOutcome:
    """What became of one custom tool.

    Attributes:
        name: the tool.
        code: the final body (None if the code agent never gave an acceptable one).
        cases: the final unit cases.
        passed: every verdict right in the last round (the tool ships).
        debug_rounds: debug agent calls made.
        verdicts: the last round's verdicts.
        dropped: why the tool was dropped (None if it ships).
        history: per round: failing verdicts and the debug agent's diagnosis.
    """

    name: str
    code: str | None = None
    cases: list[TestCase] = field(default_factory=list)
    passed: bool = False
    debug_rounds: int = 0
    verdicts: list[CaseVerdict] = field(default_factory=list)
    dropped: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "debug_rounds": self.debug_rounds,
            "cases": len(self.verdicts),
            "failed_cases": sum(not v.ok for v in self.verdicts),
            "dropped": self.dropped,
            "history": self.history,
        }


def tool_app(design: DomainDesign, name: str, code: str, seed: int = 0) -> App:
    """The app with the archetype tools and only the custom tool ``name`` (``code`` as its untrusted body)."""
    return compile_app(design.to_blueprint({name: code}, keep={name}), seed)


def fixture_rows(app: App, fixture: dict[str, list[dict[str, Any]]], seed: int = 0) -> Rows:
    """Complete a case's partial rows: missing columns generated, missing parents added.

    Raises:
        ValueError: an unknown table or column.
    """
    bp = app.blueprint
    names = {e.name: e for e in bp.entities}
    for table, rows in fixture.items():
        if table not in names:
            raise ValueError(f"fixture: unknown table {table!r} (tables: {', '.join(names)})")
        cols = {f.name for f in names[table].fields}
        for row in rows:
            extra = sorted(set(row) - cols)
            if extra:
                raise ValueError(f"fixture: table {table!r} has no column(s) {extra}")
    needed = set(fixture)
    for ent in reversed(app.order):  # parents of needed tables are needed
        if ent.name in needed:
            needed |= {f.ref for f in ent.fields if f.type == "ref" and f.ref and not f.nullable}
    builder = StateBuilder(bp, seed, app.order)
    for ent in app.order:
        given = fixture.get(ent.name, [])
        if not given and ent.name in needed:
            builder.add(ent)
        for row in given:
            if builder.add(ent, fixed=dict(row)) is None:
                raise ValueError(f"fixture: a {ent.name} row refers to a table with no rows")
    return builder.rows


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _subset(v, got[k]) for k, v in want.items())
    if isinstance(want, float) or isinstance(got, float):
        try:
            return abs(float(want) - float(got)) < 0.006
        except (TypeError, ValueError):
            return False
    return bool(want == got)


def run_case(app: App, tool: str, case: TestCase, seed: int = 0) -> CaseVerdict:
    """Run one unit case in a fresh episode (the tool body runs in a sandboxed worker)."""
    expected = "success" if case.expect == "success" else "anticipated_rejection"

    def verdict(ok: bool, observed: str, detail: str = "") -> CaseVerdict:
        return CaseVerdict(case.name, "unit", ok, expected, observed, detail[-1500:])

    try:
        rows = fixture_rows(app, case.fixture, seed)
        state = rows_to_bytes(app.schema, app.order, rows)
    except (ValueError, sqlite3.Error) as exc:
        return verdict(False, "fixture_error", f"the fixture cannot be loaded: {exc}")
    ep = app.episode(state, seed)
    try:
        res = ep.call(tool, case.arguments)
        if res.outcome == "unexpected_failure":
            trace = ep.log[-1].trace if ep.log else ""
            return verdict(False, res.outcome, trace or res.content)
        if res.outcome != expected:
            return verdict(False, res.outcome, res.content)
        if case.expect == "success":
            if case.expect_result is not None and not _subset(case.expect_result, res.data):
                return verdict(False, "wrong_result", f"expected the result to hold {case.expect_result}, got {res.data}")
            if case.expect_rows:
                after = read_rows(ep.db, app.blueprint, tables=list(case.expect_rows))
                for table, want_rows in case.expect_rows.items():
                    for want in want_rows:
                        if not any(_subset(want, r) for r in after.get(table, [])):
                            return verdict(False, "wrong_state", f"no {table} row matches {want} after the call")
        return verdict(True, res.outcome, res.content[:300])
    finally:
        ep.close()


def run_tool(app: App, tool: str, cases: list[TestCase], seed: int = 0) -> list[CaseVerdict]:
    """The tool's unit cases and its procedural cases (pre/post-conditions, missing rows...)."""
    out = [run_case(app, tool, c, seed) for c in cases]
    spec = app.spec_by_name[tool]
    for v in ToolTester(app, spec, seed).run():
        out.append(CaseVerdict(f"procedural: {v.case}", "procedural", v.ok, v.expected, v.observed, v.detail[-1500:]))
    return out


def _spec_text(design: DomainDesign, app: App, name: str) -> str:
    t = design.tool(name)
    spec = app.spec_by_name[name]
    bound = {b.alias: b.entity for b in spec.bindings}
    info = {
        "tool": t.model_dump(),
        "parameters": [p.model_dump(include={"name", "type", "required", "description"}) for p in spec.params],
        "bound_rows": bound,
        "checked_before_the_body": [c.check for c in spec.pre],
    }
    return f"SCHEMA (SQLite):\n{app.schema}\n\nTOOL:\n{json.dumps(info, indent=1, default=str)}"


def _cases_json(cases: list[TestCase]) -> str:
    return json.dumps([c.model_dump() for c in cases], indent=1, default=str)


async def develop_tool(
    client: BuilderClient, design: DomainDesign, name: str, *, rounds: int = DEFAULT_ROUNDS, seed: int = 0
) -> ToolOutcome:
    """Code, test and debug one custom tool (see the module docstring).

    Model failures of the code or test agent drop the tool with the reason; a
    :class:`~envsynth.llmbuild.client.BudgetExceeded` propagates (the build stops, resumably).
    """
    from envsynth.llmbuild.client import StructuredOutputError

    out = ToolOutcome(name)
    placeholder_app = tool_app(design, name, "return {}", seed)  # compiled, never run
    spec = _spec_text(design, placeholder_app, name)
    try:
        reply = await client.structured(
            "coder", [{"role": "system", "content": prompt("coder")}, {"role": "user", "content": spec}], CodeReply
        )
        plan = await client.structured(
            "tester", [{"role": "system", "content": prompt("tester")}, {"role": "user", "content": spec}], TestPlan
        )
    except StructuredOutputError as exc:
        out.dropped = f"{exc.role} gave no valid reply: {exc.errors[-1] if exc.errors else exc}"
        return out
    out.code, out.cases = reply.code, list(plan.cases)
    for attempt in range(rounds + 1):
        try:
            app = tool_app(design, name, out.code, seed)
        except BlueprintError as exc:  # cannot happen for a body that passed the checks; kept as data
            out.dropped = f"does not compile into the app: {exc}"
            return out
        out.verdicts = run_tool(app, name, out.cases, seed)
        failing = [v for v in out.verdicts if not v.ok]
        if not failing:
            out.passed = True
            return out
        if attempt == rounds:
            break
        report = json.dumps([v.to_dict() for v in failing[:12]], indent=1)
        ask = f"{spec}\n\nCURRENT CODE:\n{out.code}\n\nCASES:\n{_cases_json(out.cases)}\n\nFAILING VERDICTS:\n{report}"
        try:
            fix = await client.structured(
                "debugger", [{"role": "system", "content": prompt("debugger")}, {"role": "user", "content": ask}], DebugReply
            )
        except StructuredOutputError as exc:
            out.history.append({"failing": len(failing), "diagnosis": f"no valid reply: {exc.errors[-1] if exc.errors else exc}"})
            break
        out.debug_rounds += 1
        out.history.append(
            {"failing": len(failing), "diagnosis": fix.diagnosis, "changed": [k for k in ("code", "cases") if getattr(fix, k) is not None]}
        )
        if fix.code is not None:
            out.code = fix.code
        if fix.cases is not None:
            out.cases = list(fix.cases)
    failing = [v for v in out.verdicts if not v.ok]
    first = failing[0]
    out.dropped = (
        f"{len(failing)} of {len(out.verdicts)} cases still fail after {out.debug_rounds} debug round(s); "
        f"first: {first.case}: expected {first.expected}, got {first.observed}: {first.detail[-200:]}"
    )
    return out
