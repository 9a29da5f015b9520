"""The static check of LLM-written tool code against hostile snippets, real tool code and generated snippets.

Every hostile snippet must be refused with a reason that names the construct (and a
``line N:`` prefix); the tool code the catalogue, the test blueprints and the scripted
code agent ship must still pass; and the check must never crash on generated code,
refusing any generated snippet that names a forbidden builtin or attribute.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envsynth.blueprint.codecheck import FORBIDDEN_ATTRIBUTES, FORBIDDEN_NAMES, check_tool_code

ROOT = Path(__file__).parents[2]

HOSTILE = [
    # refused before the dynamic forms were
    ("return getattr(ctx, 'd' + 'b')", "line 1: 'getattr' is not allowed"),
    ("g = getattr\nreturn g(ctx, name)", "line 1: 'getattr' is not allowed"),
    ("return setattr(ctx, name, 1)", "'setattr' is not allowed"),
    ("delattr(ctx, name)", "'delattr' is not allowed"),
    ("return vars(ctx)", "'vars' is not allowed"),
    ("return globals()['x']", "'globals' is not allowed"),
    ("return locals()", "'locals' is not allowed"),
    ("return __builtins__", "dunder name '__builtins__' is not allowed"),
    ("return ().__class__.__base__.__subclasses__()", "access to attribute '__subclasses__' is not allowed"),
    ("return object.__subclasses__()", "access to attribute '__subclasses__' is not allowed"),
    ("import importlib\nreturn importlib.import_module('os')", "import of 'importlib' is not allowed"),
    ("return __import__('os')", "'__import__' is not allowed"),
    ("return eval('1')", "'eval' is not allowed"),
    ("exec('x = 1')", "'exec' is not allowed"),
    ("return compile('1', 'f', 'eval')", "'compile' is not allowed"),
    ("import sys\nreturn sys.modules", "import of 'sys' is not allowed"),
    ("import statistics\nreturn statistics.sys.modules['os']", "access to attribute 'sys' is not allowed"),
    ("import inspect\nreturn inspect.currentframe()", "import of 'inspect' is not allowed"),
    ("import ctypes", "import of 'ctypes' is not allowed"),
    ("import gc\nreturn gc.get_referrers(ctx)", "import of 'gc' is not allowed"),
    ("import pickle\nreturn pickle.loads(b'')", "import of 'pickle' is not allowed"),
    ("from marshal import loads", "import from 'marshal' is not allowed"),
    ("import codecs\nreturn codecs.decode('x', 'rot13')", "import of 'codecs' is not allowed"),
    ("import json\nreturn json.codecs.open('/etc/passwd').read()", "access to attribute 'codecs' is not allowed"),
    ("breakpoint()", "'breakpoint' is not allowed"),
    ("return open('/etc/passwd').read()", "'open' is not allowed"),
    ("g = (x for x in [1])\nreturn g.gi_frame.f_globals", "access to attribute 'gi_frame' is not allowed"),
    ("return '{0.__globals__}'.format(f)", "format fields reaching attributes that start with '_' are not allowed"),
    # operator.attrgetter / methodcaller, by any path or alias
    ("import operator\nreturn operator.attrgetter('db')(ctx)", "line 2: access to attribute 'attrgetter' is not allowed"),
    ("import operator as op\nreturn op.methodcaller('keys')(ctx)", "line 2: access to attribute 'methodcaller' is not allowed"),
    ("from operator import attrgetter as a\nreturn a('db')(ctx)", "line 1: importing 'attrgetter' from 'operator' is not allowed"),
    ("from operator import itemgetter, methodcaller\nreturn 1", "importing 'methodcaller' from 'operator' is not allowed"),
    # string.Formatter and str.format / format_map reaching attributes or items
    ("import string as s\nreturn s.Formatter().get_field('0.db', [ctx], {})", "access to attribute 'Formatter' is not allowed"),
    ("from string import Formatter as F\nreturn F().vformat('{0.db}', [ctx], {})", "importing 'Formatter' from 'string' is not allowed"),
    ("return '{0.db}'.format(ctx)", "the format field {0.db} of .format reaches an attribute"),
    ("return '{0[db]}'.format(row)", "the format field {0[db]} of .format reaches an attribute or an item"),
    ("return '{c.db}'.format_map({'c': ctx})", "the format field {c.db} of .format_map reaches an attribute"),
    ("return '{0:{1.db}}'.format(1, ctx)", "the format field {1.db} of .format reaches"),
    ("fmt = '{0.' + 'db}'\nreturn fmt.format(ctx)", "line 2: str.format on a format string built at run time (fmt) is not allowed"),
    ("return str.format('{0.db}', ctx)", "str.format on a format string built at run time (str) is not allowed"),
    ("f = '{}'.upper().format\nreturn f(ctx)", "str.format on a format string built at run time ('{}'.upper()) is not allowed"),
    ("return '{0.db'.format(ctx)", "the format string '{0.db' of .format does not parse"),
    # attribute names built at run time
    ("name = 'd' + 'b'\nreturn hasattr(ctx, name)", "line 2: hasattr() with an attribute name built at run time is not allowed"),
    ("h = hasattr\nreturn h(ctx, 'db')", "line 1: 'hasattr' is not allowed other than called directly"),
    ("return hasattr(ctx, '_dict')", "access to attribute '_dict' is not allowed (in hasattr)"),
    # generator, coroutine, frame, traceback and code introspection
    (
        "async def c():\n    pass\nreturn c().cr_frame",
        "line 3: access to attribute 'cr_frame' is not allowed (frame and code introspection)",
    ),
    ("async def a():\n    yield 1\nreturn a().ag_frame", "access to attribute 'ag_frame' is not allowed (frame and code introspection)"),
    ("def f():\n    pass\nreturn f.f_back.f_builtins", "access to attribute 'f_builtins' is not allowed (frame and code introspection)"),
    (
        "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    return e.with_traceback(None).tb_frame",
        "line 4: access to attribute 'tb_frame'",
    ),
    ("g = (x for x in [1])\nreturn g.gi_code.co_names", "access to attribute 'co_names' is not allowed (frame and code introspection)"),
    ("return f.f_locals", "access to attribute 'f_locals' is not allowed"),
    ("return f.cell_contents", "access to attribute 'cell_contents' is not allowed (class and closure internals)"),
    ("return int.mro()", "access to attribute 'mro' is not allowed"),
    # classes made at run time, text evaluated as code, heap walks
    ("X = type('X', (), {'_' * 2 + 'init' + '_' * 2: f})", "line 1: type() with 3 arguments (it creates a class) is not allowed"),
    ("t = type\nreturn t('X', (), {})", "line 1: assigning 'type' to another name is not allowed"),
    ("return type(*args)", "type() with unpacked or keyword arguments"),
    ("import typing\nreturn typing.get_type_hints(f)", "access to attribute 'get_type_hints' is not allowed (it evaluates text as code)"),
    ("from typing import ForwardRef", "importing 'ForwardRef' from 'typing' is not allowed"),
    ("return x.get_referrers(ctx)", "access to attribute 'get_referrers' is not allowed (it walks the objects of the heap)"),
    # codec tricks: text the check never saw
    ("return b'\\\\x5f\\\\x5f'.decode('unicode_escape')", "the codec 'unicode_escape' of .decode() is not allowed"),
    ("return 'k'.encode(encoding='rot_13')", "the codec 'rot_13' of .encode() is not allowed"),
    ("return str(b'x', 'raw_unicode_escape')", "the codec 'raw_unicode_escape' of str() is not allowed"),
    ("c = 'hex'\nreturn data.decode(c)", "line 2: .decode() with a codec named at run time is not allowed"),
    # attributes and dunders reached without a dot
    ("from statistics import sys", "importing 'sys' from 'statistics' is not allowed"),
    (
        "match ctx:\n    case object(__class__=c):\n        return c",
        "line 2: access to attribute '__class__' is not allowed (in a class pattern)",
    ),
    (
        "match g:\n    case object(gi_frame=f):\n        return f",
        "access to attribute 'gi_frame' is not allowed (frame and code introspection) (in a class pattern)",
    ),
    ("try:\n    pass\nexcept Exception as __builtins__:\n    pass", "line 3: dunder name '__builtins__' is not allowed"),
    ("return dict(__builtins__=1)", "dunder name '__builtins__' is not allowed"),
]


@pytest.mark.parametrize(("code", "reason"), HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_snippet_is_refused_with_a_reason_naming_the_construct(code: str, reason: str) -> None:
    problems = check_tool_code(code)
    assert any(reason in p for p in problems), problems
    assert all(p.startswith("line ") for p in problems)


def test_there_are_enough_hostile_snippets() -> None:
    assert len(HOSTILE) >= 60


# --- real tool code still passes ----------------------------------------------------------


def _blueprint_codes() -> list[tuple[str, str]]:
    """The custom actions' bodies of the shipped catalogue and the test blueprints."""
    files = [*(ROOT / "src" / "envsynth" / "catalog").glob("*.yaml"), *(ROOT / "tests" / "data").rglob("*.yaml")]
    out = []
    for path in sorted(files):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):
            continue  # tests/data/broken holds files that do not load on purpose
        actions = data.get("actions") if isinstance(data, dict) else None
        for action in actions if isinstance(actions, list) else []:
            if isinstance(action, dict) and action.get("kind") == "custom" and isinstance(action.get("code"), str):
                out.append((f"{path.name}:{action['name']}", action["code"]))
    return out


def _scripted_codes() -> list[tuple[str, str]]:
    """The code agent's scripted replies (the bodies the LLM builder's tests run)."""
    folder = ROOT / "src" / "envsynth" / "llmbuild" / "scripted" / "code"
    return [(path.name, path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.txt"))]


LEGIT = [
    "import datetime as dt\nd = dt.date.fromisoformat(ctx.today())\nreturn {'day': d.isoformat(), 'week': d.isocalendar()[1]}",
    "from collections import Counter\nrows = ctx.all('SELECT * FROM \"t\"', (), 't')\nreturn dict(Counter(r['status'] for r in rows))",
    "from operator import itemgetter\nrows = sorted(ctx.all('SELECT * FROM \"t\"', (), 't'), key=itemgetter('price'))\nreturn {'rows': rows}",
    "import operator\nreturn {'total': operator.add(1, 2)}",
    "return {'label': '{} of {}'.format(n, total), 'named': '{name}: {count:>4}'.format_map({'name': 'a', 'count': 3})}",
    "return {'price': '{:.2f}'.format(price), 'nested': '{0:{1}}'.format(price, '>10')}",
    "import string\nreturn {'msg': string.Template('$who owes $amount').substitute(who='Ana', amount=3), 'abc': string.ascii_lowercase}",
    "if not hasattr(note, 'upper'):\n    raise ToolError('The note must be text.', code='bad_note')\nreturn {'note': note.upper()}",
    "if type(x) is int:\n    x = float(x)\nreturn {'x': x}",
    "return {'type': type, 'raw': data.encode('utf-8').decode('utf-8'), 'n': len(str(b'ab', 'ascii'))}",
    "import json, math, re, decimal, statistics, itertools, functools, textwrap, fractions, cmath, typing\nreturn {'m': statistics.mean([1, 2]), 'f': math.floor(2.5)}",
    "match status:\n    case 'open' | 'pending':\n        return {'ok': True}\n    case {'kind': kind}:\n        return {'kind': kind}\n    case str(s):\n        return {'s': s}\nreturn {'ok': False}",
    "from decimal import ROUND_HALF_UP, Decimal\nreturn {'amount': float(Decimal(str(amount)).quantize(Decimal('0.01'), rounding=ROUND_HALF_UP))}",
    "try:\n    value = json.loads(payload)\nexcept ValueError as exc:\n    raise ToolError(f'Bad payload: {exc}', code='bad_payload') from None\nreturn {'keys': sorted(value)}",
    "code = 'GIFT-' + str(ctx.rng.randrange(1000, 10000))\nreturn {'code': code, 'when': ctx.now(), 'f': f'{amount:.2f} for {customer[\"full_name\"]}'}",
]


@pytest.mark.parametrize(("name", "code"), _blueprint_codes() + _scripted_codes())
def test_shipped_tool_code_passes(name: str, code: str) -> None:
    assert check_tool_code(code) == [], name


@pytest.mark.parametrize("code", LEGIT, ids=[f"legit{i}" for i in range(len(LEGIT))])
def test_ordinary_tool_code_passes(code: str) -> None:
    assert check_tool_code(code) == []


def test_the_shipped_code_is_found() -> None:
    assert len(_blueprint_codes()) >= 8 and len(_scripted_codes()) >= 5


# --- generated snippets ---------------------------------------------------------------------

SAFE_NAMES = ["x", "y", "rows", "ctx", "db", "len", "abs", "sorted", "math", "amount"]
SAFE_ATTRIBUTES = ["one", "count", "upper", "strip", "floor", "get", "items", "isoformat"]
SAFE_TEXTS = ["", "a", "open", "SELECT 1", "{}", "{0}", "x.y"]
FORBIDDEN = sorted(FORBIDDEN_NAMES)
BAD_ATTRIBUTES = [*sorted(FORBIDDEN_ATTRIBUTES), "co_names", "tb_lineno", "__class__", "_private"]


def _expressions(names: st.SearchStrategy[str], attributes: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Python expressions of a small grammar: names, literals, calls, attributes, subscripts, operators."""
    leaves = names | st.integers(-5, 99).map(str) | st.sampled_from(SAFE_TEXTS).map(repr)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return (
            st.tuples(inner, st.lists(inner, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})")
            | st.tuples(inner, attributes).map(lambda t: f"({t[0]}).{t[1]}")
            | st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]")
            | st.tuples(inner, st.sampled_from(["+", "*", "==", "and", "or"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
            | st.lists(inner, max_size=3).map(lambda xs: f"[{', '.join(xs)}]")
        )

    return st.recursive(leaves, extend, max_leaves=6)


def _statements(expr: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """One statement (its lines) using the expressions: an assignment, an ``if``, a loop, a return."""
    return (
        expr.map(lambda e: f"y = {e}")
        | expr.map(lambda e: f"return {e}")
        | expr
        | st.tuples(expr, expr).map(lambda t: f"if {t[0]}:\n    x = {t[1]}")
        | expr.map(lambda e: f"for x in {e}:\n    pass")
        | st.sampled_from(["import math", "from collections import Counter", "import datetime as dt"])
    )


SAFE_STATEMENTS = _statements(_expressions(st.sampled_from(SAFE_NAMES), st.sampled_from(SAFE_ATTRIBUTES)))
ANY_STATEMENTS = _statements(_expressions(st.sampled_from(SAFE_NAMES + FORBIDDEN), st.sampled_from(SAFE_ATTRIBUTES + BAD_ATTRIBUTES)))


def _body(statements: list[str]) -> str:
    return "\n".join(statements)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(ANY_STATEMENTS, min_size=1, max_size=5))
def test_the_check_never_crashes_on_generated_code(statements: list[str]) -> None:
    problems = check_tool_code(_body(statements))
    assert isinstance(problems, list) and all(isinstance(p, str) and p.startswith("line ") for p in problems)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(SAFE_STATEMENTS, max_size=4), st.sampled_from(FORBIDDEN), st.integers(0, 4), st.booleans())
def test_a_forbidden_name_anywhere_is_refused_at_its_line(statements: list[str], name: str, where: int, as_call: bool) -> None:
    where = min(where, len(statements))
    before = sum(s.count("\n") + 1 for s in statements[:where])
    body = _body([*statements[:where], f"y = {name}(x)" if as_call else f"y = [{name}]", *statements[where:]])
    assert f"line {before + 1}: {name!r} is not allowed" in check_tool_code(body)


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(SAFE_STATEMENTS, max_size=4), st.sampled_from(BAD_ATTRIBUTES), st.sampled_from(SAFE_NAMES))
def test_a_forbidden_attribute_anywhere_is_refused(statements: list[str], attribute: str, receiver: str) -> None:
    body = _body([*statements, f"return {receiver}.{attribute}"])
    assert any(f"access to attribute {attribute!r} is not allowed" in p for p in check_tool_code(body))


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(SAFE_STATEMENTS, min_size=1, max_size=5))
def test_generated_code_of_safe_names_passes(statements: list[str]) -> None:
    assert check_tool_code(_body(statements)) == []


@settings(max_examples=100, deadline=None, database=None)
@given(st.text(max_size=200))
def test_the_check_never_crashes_on_arbitrary_text(text: str) -> None:
    assert all(p.startswith("line ") for p in check_tool_code(text))
