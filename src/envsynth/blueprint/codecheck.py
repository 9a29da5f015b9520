"""Static check of untrusted (LLM-written) custom-tool code: the first line of defence.

:func:`check_tool_code` parses the body of a custom tool (never compiles it to bytecode,
never runs it) and lists what it refuses, one short reason per problem with its line.
The sandbox (:mod:`envsynth.sandbox.untrusted`) is the second line: code that gets past
this check still runs only in a sandboxed worker.

Stdlib only: the sandboxed tool worker loads this file by path and checks the code again.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap

ALLOWED_MODULES = frozenset(
    {
        "math",
        "cmath",
        "datetime",
        "json",
        "re",
        "decimal",
        "fractions",
        "statistics",
        "itertools",
        "collections",
        "functools",
        "operator",
        "string",
        "textwrap",
        "typing",
    }
)
"""Top-level modules the code may import (and their submodules, e.g. ``collections.abc``).

Not ``random`` or ``time``: randomness comes from ``ctx.rng`` and the clock from
``ctx.now()`` / ``ctx.today()``, so replays of an episode stay deterministic.
"""

FORBIDDEN_NAMES = frozenset(
    {
        "open",
        "exec",
        "eval",
        "compile",
        "__import__",
        "globals",
        "locals",
        "vars",
        "getattr",
        "setattr",
        "delattr",
        "input",
        "breakpoint",
        "exit",
        "quit",
        "memoryview",
        "help",
    }
)
"""Builtins the code may not name (reading, writing, or reaching past the tool's own objects)."""

_COMMON_ATTRIBUTES = frozenset(
    {"abc", "array", "bisect", "calendar", "code", "copy", "email", "enum", "heapq", "html"}
    | {"keyword", "numbers", "random", "select", "stat", "struct", "time", "token", "queue", "uuid"}
)
FORBIDDEN_ATTRIBUTES = frozenset(
    # other modules reached through an allowed one (statistics.sys, typing.sys, json.codecs)
    {m for m in getattr(sys, "stdlib_module_names", ()) if not m.startswith("_")} - ALLOWED_MODULES - _COMMON_ATTRIBUTES
    | {"sys", "os", "io", "codecs", "builtins", "modules", "system", "popen", "open"}
    # frames and code objects (generator.gi_frame.f_globals reaches the builtins)
    | {"gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code"}
    | {"f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame", "tb_next", "co_code", "co_consts"}
    # the SQLite connection's escape hatches
    | {"load_extension", "enable_load_extension", "set_authorizer", "serialize", "deserialize", "backup"}
)
"""Attribute names the code may not use, even on objects it may reach."""

CLOCK_METHODS = frozenset({"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"})
MAX_CODE_CHARS = 20_000
_FORMAT_DUNDER = re.compile(r"\{[^{}]*(\.|\[)\s*_")
_DUNDER = re.compile(r"\s*__\w+__\s*")


def check_tool_code(code: str) -> list[str]:
    """The problems of a custom tool body, each ``line N: reason``; an empty list means OK.

    Refused: imports outside :data:`ALLOWED_MODULES` (and relative or ``*`` imports),
    the names in :data:`FORBIDDEN_NAMES`, any dunder name (also as a string constant),
    any attribute starting with ``_`` (``x.__class__``, ``ctx._dict``) or in
    :data:`FORBIDDEN_ATTRIBUTES` (``statistics.sys``, ``gen.gi_frame``,
    ``db.load_extension``), format strings reaching attributes that start with ``_``
    (``"{0.__class__}"``), the host clock (``datetime.now()``: use ``ctx.now()``), and
    code longer than :data:`MAX_CODE_CHARS` characters.
    """
    if not isinstance(code, str):
        return ["line 0: the code is not text"]
    if len(code) > MAX_CODE_CHARS:
        return [f"line 0: the code is {len(code)} characters long (at most {MAX_CODE_CHARS})"]
    source = "def _tool():\n" + "".join("    " + line + "\n" for line in _dedent(code).splitlines())
    try:
        tree = ast.parse(source, "<tool>", "exec")
    except SyntaxError as exc:
        return [f"line {max((exc.lineno or 1) - 1, 0)}: does not parse: {exc.msg}"]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [f"line 0: does not parse: {type(exc).__name__}"]
    problems: list[str] = []
    for node in ast.walk(tree):
        line = max(getattr(node, "lineno", 1) - 1, 0)
        for reason in _node_problems(node):
            problems.append(f"line {line}: {reason}")
    problems.sort(key=lambda p: int(p.split(":", 1)[0].split()[1]))
    return problems


def _dedent(code: str) -> str:
    return textwrap.dedent(code).rstrip()


def _allowed(module: str) -> bool:
    return module.split(".", 1)[0] in ALLOWED_MODULES


def _node_problems(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import_problems(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _text_problems(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        receiver = node.func.value
        if node.func.attr in CLOCK_METHODS and not (isinstance(receiver, ast.Name) and receiver.id == "ctx"):
            return [f"the host clock ({node.func.attr}()) is not allowed: use ctx.now() / ctx.today()"]
        return []
    return _name_problems(node)


def _import_problems(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Imports only of allowed modules, never relative, ``*`` or private names."""
    if isinstance(node, ast.Import):
        return [f"import of {a.name!r} is not allowed" for a in node.names if not _allowed(a.name)]
    out: list[str] = []
    if node.level:
        out.append("relative imports are not allowed")
    elif not _allowed(node.module or ""):
        out.append(f"import from {node.module!r} is not allowed")
    out += ["'import *' is not allowed" for a in node.names if a.name == "*"]
    out += [f"importing {a.name!r} is not allowed" for a in node.names if a.name.startswith("_")]
    return out


def _text_problems(text: str) -> list[str]:
    """A string may not spell a dunder name nor a format field reaching a private attribute."""
    if _FORMAT_DUNDER.search(text):
        return ["format fields reaching attributes that start with '_' are not allowed"]
    if _DUNDER.fullmatch(text):
        return [f"the dunder name {text!r} is not allowed, even as text"]
    return []


def _name_problems(node: ast.AST) -> list[str]:
    """Forbidden names and attributes; no dunder name anywhere (a variable, a definition, an argument, an alias)."""
    if isinstance(node, ast.Name):
        if node.id in FORBIDDEN_NAMES:
            return [f"{node.id!r} is not allowed"]
        return [f"dunder name {node.id!r} is not allowed"] if node.id.startswith("__") else []
    if isinstance(node, ast.Attribute):
        bad = node.attr.startswith("_") or node.attr in FORBIDDEN_ATTRIBUTES
        return [f"access to attribute {node.attr!r} is not allowed"] if bad else []
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        name: str | None = node.name
    elif isinstance(node, ast.arg):
        name = node.arg
    elif isinstance(node, ast.alias):
        name = node.asname
    elif isinstance(node, ast.Global | ast.Nonlocal):
        return [f"dunder name {n!r} is not allowed" for n in node.names if n.startswith("__")]
    else:
        return []
    return [f"dunder name {name!r} is not allowed"] if name and name.startswith("__") else []


__all__ = ["ALLOWED_MODULES", "CLOCK_METHODS", "FORBIDDEN_ATTRIBUTES", "FORBIDDEN_NAMES", "MAX_CODE_CHARS", "check_tool_code"]
