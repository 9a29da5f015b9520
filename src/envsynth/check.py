"""``envsynth check``: every problem of a blueprint file, without building it.

A check reads the file, validates it and its cross references (collecting every
problem, see :func:`envsynth.blueprint.collect.collect`), then runs what ``envsynth
build`` does before testing: it compiles the app (schema, tools module, sample state)
and runs each pre-condition, message and ``set``/``also`` value of every action once,
through the generated code, on typed sample values. A condition that fails there fails
whatever the data (it compares a date with a number, passes a list to ``exists()``), so
the tester could never construct it and the tool would crash at run time. Nothing is
written anywhere.
"""

from __future__ import annotations

import ast
import re
import sqlite3
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envsynth.blueprint.collect import collect
from envsynth.blueprint.defaults import default_warnings
from envsynth.blueprint.effects import increment
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import read_blueprint_file
from envsynth.blueprint.models import NUMERIC_TYPES, Blueprint
from envsynth.blueprint.spec import ParamSpec, ToolSpec


@dataclass
class CheckReport:
    """What a check found in one file: its problems, or the size of the app it describes."""

    file: str
    problems: list[BlueprintError] = field(default_factory=list)
    warnings: list[BlueprintError] = field(default_factory=list)
    name: str | None = None
    entities: int = 0
    actions: int = 0
    tools: int = 0
    writes: int = 0

    @property
    def ok(self) -> bool:
        """Whether the file has no problem (warnings do not count)."""
        return not self.problems

    def passes(self, strict: bool = False) -> bool:
        """Whether the check passes: no problem, and with ``strict`` no warning either."""
        return self.ok and not (strict and self.warnings)

    def lines(self) -> list[str]:
        """One line per problem (``<file>: <path>: <message>``), or one per warning
        (``<file>: warning: <path>: <message>``) and then one ``ok`` line."""
        if self.problems:
            return [one_line(p.line()) for p in self.problems]
        return [one_line(f"{self.file}: warning: {w.path}: {w.message}") for w in self.warnings] + [
            f"{self.file}: ok: {self.name}: {self.entities} entities, {self.actions} actions, "
            f"{self.tools} tools ({self.writes} write, {self.tools - self.writes} read)"
        ]

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (``--json``)."""
        return {
            "file": self.file,
            "ok": self.ok,
            "name": self.name,
            "entities": self.entities,
            "actions": self.actions,
            "tools": self.tools,
            "problems": [{"path": p.path, "message": p.message, "line": p.line()} for p in self.problems],
            "warnings": [{"path": w.path, "message": w.message} for w in self.warnings],
        }


_BREAKS = {c: repr(chr(c))[1:-1] for c in (0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)}


def one_line(text: str) -> str:
    """``text`` with every character that would break the line escaped (a key may hold one)."""
    return text.translate(_BREAKS)


def check_file(path: str | Path) -> CheckReport:
    """Check one blueprint file (see the module docstring); never raises for a problem of the file."""
    try:
        data = read_blueprint_file(path)
    except BlueprintError as exc:
        return CheckReport(str(path), exc.all)
    duplicates = duplicate_keys(Path(path).read_text(encoding="utf-8"), str(path))
    report = check_data(data, str(path))
    report.problems[:0] = duplicates
    return report


def duplicate_keys(text: str, source: str) -> list[BlueprintError]:
    """Keys given twice in one YAML mapping (YAML keeps the last silently), located at the second one."""
    import yaml

    from envsynth.blueprint.load import _LOADER

    out: list[BlueprintError] = []
    stack = [yaml.compose(text, Loader=_LOADER)]
    visited: set[int] = set()  # an anchor's node is met again at each alias (and an alias may be inside its anchor)
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[tuple[str, str]] = set()
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and (key.tag, key.value) in seen:
                    mark = key.start_mark
                    out.append(
                        BlueprintError(
                            f"line {mark.line + 1}, column {mark.column + 1}",
                            f"key {key.value!r} is given twice in one mapping (YAML keeps only the last); merge them",
                            source,
                        )
                    )
                if isinstance(key, yaml.ScalarNode):
                    seen.add((key.tag, key.value))
                stack.append(value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return sorted(out, key=lambda e: [int(n) for n in re.findall(r"\d+", e.path)])


def check_data(data: Any, source: str) -> CheckReport:
    """Check a blueprint given as parsed YAML, ``source`` naming it in the problems."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # Python's warnings on odd literals ('1abs'): the problems say it
        bp, specs, problems = collect(data, source)
    if bp is None:
        return CheckReport(source, problems)
    problems = [BlueprintError(p.path, p.message, source) for p in build_problems(bp)]
    return CheckReport(
        source,
        problems,
        warnings=default_warnings(data, bp, source),
        name=bp.name,
        entities=len(bp.entities),
        actions=len(bp.actions),
        tools=len(specs),
        writes=sum(s.mode == "write" for s in specs),
    )


def build_problems(bp: Blueprint) -> list[BlueprintError]:
    """What ``envsynth build`` would fail on before testing: compiling the app, then running each expression once."""
    from envsynth.compiler.compile import compile_app

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)  # reported per expression by _run_one
            app = compile_app(bp, 0)
    except BlueprintError as exc:
        return exc.all
    except Exception as exc:  # recorded as the problem: compiling the app (codegen, schema, sample state) failed
        return [BlueprintError("", f"compiling the app fails: {type(exc).__name__}: {exc}")]
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(app.schema)
        return _run_expressions(app, db)
    finally:
        db.close()


_SCALARS = ("string", "integer", "number", "boolean")
"""Parameter types with one typed sample value (expressions reading a parameter of another type are not run)."""

_FAILS = (TypeError, ValueError, IndexError, sqlite3.Error)
"""Errors an expression raises on any data of the right types (others, such as a division by zero, depend on the values)."""


def _run_expressions(app: Any, db: sqlite3.Connection) -> list[BlueprintError]:
    from envsynth.runtime.toolkit import Context

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # reported per expression below
        base = dict(vars(app.module))
    ctx = Context(db, app.now, 0, app.bool_columns)
    problems = []
    for i, (action, spec) in enumerate(zip(app.blueprint.actions, app.specs, strict=True)):
        ns = {**base, "ctx": ctx, "db": db, **_sample_names(app.blueprint, spec)}
        unsampled = {p.name for p in spec.params if p.type not in _SCALARS}  # a list's items have no one sample value
        for where, source, is_message in _expressions(action):
            if any(re.search(rf"\b{name}\b", source) for name in unsampled):
                continue
            problem = _run_one(source, ns, is_message) or (None if is_message else _type_clash(source, ns))
            if problem is not None:
                problems.append(BlueprintError(f"actions[{i}].{where}", f"{action.name}: {problem}"))
    return problems


def _expressions(action: Any) -> list[tuple[str, str, bool]]:
    """(path, source, is a message) of the pre-conditions, their messages and the set/also values of an action."""
    out = []
    for j, c in enumerate(action.pre):
        out.append((f"pre[{j}]", c.check, False))
        if c.message:
            out.append((f"pre[{j}].message", c.message, True))
    for key in ("set", "log_set"):
        for fname, source in (getattr(action, key, None) or {}).items():
            if isinstance(source, str):
                out.append((f"{key}.{fname}", _value_source(source), False))
    for alias, values in (getattr(action, "also", None) or {}).items():
        for fname, source in (values or {}).items() if isinstance(values, dict) else ():
            if isinstance(source, str):
                out.append((f"also.{alias}.{fname}", _value_source(source), False))
    return out


def _value_source(source: str) -> str:
    """The expression of a ``set``/``also`` value: an increment's (``"+= amount"``) is what it adds."""
    step = increment(source)
    return source if step is None else step[1]


def _run_one(source: str, ns: dict[str, Any], is_message: bool) -> str | None:
    """Why running ``source`` as the generated code does fails on typed sample values, or None."""
    from envsynth.blueprint import expr as X
    from envsynth.compiler.codegen import message_code, py

    try:
        code = message_code(source) if is_message else py(source)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SyntaxWarning)
            compiled = compile(code, "<check>", "eval")
        said = [str(w.message) for w in caught if issubclass(w.category, SyntaxWarning)]
        if said:  # Python's own warning: `x is 'open'` compares identity, not value
            return f"{source!r}: {said[0]}"
        value = eval(compiled, ns)  # generated from a whitelisted expression, as in tools.py
    except X.ExprError:
        return None  # refused at load, or not run by the generated code (old() in a post-condition)
    except _FAILS as exc:
        what = "the message cannot be formatted" if is_message else f"{source!r} cannot be evaluated"
        return f"{what}, whatever the data: {type(exc).__name__}: {exc}{_hint(exc)}"
    except (NameError, KeyError, AttributeError, ZeroDivisionError, OverflowError):
        return None  # depends on the values or on the surrounding tool code
    del value
    return None


def _type_clash(source: str, ns: dict[str, Any]) -> str | None:
    """A comparison in ``source`` that never holds (``==``/``in``) or always holds (``!=``/``not in``): a number against text."""
    from envsynth.blueprint import expr as X

    for node in ast.walk(X.parse(source).tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1 or type(node.ops[0]) not in _EQUALITY:
            continue
        left, right = _sample_of(node.left, ns), _sample_of(node.comparators[0], ns)
        if isinstance(node.ops[0], ast.In | ast.NotIn):
            rights = list(right) if isinstance(right, list | tuple) and right else [_UNKNOWN]
        else:
            rights = [right]
        kind = _kind(left)
        if kind is None or any(_kind(r) in (None, kind) for r in rights):
            continue
        outcome = "never holds" if isinstance(node.ops[0], ast.Eq | ast.In) else "always holds"
        return f"{ast.unparse(node)!r} {outcome}, whatever the data: it compares {kind} with {_kind(rights[0])}"
    return None


_EQUALITY = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
_UNKNOWN = object()


def _sample_of(node: ast.expr, ns: dict[str, Any]) -> Any:
    """The value of a sub-expression on the sample values, or a marker when it cannot be had."""
    from envsynth.blueprint import expr as X
    from envsynth.compiler.codegen import code_hook

    try:
        return eval(compile(X.render(node, code_hook), "<check>", "eval"), ns)  # whitelisted, as in tools.py
    except (X.ExprError, *_FAILS, NameError, KeyError, AttributeError, ZeroDivisionError, OverflowError):
        return _UNKNOWN


def _kind(value: Any) -> str | None:
    """``a number`` or ``text`` for a sample value of that kind, else None (booleans, None, lists, unknowns)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return "a number"
    return "text" if isinstance(value, str) else None


def _hint(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, TypeError) and "'str'" in text and ("'int'" in text or "'float'" in text):
        return " (dates, times and text are strings such as '2026-03-15', not numbers; use durations: now() - x.at <= hours(24))"
    if isinstance(exc, sqlite3.Error) and "binding parameter" in text:
        return " (a filter of exists(), any(), all() and count() takes one value or a list of values)"
    return ""


def _sample_names(bp: Blueprint, spec: ToolSpec) -> dict[str, Any]:
    """A typed sample value for every parameter and a sample row for every bound alias of a tool."""
    names: dict[str, Any] = {p.name: _param_value(p, bp) for p in spec.params}
    for b in spec.bindings:
        names[b.alias] = _row(bp, b.entity)
    return names


def _row(bp: Blueprint, entity: str) -> dict[str, Any]:
    ent = bp.entity(entity)
    return {f.name: _value(f.type, f.choices, bp) for f in ent.fields}


def _param_value(p: ParamSpec, bp: Blueprint) -> Any:
    if p.type == "array":
        return list((p.items_enum or ["x"])[:1])
    if p.enum:
        return p.enum[0]
    if p.type == "integer":
        return 3
    if p.type == "number":
        return 10.5
    if p.type == "boolean":
        return True
    return _value(p.semantic or "string", None, bp)


def _value(ftype: str, choices: list[str] | None, bp: Blueprint) -> Any:
    if choices:
        return choices[0]
    if ftype in NUMERIC_TYPES:
        return 3 if ftype in ("int", "quantity") else 10.5
    if ftype == "bool":
        return True
    if ftype == "date":
        return bp.reference_date
    if ftype == "datetime":
        return f"{bp.reference_date}T09:30:00"
    return f"sample {ftype}"
