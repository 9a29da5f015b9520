"""Custom tools: the code agent writes them, the test agent tests them, the debug agent repairs them.

For each custom tool of a design:

1. the code agent writes its body (checked statically before anything runs it: a body
   that imports outside the allow-list or touches files, the network or processes is
   sent back with the reasons);
2. the test agent writes cases with fixtures;
3. the tool is compiled into the app (its body as untrusted code, so it runs only in
   sandboxed workers) and runs the agent's cases plus the procedural cases derived from
   its pre- and post-conditions;
4. while some verdict is wrong, the debug agent gets the failing verdicts and its earlier
   rounds and repairs the code, the cases or both, up to ``rounds`` times. A case may be
   fixed, never dropped without a reason a rule accepts (:func:`merge_cases`); the
   procedural cases always run. A tool that never passes is dropped with the reason
   recorded, never shipped.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from envsynth.blueprint.codecheck import check_tool_code
from envsynth.blueprint.errors import BlueprintError
from envsynth.compiler.compile import compile_app
from envsynth.llm.types import Message
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.design import DomainDesign
from envsynth.llmbuild.prompts import MAX_PROMPT_CHARS, prompt
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, StateBuilder, read_rows, rows_to_bytes
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


class CaseDrop(BaseModel):
    """A unit case the debug agent asks to remove, and why."""

    model_config = ConfigDict(extra="ignore")

    case: str = Field(description="the name of the case")
    reason: str = Field(min_length=1, description="why the case is wrong and cannot be fixed")


class SpecAmendment(BaseModel):
    """A change of the tool's specification the debug agent proposes: the keys it changes (None: kept), and why."""

    model_config = ConfigDict(extra="ignore")

    reason: str = Field(min_length=1)
    pre: list[Any] | None = None
    post: list[Any] | None = None
    params: list[dict[str, Any]] | None = None
    returns: str | None = None

    def changes(self) -> dict[str, Any]:
        """The specification keys this amendment sets."""
        return {k: v for k, v in self.model_dump(exclude={"reason"}).items() if v is not None}


class DebugReply(BaseModel):
    """The debug agent's reply: a diagnosis, a new body and/or corrected cases (None: keep), cases to drop, an amendment."""

    model_config = ConfigDict(extra="ignore")

    diagnosis: str
    code: str | None = None
    cases: list[TestCase] | None = None
    drop: list[CaseDrop] = Field(default_factory=list)
    amend: Annotated[SpecAmendment | None, WithJsonSchema({"type": ["object", "null"]})] = None

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
        amendments: the specification changes the debug agent proposed, each ``accepted`` or ``refused`` with why.
    """

    name: str
    code: str | None = None
    cases: list[TestCase] = field(default_factory=list)
    passed: bool = False
    debug_rounds: int = 0
    verdicts: list[CaseVerdict] = field(default_factory=list)
    dropped: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    amendments: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "debug_rounds": self.debug_rounds,
            "cases": len(self.verdicts),
            "failed_cases": sum(not v.ok for v in self.verdicts),
            "dropped": self.dropped,
            "history": self.history,
            "amendments": self.amendments,
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


_VOLATILE = (
    (re.compile(r"\b0x[0-9a-fA-F]{6,}\b"), "0x..."),  # an object's address in a repr: another in every run
    (re.compile(r'File "/(?!sandbox/)[^"]*/(envsynth/[^"]+)"'), r'File "\1"'),  # a host path: the checkout's, not the file's
)
"""Parts of an error text that change from run to run or machine to machine, and what they become."""


def stable_detail(text: str, limit: int = 1500) -> str:
    """A verdict's detail without what changes between runs (addresses, host paths), its last ``limit`` characters.

    The detail goes into the debug agent's prompt, whose cache key must be the same when
    a rerun repeats the same case on the same code.
    """
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text[-limit:]


def run_case(app: App, tool: str, case: TestCase, seed: int = 0) -> CaseVerdict:
    """Run one unit case in a fresh episode (the tool body runs in a sandboxed worker)."""
    expected = "success" if case.expect == "success" else "anticipated_rejection"

    def verdict(ok: bool, observed: str, detail: str = "") -> CaseVerdict:
        return CaseVerdict(case.name, "unit", ok, expected, observed, stable_detail(detail))

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
        out.append(CaseVerdict(f"procedural: {v.case}", "procedural", v.ok, v.expected, v.observed, stable_detail(v.detail)))
    return out


def _spec_text(design: DomainDesign, app: App, name: str, schema: str | None = None) -> str:
    t = design.tool(name)
    spec = app.spec_by_name[name]
    bound = {b.alias: b.entity for b in spec.bindings}
    info = {
        "tool": t.model_dump(exclude_defaults=True),
        "parameters": [p.model_dump(include={"name", "type", "required", "description"}) for p in spec.params],
        "bound_rows": bound,
        "checked_before_the_body": [c.check for c in spec.pre],
    }
    clock = (
        f"REFERENCE DATE: {app.blueprint.reference_date} (the app's clock: now() is {app.now}, today() is {app.blueprint.reference_date})"
    )
    return f"SCHEMA (SQLite):\n{schema or app.schema}\n\n{clock}\n\nTOOL:\n{json.dumps(info, indent=1, default=str)}"


def tool_schema(design: DomainDesign, app: App, name: str) -> str:
    """The app's schema with only the tables tool ``name`` touches (its entity, bound rows, writes) and their parents."""
    t = design.tool(name)
    spec = app.spec_by_name[name]
    tables = {t.entity, *t.writes, *t.creates, *t.deletes, *(b.entity for b in spec.bindings)}
    for ent in app.blueprint.entities:
        if ent.name in set(tables):
            tables |= {f.ref for f in ent.fields if f.type == "ref" and f.ref}
    blocks = app.schema.split("\n\n")
    kept = [b for b in blocks if "CREATE TABLE" not in b or any(f'CREATE TABLE "{x}"' in b for x in tables)]
    others = sorted(e.name for e in app.blueprint.entities if e.name not in tables)
    note = f"-- {len(others)} other tables not shown: {', '.join(others)}" if others else ""
    return "\n\n".join([*kept, note] if note else kept)


def debug_spec(design: DomainDesign, app: App, name: str) -> str:
    """The tool's specification for the debug agent: the tables it touches only (room for the verdicts and earlier rounds).

    Built from ``app`` compiled with the design as it is now, so an accepted amendment shows.
    """
    return _spec_text(design, app, name, tool_schema(design, app, name))


def _fits(client: BuilderClient, messages: list[Message], schema: type[BaseModel]) -> bool:
    """Whether a request fits the client's prompt budget and :data:`~envsynth.llmbuild.prompts.MAX_PROMPT_CHARS`."""
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return chars <= MAX_PROMPT_CHARS and client.fits(messages, schema)


def _fitted_spec(client: BuilderClient, design: DomainDesign, app: App, name: str) -> str:
    """The tool's specification for the code and test agents: the whole schema if it fits, else the tool's tables."""
    for schema in (None, tool_schema(design, app, name)):
        spec = _spec_text(design, app, name, schema)
        if all(_fits(client, _author_request(r, spec), m) for r, m in _AUTHORS):
            break
    return spec


def _cases_json(cases: list[TestCase]) -> str:
    return json.dumps([c.model_dump() for c in cases], indent=1, default=str)


def _same_case(a: TestCase, b: TestCase) -> bool:
    return a.model_dump(exclude={"name"}) == b.model_dump(exclude={"name"})


def merge_cases(old: list[TestCase], fix: DebugReply, verdicts: list[CaseVerdict]) -> tuple[list[TestCase], list[str]]:
    """The unit cases after a debug reply, and a note for each change refused.

    A case may be fixed, never silently dropped: a case of the reply replaces the case of
    the same name and a new name is added; a case the reply leaves out (``"cases": []``
    leaves out all) is kept as it was. A case goes only when ``drop`` names it with a
    reason and a rule accepts it: its fixture cannot be loaded (its last verdict was
    ``fixture_error``), or it repeats another case that stays (same fixture, arguments
    and expectations). The procedural cases are not unit cases: they always run.
    """
    given = {c.name: c for c in fix.cases or []}
    drops = {d.case: d.reason for d in fix.drop}
    observed = {v.case: v.observed for v in verdicts if v.kind == "unit"}
    notes = [f"drop of {n!r} refused: there is no such case" for n in drops if n not in {c.name for c in old}]
    staying = [given.get(c.name, c) for c in old if c.name not in drops]
    staying += [c for name, c in given.items() if name not in {o.name for o in old} and name not in drops]
    kept_back = _kept_back(old, fix, given, drops, observed, staying, notes)
    order = {c.name: i for i, c in enumerate(old)}
    merged = sorted([*staying, *kept_back], key=lambda c: order.get(c.name, len(order)))
    return merged, notes


def _kept_back(
    old: list[TestCase],
    fix: DebugReply,
    given: dict[str, TestCase],
    drops: dict[str, str],
    observed: dict[str, str],
    staying: list[TestCase],
    notes: list[str],
) -> list[TestCase]:
    """The cases whose drop is refused (as the reply gives them, else as they were), noting each refusal and each case left out."""
    kept_back = []
    for c in old:
        if c.name not in drops:
            if fix.cases is not None and c.name not in given:
                notes.append(f"{c.name!r} was left out of your cases: kept (drop a case only in 'drop', with a reason)")
            continue
        if observed.get(c.name) == "fixture_error" or any(_same_case(c, o) for o in staying):
            continue
        notes.append(
            f"drop of {c.name!r} refused ({drops[c.name][:120]}): only a case whose fixture cannot be loaded, or a "
            "repeat of another case, may be dropped; fix the code or the case instead"
        )
        kept_back.append(given.get(c.name, c))
    return kept_back


def _check_text(rule: Any) -> str:
    """The condition of a rule as the designer writes it (a string, or ``{check: ...}``)."""
    return str(rule.get("check", "")) if isinstance(rule, dict) else str(rule)


_TRIVIAL = frozenset({"", "true", "1", "not false"})
"""Checks that always hold: a rule relaxed into one of these is a rule deleted."""


def removed_rules(old: list[Any], new: list[Any]) -> int:
    """How many rules ``new`` lacks compared with ``old`` (a rule whose check always holds counts as removed)."""
    kept = [r for r in new if _check_text(r).strip().lower() not in _TRIVIAL]
    return max(0, len(old) - len(kept))


def amendment_problem(design: DomainDesign, name: str, amend: SpecAmendment) -> str:
    """Why the amendment of tool ``name`` is refused ("" if it is accepted): it removes a rule, or the design no longer loads."""
    tool = design.tool(name)
    for key in ("pre", "post"):
        new = getattr(amend, key)
        if new is not None and removed_rules(getattr(tool, key), new):
            return (
                f"amendment refused: it removes {removed_rules(getattr(tool, key), new)} {key}-condition(s) of {name}; "
                "a rule is relaxed or added, never deleted to make the tool pass"
            )
    if not amend.changes():
        return "amendment refused: it changes nothing (give the new pre, post, params or returns)"
    trial = _amended(design, name, amend)
    problems = [p for p in trial.problems() if name in p or "custom_tools" in p]
    if problems:
        return "amendment refused: the amended specification does not load: " + "; ".join(problems[:3])
    return ""


def _amended(design: DomainDesign, name: str, amend: SpecAmendment) -> DomainDesign:
    """A copy of ``design`` with tool ``name`` amended."""
    tools = [t.model_copy(update=amend.changes()) if t.name == name else t for t in design.custom_tools]
    return design.model_copy(update={"custom_tools": tools})


def apply_amendment(design: DomainDesign, name: str, amend: SpecAmendment) -> str:
    """Amend tool ``name`` of ``design`` in place when the rules accept it; returns why it is refused ("" if applied)."""
    why = amendment_problem(design, name, amend)
    if not why:
        index = next(i for i, t in enumerate(design.custom_tools) if t.name == name)
        design.custom_tools[index] = design.tool(name).model_copy(update=amend.changes())
    return why


def _unique_names(cases: list[TestCase]) -> list[TestCase]:
    """``cases`` with repeated names made unique (``name (2)``), so a case can be named in a debug round."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        seen[c.name] = seen.get(c.name, 0) + 1
        out.append(c if seen[c.name] == 1 else c.model_copy(update={"name": f"{c.name} ({seen[c.name]})"}))
    return out


def history_text(history: list[dict[str, Any]]) -> str:
    """The earlier debug rounds, oldest first: what failed, the diagnosis, what changed, what was refused."""
    lines = []
    for i, h in enumerate(history, 1):
        cases = ", ".join(h.get("failing_cases", [])[:6])
        changed = ", ".join(h.get("changed", [])) or "nothing"
        line = f"Round {i}: {h['failing']} case(s) failed ({cases}). Diagnosis: {h['diagnosis']} Changed: {changed}."
        for note in h.get("refused", []):
            line += f" Refused: {note}."
        lines.append(line)
    return "\n".join(lines)


_DEBUG_SHAPES = ((12, 1500, 99, False), (12, 400, 99, False), (6, 300, 3, False), (3, 200, 2, True), (1, 200, 1, True), (1, 100, 0, True))
"""The debugger prompt's shapes, largest first: (failing verdicts, characters of each detail, earlier rounds, only the failing cases)."""


def _debug_messages(spec: str, out: ToolOutcome, failing: list[CaseVerdict], fit: Callable[[list[Message]], bool]) -> list[Message]:
    """The debugger's prompt, shortened (verdict details, fewer verdicts and rounds, only failing cases) until ``fit`` accepts it.

    When even the shortest shape does not fit, the shapes are tried again without the SQL schema.
    """
    system = {"role": "system", "content": prompt("debugger")}
    failed = {v.case for v in failing}
    messages: list[Message] = []
    bare = re.sub(r"^SCHEMA \(SQLite\):\n.*?\n\n(?=REFERENCE DATE)", "SCHEMA: left out to fit the context.\n\n", spec, flags=re.DOTALL)
    for text, (n_verdicts, detail, rounds, only_failing) in [(s, shape) for s in (spec, bare) for shape in _DEBUG_SHAPES]:
        report = json.dumps([{**v.to_dict(), "detail": v.detail[-detail:]} for v in failing[:n_verdicts]], indent=1)
        shown = [c for c in out.cases if c.name in failed] if only_failing else out.cases
        cases = _cases_json(shown) if not only_failing else json.dumps([c.model_dump() for c in shown], default=str)
        if len(shown) < len(out.cases):
            cases += f"\n({len(out.cases) - len(shown)} passing case(s) not shown: they are kept)"
        ask = f"{text}\n\nCURRENT CODE:\n{out.code}\n\nCASES:\n{cases}\n\nFAILING VERDICTS:\n{report}"
        earlier = out.history[-rounds:] if rounds else []
        if earlier:
            ask += "\n\nEARLIER ROUNDS (these did not make every case pass; do not repeat a fix that did not work):\n"
            ask += history_text(earlier)
        messages = [system, {"role": "user", "content": ask}]
        if fit(messages):
            break
    return messages


_AUTHORS: tuple[tuple[str, type[BaseModel]], ...] = (("coder", CodeReply), ("tester", TestPlan))


def _author_request(role: str, spec: str) -> list[Message]:
    """The code or test agent's request for a tool whose specification is ``spec``."""
    return [{"role": "system", "content": prompt(role)}, {"role": "user", "content": spec}]


def author_messages(client: BuilderClient, design: DomainDesign, name: str, role: str, seed: int = 0) -> list[Message]:
    """The request the code (``role`` ``coder``) or test agent (``tester``) gets for custom tool ``name``."""
    app = tool_app(design, name, "return {}", seed)  # compiled, never run
    return _author_request(role, _fitted_spec(client, design, app, name))


def debug_messages_for(client: BuilderClient, design: DomainDesign, name: str, seed: int = 0) -> list[Message]:
    """A first debug request for tool ``name`` at its largest: one case, a procedural verdict with a long traceback."""
    app = tool_app(design, name, "return {}", seed)
    spec = debug_spec(design, app, name)
    params = {p.name: f"<{p.type}>" for p in app.spec_by_name[name].params}
    out = ToolOutcome(name, code="return {}", cases=[TestCase(name="the normal path", arguments=params, expect="success")])
    detail = "Traceback (most recent call last):\n" + '  File "tools.py", line 1, in body\n' * 40
    failing = [CaseVerdict("procedural: success", "procedural", False, "success", "unexpected_failure", stable_detail(detail))]
    return _debug_messages(spec, out, failing, lambda m: _fits(client, m, DebugReply))


async def develop_tool(
    client: BuilderClient, design: DomainDesign, name: str, *, rounds: int = DEFAULT_ROUNDS, seed: int = 0
) -> ToolOutcome:
    """Code, test and debug one custom tool (see the module docstring).

    A role that gives nothing usable (invalid replies, a prompt over the context) drops the
    tool with the reason; a :class:`~envsynth.llmbuild.client.BuildStop` (a spent budget,
    an endpoint down) propagates: the build stops, resumably.
    """
    from envsynth.llmbuild.client import RoleError

    out = ToolOutcome(name)
    placeholder_app = tool_app(design, name, "return {}", seed)  # compiled, never run
    spec = _fitted_spec(client, design, placeholder_app, name)
    try:
        reply = await client.structured("coder", _author_request("coder", spec), CodeReply)
        plan = await client.structured("tester", _author_request("tester", spec), TestPlan)
    except RoleError as exc:
        out.dropped = f"{exc.role} gave no usable reply: {exc.errors[-1] if getattr(exc, 'errors', None) else exc}"
        return out
    out.code, out.cases = reply.code, _unique_names(list(plan.cases))
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
        if attempt == rounds or not await _debug_round(client, design, debug_spec(design, app, name), out, failing, attempt):
            break
    failing = [v for v in out.verdicts if not v.ok]
    first = failing[0]
    out.dropped = (
        f"{len(failing)} of {len(out.verdicts)} cases still fail after {out.debug_rounds} debug round(s); "
        f"first: {first.case}: expected {first.expected}, got {first.observed}: {first.detail[-200:]}"
    )
    return out


async def _debug_round(
    client: BuilderClient, design: DomainDesign, spec: str, out: ToolOutcome, failing: list[CaseVerdict], attempt: int
) -> bool:
    """One debug agent round: its fix applied to ``out`` under the case and rule rules; False when it gave nothing usable."""
    from envsynth.llmbuild.client import RoleError

    messages = _debug_messages(spec, out, failing, lambda m: _fits(client, m, DebugReply))
    names = [v.case for v in failing]
    try:
        fix = await client.structured("debugger", messages, DebugReply, tag=f"{out.name}: round {attempt + 1}")
    except RoleError as exc:
        why = exc.errors[-1] if getattr(exc, "errors", None) else str(exc)
        out.history.append({"failing": len(failing), "failing_cases": names, "diagnosis": f"no usable reply: {why}"})
        return False
    out.debug_rounds += 1
    if fix.code is not None:
        out.code = fix.code
    refused: list[str] = []
    if fix.cases is not None or fix.drop:
        out.cases, refused = merge_cases(out.cases, fix, out.verdicts)
    if fix.amend is not None:
        why = apply_amendment(design, out.name, fix.amend)
        record = {"round": out.debug_rounds, "reason": fix.amend.reason, "changes": fix.amend.changes(), "accepted": not why}
        out.amendments.append({**record, "refused": why} if why else record)
        refused += [why] if why else []
    changed = [k for k in ("code", "cases") if getattr(fix, k) is not None] + (["drop"] if fix.drop else [])
    changed += ["spec (amended: " + fix.amend.reason[:160] + ")"] if fix.amend is not None and not out.amendments[-1].get("refused") else []
    out.history.append(
        {"failing": len(failing), "failing_cases": names, "diagnosis": fix.diagnosis, "changed": changed, "refused": refused}
    )
    return True
