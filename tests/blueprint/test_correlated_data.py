"""Correlated sample data and composite keys (docs/blueprints.md 11.7): generators that depend on other
fields of the row, entity-level unique keys honoured by drawn rows, the schema and the tools, and unique
values that never get a made-up suffix."""

from __future__ import annotations

import copy
import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.order import creation_order
from envsynth.compiler.compile import compile_app
from envsynth.runtime.episode import REJECTION, SUCCESS
from envsynth.runtime.state import StateBuilder, read_rows
from envsynth.testing.fixtures import Solver
from envsynth.testing.procedural import test_app as run_tester

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "correlated_data.yaml"
DATA = yaml.safe_load(EXAMPLE.read_text())
BP = from_dict(DATA)


def _t(v: str) -> dt.datetime:
    return dt.datetime.fromisoformat(v if "T" in v else v + "T00:00:00")


def _minutes(a: str, b: str) -> float:
    return (_t(b) - _t(a)).total_seconds() / 60


def _field(d: dict[str, Any], entity: str, name: str) -> dict[str, Any]:
    ent = next(e for e in d["entities"] if e["name"] == entity)
    return next(f for f in ent["fields"] if f["name"] == name)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_drawn_rows_honour_every_correlation(seed: int) -> None:
    rows = StateBuilder(BP, seed, creation_order(BP)).fill()
    flights = rows["flight"]
    assert len(flights) == 20
    assert len({(f["flight_number"], f["day"]) for f in flights}) == 20
    for f in flights:
        assert f["destination"] != f["origin"]
        assert 6 * 60 <= _minutes(f["day"], f["departure_at"]) <= 21 * 60
        assert 35 <= _minutes(f["departure_at"], f["arrival_at"]) <= 180
        if f["status"] == "landed":
            assert 0 <= _minutes(f["arrival_at"], f["landed_at"]) <= 40
        else:
            assert f["landed_at"] is None
    for b in rows["booking"]:
        assert (b["cancelled_at"] is not None) == (b["status"] == "cancelled")


def test_the_sample_state_and_the_schema_hold_the_composite_key() -> None:
    app = compile_app(BP)
    assert 'UNIQUE ("flight_number", "day")' in app.schema
    ep = app.episode()
    f = read_rows(ep.db, BP)["flight"][0]
    with pytest.raises(sqlite3.IntegrityError, match=r"UNIQUE constraint failed: flight\.flight_number, flight\.day"):
        ep.db.execute(
            "INSERT INTO flight VALUES ('fli_000001', ?, ?, 'HNL', 'OGG', ?, ?, 'scheduled', NULL)",
            (f["flight_number"], f["day"], f["departure_at"], f["arrival_at"]),
        )


def test_tools_reject_a_taken_composite_key_and_the_tester_violates_it() -> None:
    app = compile_app(BP)
    ep = app.episode()
    flights = read_rows(ep.db, BP)["flight"]
    a = flights[0]
    other = next(f for f in flights if f["flight_number"] == a["flight_number"] and f["day"] != a["day"])
    new = {k: a[k] for k in ("flight_number", "day", "departure_at", "arrival_at")} | {"origin": "HNL", "destination": "OGG"}
    res = ep.call("add_flight", new)
    assert (res.outcome, res.code) == (REJECTION, "unique:flight_number+day")
    assert res.content == f"A flight with flight number '{a['flight_number']}' and day '{a['day']}' already exists."
    res = ep.call("move_flight", {"flight_id": other["flight_id"], "day": a["day"]})
    assert (res.outcome, res.code) == (REJECTION, "unique:flight_number+day")
    assert ep.call("move_flight", {"flight_id": a["flight_id"], "day": a["day"], "departure_at": a["departure_at"]}).outcome == SUCCESS
    report = run_tester(app)
    cases = {(v.tool, v.case): v for v in report.verdicts}
    for tool in ("add_flight", "move_flight"):
        v = cases[(tool, "violate:unique:flight_number+day")]
        assert v.ok and v.observed == REJECTION
    assert report.passed


def test_the_fixture_solver_keeps_a_when_field_with_its_state() -> None:
    app = compile_app(BP)
    spec = app.spec_by_name["cancel_booking"]
    solver = Solver(BP, spec, app.order, app.now, seed=3)
    for attempt in range(10):
        fx = solver.base("all", attempt)
        for b in fx.rows["booking"]:  # every booking cancelled: the solver must move the bound one back
            b["status"], b["cancelled_at"] = "cancelled", "2026-03-01T10:00:00"
        solver.rebind(fx)
        assert solver.satisfy(fx, spec.pre)
        row = fx.aliases["booking"]
        assert row is not None and row["status"] in ("booked", "checked_in")
        assert row["cancelled_at"] is None


def test_unique_values_are_all_used_before_any_suffix() -> None:
    d = copy.deepcopy(DATA)
    # 4 x 5 = 20 distinct references for 30 rows: refused at load, with the numbers
    _field(d, "booking", "reference")["gen"] = {
        "template": "{a}-{b}",
        "parts": {"a": {"choice": ["Red", "Blue", "Green", "Gold"]}, "b": {"choice": ["One", "Two", "Three", "Four", "Five"]}},
    }
    with pytest.raises(BlueprintError) as err:
        from_dict(d)
    assert err.value.path == "entities[1].fields[1]"
    assert "booking: unique reference has only 20 distinct value(s) for rows: 30" in err.value.message
    # exactly as many values as rows: every one of them, none made up
    d["entities"][1]["rows"] = 20
    bp = from_dict(d)
    for seed in range(5):
        refs = [b["reference"] for b in StateBuilder(bp, seed, creation_order(bp)).fill()["booking"]]
        assert len(set(refs)) == 20
        assert all(r.count("-") == 1 and r.split("-")[1] in ("One", "Two", "Three", "Four", "Five") for r in refs)


def test_a_state_bigger_than_a_unique_generator_holds_what_it_can() -> None:
    # 4 x 10 references the builder cannot list (a bothify part): 60 rows asked, at most 40 exist
    d = copy.deepcopy(DATA)
    _field(d, "booking", "reference")["gen"] = {
        "template": "{a}-{b}",
        "parts": {"a": {"choice": ["Red", "Blue", "Green", "Gold"]}, "b": {"bothify": "#"}},
    }
    d["entities"][1]["rows"] = 10
    bp = from_dict(d)
    refs = [b["reference"] for b in StateBuilder(bp, 1, creation_order(bp)).fill({"flight": 20, "booking": 60})["booking"]]
    assert 30 <= len(refs) <= 40 and len(set(refs)) == len(refs)  # no row made up, no crash
    assert all(r.split("-")[0] in ("Red", "Blue", "Green", "Gold") and len(r.split("-")[1]) == 1 for r in refs)


def test_a_composite_key_with_too_few_values_is_a_load_error() -> None:
    d = copy.deepcopy(DATA)
    _field(d, "flight", "day")["gen"] = {"dates": ["-1d", "+2d"]}  # 4 numbers x 4 days = 16 < 20 rows
    with pytest.raises(BlueprintError, match=r"entities\[0\]\.unique\[0\]: flight: unique flight_number \+ day has only 16 distinct"):
        from_dict(d)


@pytest.mark.parametrize(
    ("entity", "field", "gen", "path", "message"),
    [
        ("flight", "arrival_at", {"after": "origin", "by": ["1h", "2h"]}, "gen.after", "after needs date or datetime fields"),
        ("flight", "arrival_at", {"after": "departure_at", "by": ["1h", "soon"]}, "gen.by", "bad distance 'soon'"),
        ("flight", "arrival_at", {"after": "departure_at", "by": ["3h", "1h"]}, "gen.by", "the least distance is more than the most"),
        ("flight", "arrival_at", {"after": "departure", "by": ["1h", "2h"]}, "gen.after", "flight has no field 'departure'"),
        ("flight", "arrival_at", {"after": "departure_at"}, "", "after/before and by go together"),
        ("flight", "landed_at", {"dates": ["-1d", "+1d"], "when": {"status": "arrived"}}, "gen.when.status", "'arrived' is not a value"),
        ("flight", "arrival_at", {"dates": ["-1d", "+1d"], "when": {"status": "landed"}}, "gen.when", "make it nullable: true"),
        ("flight", "destination", {"choice": ["HNL"], "differs_from": "origin"}, "gen.differs_from", "has only 1 possible value"),
        ("flight", "destination", {"choice": ["HNL", "OGG"], "differs_from": "day"}, "gen.differs_from", "never hold the same value"),
        ("flight", "departure_at", {"after": "arrival_at", "by": ["1h", "2h"]}, "", "depends on itself"),
    ],
)
def test_correlation_mistakes_are_load_errors(entity: str, field: str, gen: dict[str, Any], path: str, message: str) -> None:
    d = copy.deepcopy(DATA)
    _field(d, entity, field)["gen"] = gen
    with pytest.raises(BlueprintError) as err:
        from_dict(d)
    assert path in err.value.path
    assert message in err.value.message


def test_a_composite_key_names_real_fields() -> None:
    d = copy.deepcopy(DATA)
    d["entities"][0]["unique"] = [["flight_number", "date"]]
    with pytest.raises(BlueprintError, match=r"entities\[0\].*unique: 'date' is not a field of this entity"):
        from_dict(d)
    d["entities"][0]["unique"] = [["flight_number"]]
    with pytest.raises(BlueprintError, match="not a composite key"):
        from_dict(d)


def test_task_arguments_for_correlated_fields_come_from_one_pool_row() -> None:
    app = compile_app(BP)
    pool = StateBuilder(BP, 7919, app.order).fill({e.name: 24 for e in BP.entities})
    rows = StateBuilder(BP, 5, app.order).fill()
    solver = Solver(BP, app.spec_by_name["add_flight"], app.order, app.now, seed=11)
    for attempt in range(20):
        args = solver.on_rows(rows, {}, "all", attempt, pool).args
        assert args["origin"] != args["destination"]
        assert 6 * 60 <= _minutes(args["day"], args["departure_at"]) <= 21 * 60
        assert 35 <= _minutes(args["departure_at"], args["arrival_at"]) <= 180


def test_a_key_over_a_derived_field_is_redrawn_through_its_generator() -> None:
    d = copy.deepcopy(DATA)
    d["entities"][0]["unique"] = [["flight_number", "departure_at"]]
    _field(d, "flight", "departure_at")["gen"] = {"after": "day", "by": ["6h", "6h"]}  # 4 x 7 keys: collisions are redrawn
    bp = from_dict(d)
    for seed in range(10):
        flights = StateBuilder(bp, seed, creation_order(bp)).fill()["flight"]
        assert len({(f["flight_number"], f["departure_at"]) for f in flights}) == len(flights) >= 15
        for f in flights:
            assert _minutes(f["day"], f["departure_at"]) == 6 * 60
            assert 35 <= _minutes(f["departure_at"], f["arrival_at"]) <= 180


def test_a_derived_field_given_to_the_builder_is_kept() -> None:
    """Task distractors copy a row with a derived field fixed (a destination, an arrival): the value is kept as given."""
    b = StateBuilder(BP, 3, creation_order(BP))
    b.fill()
    fixed = {"origin": "HNL", "destination": "OGG", "departure_at": "2026-03-15T09:00:00", "arrival_at": "2026-03-15T10:00:00"}
    row = b.add(BP.entity("flight"), fixed)
    assert row is not None
    assert {k: row[k] for k in fixed} == fixed


def test_a_row_whose_fixed_composite_key_is_taken_is_not_added() -> None:
    """A caller fixing every field of a composite key already taken gets no row (not a row the database refuses)."""
    b = StateBuilder(BP, 5, creation_order(BP))
    rows = b.fill()
    taken = rows["flight"][0]
    n = len(rows["flight"])
    assert b.add(BP.entity("flight"), {"flight_number": taken["flight_number"], "day": taken["day"]}) is None
    assert len(b.rows["flight"]) == n
