"""Static check of untrusted (LLM-written) custom-tool code: the first line of defence.

:func:`check_tool_code` parses the body of a custom tool (never compiles it to bytecode,
never runs it) and lists what it refuses, one short reason per problem with its line.
Besides imports and names, it refuses the *dynamic* forms of attribute access, whose
attribute name the parse cannot see: ``operator.attrgetter``/``methodcaller``,
``string.Formatter``, ``str.format``/``format_map`` with fields reaching attributes or
items (or on a format string built at run time), ``hasattr`` with a computed name,
``type()`` with three arguments, ``typing.get_type_hints`` (which evaluates text),
frame/code introspection, and codecs other than the plain text encodings.
The sandbox (:mod:`envsynth.sandbox.untrusted`) is the second line: code that gets past
this check still runs only in a sandboxed worker.

Stdlib only: the sandboxed tool worker loads this file by path and checks the code again.
"""

from __future__ import annotations

import ast
import re
import string
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
        "license",
        "credits",
        "copyright",
    }
)
"""Builtins the code may not name (reading, writing, or reaching past the tool's own objects)."""

_COMMON_ATTRIBUTES = frozenset(
    {"abc", "array", "bisect", "calendar", "code", "copy", "email", "enum", "heapq", "html"}
    | {"keyword", "numbers", "random", "select", "stat", "struct", "time", "token", "queue", "uuid"}
)
FRAME_ATTRIBUTES = frozenset(
    {"f_globals", "f_locals", "f_builtins", "f_back", "f_code", "f_trace", "f_lasti", "f_lineno", "f_trace_lines", "f_trace_opcodes"}
)
"""Frame attributes (``gen.gi_frame.f_globals`` reaches the builtins)."""

FRAME_PREFIXES = ("gi_", "cr_", "ag_", "co_", "tb_")
"""Attribute prefixes of generators, coroutines, async generators, code objects and tracebacks."""

_BY_NAME = "it reaches attributes by a name known only at run time"
_WHY = {
    **dict.fromkeys(("attrgetter", "methodcaller", "Formatter", "get_field", "vformat"), _BY_NAME),
    **dict.fromkeys(("get_type_hints", "ForwardRef"), "it evaluates text as code"),
    **dict.fromkeys(("get_referrers", "get_referents", "get_objects"), "it walks the objects of the heap"),
    **dict.fromkeys(("mro", "cell_contents"), "class and closure internals"),
}
DYNAMIC_ATTRIBUTES = frozenset(_WHY)
"""Members that look attributes up by a name known only at run time (``operator.attrgetter``,
``string.Formatter().get_field``), evaluate text (``typing.get_type_hints``), walk the heap
(``gc.get_referrers``) or expose class and closure internals (``mro``, ``cell_contents``)."""

FORBIDDEN_ATTRIBUTES = (
    # other modules reached through an allowed one (statistics.sys, typing.sys, json.codecs)
    frozenset({m for m in getattr(sys, "stdlib_module_names", ()) if not m.startswith("_")}) - ALLOWED_MODULES - _COMMON_ATTRIBUTES
    | {"sys", "os", "io", "codecs", "builtins", "modules", "system", "popen", "open"}
    # frames and code objects (generator.gi_frame.f_globals reaches the builtins)
    | {"gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "ag_frame", "ag_code"}
    | {"tb_frame", "tb_next", "co_code", "co_consts"}
    | FRAME_ATTRIBUTES
    | DYNAMIC_ATTRIBUTES
    # the SQLite connection's escape hatches
    | {"load_extension", "enable_load_extension", "set_authorizer", "serialize", "deserialize", "backup"}
)
"""Attribute names the code may not use, even on objects it may reach (also refused as
``from m import name``, as a ``match`` class-pattern keyword and as a ``hasattr`` name);
names starting with one of :data:`FRAME_PREFIXES` are refused too."""

TEXT_CODECS = frozenset({"utf-8", "utf8", "ascii", "us-ascii", "latin-1", "latin1", "iso-8859-1", "utf-16", "utf-32", "cp1252"})
"""The codecs ``encode``/``decode``/``str(b, codec)`` may name; never ``unicode_escape``,
``rot13``, ``hex``, ``base64``... which turn data into text the check never saw."""

CLOCK_METHODS = frozenset({"now", "today", "utcnow", "fromtimestamp", "utcfromtimestamp"})
MAX_CODE_CHARS = 20_000
_FORMAT_DUNDER = re.compile(r"\{[^{}]*(\.|\[)\s*_")
_DUNDER = re.compile(r"\s*__\w+__\s*")
_FORMATTER = string.Formatter()
_FORMAT_METHODS = frozenset({"format", "format_map"})
_CODEC_METHODS = frozenset({"encode", "decode"})
_CODEC_CONSTRUCTORS = frozenset({"str", "bytes", "bytearray"})


def check_tool_code(code: str) -> list[str]:
    """The problems of a custom tool body, each ``line N: reason``; an empty list means OK.

    Refused: imports outside :data:`ALLOWED_MODULES` (and relative or ``*`` imports),
    the names in :data:`FORBIDDEN_NAMES`, any dunder name (also as a string constant,
    a keyword argument or an ``except ... as`` name), any attribute starting with ``_``
    (``x.__class__``, ``ctx._dict``) or in :data:`FORBIDDEN_ATTRIBUTES` (``statistics.sys``,
    ``gen.gi_frame``, ``operator.attrgetter``, ``db.load_extension``) or starting with one
    of :data:`FRAME_PREFIXES`, format strings reaching attributes that start with ``_``
    (``"{0.__class__}"``), ``.format``/``.format_map`` unless on a literal whose fields
    reach no attribute nor item, ``hasattr`` unless called with a literal name,
    ``type()`` unless called with one argument (and ``type`` assigned to another name),
    codecs outside :data:`TEXT_CODECS`, the host clock (``datetime.now()``: use
    ``ctx.now()``), and code longer than :data:`MAX_CODE_CHARS` characters.
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
    try:
        return _tree_problems(tree)
    except RecursionError:
        return ["line 0: the code is nested too deeply to check"]


def _tree_problems(tree: ast.AST) -> list[str]:
    """Every problem of the parsed body, sorted by line."""
    callees = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    problems: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = max(getattr(node, "lineno", 1) - 1, 0)
        problems += [(line, reason) for reason in _node_problems(node, callees)]
    return [f"line {line}: {reason}" for line, reason in sorted(problems, key=lambda p: p[0])]


def _dedent(code: str) -> str:
    return textwrap.dedent(code).rstrip()


def _allowed(module: str) -> bool:
    return module.split(".", 1)[0] in ALLOWED_MODULES


def _node_problems(node: ast.AST, callees: set[int]) -> list[str]:
    """The problems of one node; ``callees`` holds the ids of the nodes called directly (``f`` in ``f(x)``)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        return _import_problems(node)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _text_problems(node.value)
    if isinstance(node, ast.Call):
        return _call_problems(node)
    if isinstance(node, ast.Attribute):
        return _attribute_problems(node)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
        return _alias_problems(node)
    if isinstance(node, ast.Name):
        return _builtin_name_problems(node, callees)
    if isinstance(node, ast.MatchClass):
        return [f"{reason} (in a class pattern)" for reason in map(_attribute_name_problem, node.kwd_attrs) if reason]
    return _binding_problems(node)


def _import_problems(node: ast.Import | ast.ImportFrom) -> list[str]:
    """Imports only of allowed modules, never relative, ``*``, private or forbidden members."""
    if isinstance(node, ast.Import):
        return [f"import of {a.name!r} is not allowed" for a in node.names if not _allowed(a.name)]
    out: list[str] = []
    if node.level:
        out.append("relative imports are not allowed")
    elif not _allowed(node.module or ""):
        out.append(f"import from {node.module!r} is not allowed")
    out += ["'import *' is not allowed" for a in node.names if a.name == "*"]
    for alias in node.names:
        reason = _attribute_name_problem(alias.name)
        if reason:
            why = reason.partition(" is not allowed")[2]
            out.append(f"importing {alias.name!r} from {node.module!r} is not allowed, under any alias{why}")
    return out


def _text_problems(text: str) -> list[str]:
    """A string may not spell a dunder name nor a format field reaching a private attribute."""
    if _FORMAT_DUNDER.search(text):
        return ["format fields reaching attributes that start with '_' are not allowed"]
    if _DUNDER.fullmatch(text):
        return [f"the dunder name {text!r} is not allowed, even as text"]
    return []


def _attribute_name_problem(name: str) -> str | None:
    """Why the code may not use the attribute ``name`` (by ``.``, import, pattern or ``hasattr``), or None."""
    refused = f"access to attribute {name!r} is not allowed"
    if name in DYNAMIC_ATTRIBUTES:
        return f"{refused} ({_WHY[name]})"
    if name in FRAME_ATTRIBUTES or name.startswith(FRAME_PREFIXES):
        return refused + " (frame and code introspection)"
    if name.startswith("_") or name in FORBIDDEN_ATTRIBUTES:
        return refused
    return None


def _attribute_problems(node: ast.Attribute) -> list[str]:
    """A forbidden attribute, or ``.format``/``.format_map`` on anything but a safe literal."""
    reason = _attribute_name_problem(node.attr)
    if reason:
        return [reason]
    if node.attr not in _FORMAT_METHODS:
        return []
    receiver = node.value
    if isinstance(receiver, ast.Constant) and isinstance(receiver.value, str):
        return _format_string_problems(receiver.value, node.attr)
    return [
        f"str.{node.attr} on a format string built at run time ({_short(ast.unparse(receiver))}) is not allowed: use an f-string or a literal"
    ]


def _format_string_problems(text: str, method: str) -> list[str]:
    """A literal passed to ``str.format``/``format_map``: its fields (nested specs too) name arguments only."""
    try:
        fields = _format_fields(text)
    except ValueError as exc:
        return [f"the format string {_short(repr(text))} of .{method} does not parse: {exc}"]
    reaching = [f for f in fields if "." in f or "[" in f]
    if reaching:
        return [f"the format field {{{_short(reaching[0])}}} of .{method} reaches an attribute or an item: use an f-string"]
    return []


def _format_fields(text: str, depth: int = 0) -> list[str]:
    """The field names of a ``str.format`` string, those inside format specs included."""
    fields: list[str] = []
    for _literal, field, spec, _conversion in _FORMATTER.parse(text):
        if field is not None:
            fields.append(field)
        if spec and "{" in spec and depth < 2:
            fields += _format_fields(spec, depth + 1)
    return fields


def _call_problems(node: ast.Call) -> list[str]:
    """Calls refused by their callee: the host clock, ``type`` with 3 arguments, ``hasattr`` by a computed name, codecs."""
    func = node.func
    if isinstance(func, ast.Attribute):
        receiver = func.value
        if func.attr in CLOCK_METHODS and not (isinstance(receiver, ast.Name) and receiver.id == "ctx"):
            return [f"the host clock ({func.attr}()) is not allowed: use ctx.now() / ctx.today()"]
        if func.attr in _CODEC_METHODS:
            return _codec_problems(node, 0, f".{func.attr}()")
        return []
    if not isinstance(func, ast.Name):
        return []
    if func.id == "type" and not _plain_call(node, 1):
        return [f"type() with {_arity(node)} arguments (it creates a class) is not allowed: only type(x)"]
    if func.id == "hasattr":
        return _hasattr_problems(node)
    if func.id in _CODEC_CONSTRUCTORS:
        return _codec_problems(node, 1, f"{func.id}()")
    return []


def _plain_call(node: ast.Call, arity: int) -> bool:
    """Whether the call has exactly ``arity`` positional arguments, no ``*`` and no keywords."""
    return len(node.args) == arity and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)


def _arity(node: ast.Call) -> str:
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        return "unpacked or keyword"
    return str(len(node.args))


def _hasattr_problems(node: ast.Call) -> list[str]:
    """``hasattr(x, 'name')`` only, with a literal name that is itself allowed."""
    name = node.args[1] if _plain_call(node, 2) else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return ["hasattr() with an attribute name built at run time is not allowed: write the name as a literal"]
    reason = _attribute_name_problem(name.value)
    return [f"{reason} (in hasattr)"] if reason else []


def _codec_problems(node: ast.Call, position: int, what: str) -> list[str]:
    """The codec of ``s.encode(c)``, ``b.decode(c)``, ``str(b, c)``: absent, or a literal in :data:`TEXT_CODECS`."""
    given = [k.value for k in node.keywords if k.arg == "encoding" or k.arg is None]
    if len(node.args) > position:
        given.append(node.args[position])
    for codec in given:
        if not (isinstance(codec, ast.Constant) and isinstance(codec.value, str)):
            return [f"{what} with a codec named at run time is not allowed: name one of {', '.join(sorted(TEXT_CODECS))}"]
        if codec.value.strip().lower().replace("_", "-") not in TEXT_CODECS:
            return [f"the codec {codec.value!r} of {what} is not allowed: only the text encodings ({', '.join(sorted(TEXT_CODECS))})"]
    return []


def _builtin_name_problems(node: ast.Name, callees: set[int]) -> list[str]:
    """Forbidden builtins, dunder names, and ``hasattr`` used other than by a direct call."""
    if node.id in FORBIDDEN_NAMES:
        return [f"{node.id!r} is not allowed"]
    if node.id.startswith("__"):
        return [f"dunder name {node.id!r} is not allowed"]
    if node.id == "hasattr" and id(node) not in callees:
        return ["'hasattr' is not allowed other than called directly (hasattr(x, 'name'))"]
    return []


def _alias_problems(node: ast.Assign | ast.AnnAssign | ast.NamedExpr) -> list[str]:
    """``t = type``: the class-making builtin may not be renamed (``t('X', (), ns)`` would escape the arity check)."""
    value = node.value
    if isinstance(value, ast.Name) and value.id == "type":
        return ["assigning 'type' to another name is not allowed"]
    return []


def _binding_problems(node: ast.AST) -> list[str]:
    """No dunder name bound anywhere (a definition, an argument, an alias, a keyword, a pattern, an ``except`` name)."""
    if isinstance(node, ast.Global | ast.Nonlocal):
        return [f"dunder name {n!r} is not allowed" for n in node.names if n.startswith("__")]
    name = _bound_name(node)
    return [f"dunder name {name!r} is not allowed"] if name and name.startswith("__") else []


def _bound_name(node: ast.AST) -> str | None:
    """The name a node binds or passes by keyword, when it is not an :class:`ast.Name`."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.arg | ast.keyword):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar):
        return node.name
    if isinstance(node, ast.MatchMapping):
        return node.rest
    return None


def _short(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters for a message."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "ALLOWED_MODULES",
    "CLOCK_METHODS",
    "DYNAMIC_ATTRIBUTES",
    "FORBIDDEN_ATTRIBUTES",
    "FORBIDDEN_NAMES",
    "FRAME_ATTRIBUTES",
    "FRAME_PREFIXES",
    "MAX_CODE_CHARS",
    "TEXT_CODECS",
    "check_tool_code",
]
