"""The fixture solver (envsynth.testing.fixtures): the fixtures it builds are judged by the generated tools themselves.

The bookshop blueprint is compiled in memory (no catalogue build). A fixture the solver says
satisfies a tool's pre-conditions must make that tool succeed on a real database; one where
it made a condition false must make the tool refuse; a condition steered to true or false
must read true or false to Python.

Seeded bugs this module catches (each made by hand in fixtures.py, the tests run, then reverted):
- ``_ordered`` moving a value down for ``>`` (``v - step - spread``): test_make_steers_a_parameter
  [True-quantity > 7] and [False-quantity <= 3] fail;
- ``_NEGATE[ast.GtE]`` = ``ast.Gt`` (a comparison flipped: "make x >= v false" gives x > v):
  test_make_steers_a_parameter[False-quantity >= 7], [False-3 >= quantity] and
  test_a_condition_made_false_makes_the_tool_refuse fail;
- ``_MIRROR[ast.Lt]`` = ``ast.GtE`` (a parameter on the right steered the wrong way):
  test_make_steers_a_parameter[True-7 < quantity] and [False-3 >= quantity] fail;
- ``make`` dropping a ``not`` (``self.make(fx, node.operand, want)``): test_make_steers_a_parameter
  [True-not quantity > 7], [False-not quantity > 7] and test_a_condition_made_false_makes_the_tool_refuse fail;
- ``holds`` swallowing every exception again (``except Exception``): test_holds_lets_a_bug_through fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from envsynth.blueprint import expr as X
from envsynth.blueprint import load_blueprint
from envsynth.compiler.compile import compile_app
from envsynth.runtime import evaluate as E
from envsynth.runtime.app import App
from envsynth.runtime.state import rows_to_bytes_fast
from envsynth.testing.fixtures import Fixture, Solver, Unsolvable

ATTEMPTS = 8


@pytest.fixture(scope="module")
def app(bookshop_blueprint_path) -> App:  # type: ignore[no-untyped-def]
    return compile_app(load_blueprint(bookshop_blueprint_path), 0)


def _solver(app: App, tool: str, seed: int = 0) -> Solver:
    return Solver(app.blueprint, next(s for s in app.specs if s.name == tool), app.order, app.now, seed)


def _call(app: App, tool: str, fx: Fixture) -> Any:
    """The tool called with the fixture's arguments on a database holding the fixture's rows."""
    ep = app.episode(rows_to_bytes_fast(app.schema, app.order, fx.rows))
    try:
        return ep.call(tool, fx.call_args())
    finally:
        ep.close()


def _tools_with_pre(app: App) -> list[str]:
    return [s.name for s in app.specs if s.pre]


def test_solved_fixtures_make_the_tool_succeed(app: App) -> None:
    for name in _tools_with_pre(app):
        solver = _solver(app, name)
        outcomes = []
        for attempt in range(ATTEMPTS):
            fx = solver.base("all", attempt)
            if solver.satisfy(fx, solver.spec.pre):
                outcomes.append(_call(app, name, fx).outcome)
        assert outcomes and set(outcomes) == {"success"}, (name, outcomes)


def test_a_condition_made_false_makes_the_tool_refuse(app: App) -> None:
    refused = 0
    for name in _tools_with_pre(app):
        solver = _solver(app, name)
        for check in solver.spec.pre:
            fx = next(fx for a in range(ATTEMPTS) if solver.satisfy(fx := solver.base("all", a), solver.spec.pre))
            try:
                solver.make(fx, X.parse(check.check).tree, False)
            except Unsolvable:  # (a row bound through another cannot be unbound: the tester reports it "not constructed")
                continue
            solver.rebind(fx)
            assert not solver.holds(fx, check), (name, check.check)
            res = _call(app, name, fx)
            assert res.outcome == "anticipated_rejection", (name, check.check, res.outcome, res.content)
            refused += 1
    assert refused >= 12  # (the "alias is not None" checks are left to the tester's unknown-id cases)


STEERED: list[tuple[str, Callable[[int], bool]]] = [
    ("quantity > 7", lambda q: q > 7),
    ("quantity >= 7", lambda q: q >= 7),
    ("quantity < 3", lambda q: q < 3),
    ("quantity <= 3", lambda q: q <= 3),
    ("quantity == 5", lambda q: q == 5),
    ("quantity != 5", lambda q: q != 5),
    ("7 < quantity", lambda q: q > 7),  # the parameter on the right: the comparison mirrored
    ("3 >= quantity", lambda q: q <= 3),
    ("not quantity > 7", lambda q: not q > 7),
]


@pytest.mark.parametrize(("condition", "python"), STEERED, ids=[c for c, _ in STEERED])
@pytest.mark.parametrize("want", [True, False])
def test_make_steers_a_parameter(app: App, condition: str, python: Callable[[int], bool], want: bool) -> None:
    for seed in range(6):  # several random streams: a bug must not hide behind one lucky draw
        solver = _solver(app, "place_purchase", seed)
        fx = solver.base("all")
        solver.make(fx, X.parse(condition).tree, want)
        assert python(fx.args["quantity"]) is want, (seed, fx.args["quantity"])


@pytest.mark.parametrize("want", [True, False])
def test_make_steers_a_field_of_a_bound_row(app: App, want: bool) -> None:
    solver = _solver(app, "place_purchase")
    fx = solver.base("all")
    solver.make(fx, X.parse("book.price >= 20 and customer.status == 'active'").tree, want)
    solver.rebind(fx)
    book, customer = fx.aliases["book"], fx.aliases["customer"]
    assert book is not None and customer is not None
    assert (book["price"] >= 20 and customer["status"] == "active") is want
    assert book in fx.rows["book"] and customer in fx.rows["customer"]  # the rows themselves changed, not copies


def test_make_steers_a_conjunction(app: App) -> None:
    solver = _solver(app, "place_purchase")
    fx = solver.base("all")
    solver.make(fx, X.parse("quantity > 4 and quantity < 9").tree, True)
    assert 4 < fx.args["quantity"] < 9
    solver.make(fx, X.parse("quantity < 2 or quantity > 30").tree, True)
    assert fx.args["quantity"] < 2 or fx.args["quantity"] > 30


def test_holds_reads_what_does_not_fit_as_false(app: App) -> None:
    solver = _solver(app, "place_purchase")
    fx = solver.base("all")
    fx.aliases["book"] = None  # an alias not bound: book.stock is an evaluation error, read as "does not hold"
    assert solver.holds(fx, X.parse("book.stock >= quantity").tree) is False


def test_holds_lets_a_bug_through(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """Anything but an evaluation error is a bug and is raised, not read as a condition that does not hold."""
    solver = _solver(app, "place_purchase")
    fx = solver.base("all")

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in the evaluator")

    monkeypatch.setattr(E, "evaluate", broken)
    with pytest.raises(RuntimeError, match="a bug in the evaluator"):
        solver.holds(fx, X.parse("quantity > 1").tree)
