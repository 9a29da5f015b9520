"""The condition language evaluated in Python: envsynth.blueprint.expr (parse, render) + envsynth.runtime.evaluate.

Every case states a condition as a blueprint writes it and the value Python itself gives for it,
over small row dicts; nothing is built.

Seeded bugs this module catches (each made by hand, the tests run, then reverted):
- ``and`` and ``or`` swapped when rendering (expr._render): test_boolean_operators,
  test_or_short_circuits_a_guard and test_precedence_of_not_and_or fail;
- ``<=`` rendered as ``<`` (expr._CMP): test_comparisons fails;
- ``all(...)`` evaluated as ``any`` over the selected rows (evaluate.all_rows): test_row_functions fails;
- durations subtracted where they are added (``_date_add`` bound to ``date_sub`` in evaluate._GLOBALS):
  test_dates_and_durations fails.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from envsynth.blueprint import expr as X
from envsynth.errors import EnvsynthError
from envsynth.runtime import evaluate as E

NOW = "2026-03-15T12:00:00"
ROWS: dict[str, list[dict[str, Any]]] = {
    "book": [
        {"book_id": "b1", "genre": "fiction", "price": 12.0, "stock": 3},
        {"book_id": "b2", "genre": "fiction", "price": 30.0, "stock": 0},
        {"book_id": "b3", "genre": "poetry", "price": 8.5, "stock": 7},
    ],
    "line": [
        {"line_id": "l1", "order_id": "o1", "returned": True},
        {"line_id": "l2", "order_id": "o1", "returned": True},
        {"line_id": "l3", "order_id": "o2", "returned": False},
        {"line_id": "l4", "order_id": "o2", "returned": True},
    ],
}
TABLES = {"fee": {"express": {"true": 9.5, "false": 4.0}, "standard": {"true": 3.0, "false": 0.0}}}


def ev(source: str, **names: Any) -> Any:
    """``source`` parsed, checked, rendered and evaluated as the tester and the solver do."""
    return E.evaluate(X.compile_eval(X.parse(source)), {**names, **E.row_functions(ROWS, NOW, TABLES)})


@pytest.mark.parametrize(("a", "b"), list(itertools.product([True, False], repeat=2)))
def test_boolean_operators(a: bool, b: bool) -> None:
    assert ev("a and b", a=a, b=b) is (a and b)
    assert ev("a or b", a=a, b=b) is (a or b)
    assert ev("not a", a=a) is (not a)
    assert ev("a and b and not a", a=a, b=b) is False


@pytest.mark.parametrize(("a", "b", "c"), list(itertools.product([True, False], repeat=3)))
def test_precedence_of_not_and_or(a: bool, b: bool, c: bool) -> None:
    assert ev("a or b and c", a=a, b=b, c=c) is (a or (b and c))
    assert ev("not a and b or c", a=a, b=b, c=c) is (((not a) and b) or c)
    assert ev("(a or b) and c", a=a, b=b, c=c) is ((a or b) and c)


def test_or_short_circuits_a_guard() -> None:
    """``x is None or x.price > 3`` on an unbound alias is true, never an error."""
    assert ev("book is None or book.price > 3", book=None) is True
    assert ev("book is not None and book.price > 3", book=None) is False
    assert ev("book is not None and book.price > 3", book=ROWS["book"][0]) is True


@pytest.mark.parametrize("x", [1, 2, 3, 4])
def test_comparisons(x: int) -> None:
    assert ev("x <= 3", x=x) is (x <= 3)
    assert ev("x < 3", x=x) is (x < 3)
    assert ev("x >= 2", x=x) is (x >= 2)
    assert ev("x > 2", x=x) is (x > 2)
    assert ev("x == 2", x=x) is (x == 2)
    assert ev("x != 2", x=x) is (x != 2)
    assert ev("1 < x <= 3", x=x) is (1 < x <= 3)
    assert ev("x in [1, 3]", x=x) is (x in (1, 3))
    assert ev("x not in [1, 3]", x=x) is (x not in (1, 3))


def test_fields_of_bound_rows_and_arithmetic() -> None:
    book = ROWS["book"][0]
    assert ev("book.stock >= quantity", book=book, quantity=3) is True
    assert ev("book.stock >= quantity", book=book, quantity=4) is False
    assert ev("book.price * quantity - 1", book=book, quantity=2) == 23.0
    assert ev("book.stock % 2 == 1 and -book.stock < 0", book=book) is True
    assert ev("abs(a - b) + round(2.345, 2) + len('abc') + min(4, 2) + max(1, 5)", a=1, b=4) == pytest.approx(3 + 2.35 + 3 + 2 + 5)
    assert ev("lower(name) == 'ada'", name="ADA") is True
    assert ev("'x' if book.stock > 5 else 'y'", book=book) == "y"


def test_row_functions() -> None:
    assert ev("exists(book, genre='fiction')") is True
    assert ev("exists(book, genre='history')") is False
    assert ev("count(book, genre='fiction') == 2") is True
    assert ev("count(book, genre=g)", g="poetry") == 1
    assert ev("any(book, stock=0)") is True
    assert ev("all(line, where(order_id='o1'), returned=True)") is True
    assert ev("all(line, where(order_id='o2'), returned=True)") is False  # l3 is not returned
    assert ev("all(line, where(order_id='o9'), returned=False)") is True  # no row selected: vacuously true


def test_lookup_tables() -> None:
    assert ev("lookup('fee', speed, member)", speed="express", member=True) == 9.5
    assert ev("lookup('fee', speed, member)", speed="standard", member=False) == 0.0
    assert ev("lookup('fee', 'overnight', True)") is None


def test_dates_and_durations() -> None:
    assert ev("today()") == "2026-03-15" and ev("now()") == NOW
    assert ev("today() + days(3)") == "2026-03-18"
    assert ev("now() - hours(2)") == "2026-03-15T10:00:00"
    assert ev("placed_at < now() - days(1)", placed_at="2026-03-13T09:00:00") is True
    assert ev("placed_at < now() - days(1)", placed_at="2026-03-14T13:00:00") is False
    assert ev("due - today() > days(1)", due="2026-03-20") is True


@pytest.mark.parametrize(
    "source",
    [
        "__import__('os')",  # a call outside the language
        "book.author.name",  # attribute access deeper than alias.field
        "lambda: 1",
        "_exists('book', {})",  # the rendered helpers are not names a condition may use
        "a ** 2",
        "book._secret",
        "exists(book, **kw)",
        "all(line, returned=True, where(order_id='o1'))",
    ],
)
def test_outside_the_language_is_refused(source: str) -> None:
    with pytest.raises(X.ExprError) as info:
        X.parse(source)
    assert isinstance(info.value, EnvsynthError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("book.price > 3", {"book": None}),  # an alias not bound
        ("x < 3", {"x": None}),  # a value of another kind
        ("placed_at + days(1) > now()", {"placed_at": "not a date"}),
        ("1 / x > 0", {"x": 0}),
        ("missing > 1", {}),
    ],
)
def test_what_does_not_fit_raises_an_evaluation_error(source: str, names: dict[str, Any]) -> None:
    """The failures callers read as "the condition does not hold" are exactly :data:`EVALUATION_ERRORS`."""
    with pytest.raises(E.EVALUATION_ERRORS):
        ev(source, **names)
