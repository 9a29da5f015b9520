"""Language v2 effects: list parameters, for_each, also on every write action, increments and NULL.

The example tests/data/examples/list_effects.yaml (quoted in docs/blueprints.md section 11.1
and 11.2) is built once; its calls are checked against the rows of the database.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsynth import build_app, load_blueprint
from envsynth.blueprint import BlueprintError, from_dict
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.runtime.episode import REJECTION, SUCCESS
from envsynth.testing.procedural import test_app

ROOT = Path(__file__).parent.parent.parent
EXAMPLE = ROOT / "tests" / "data" / "examples" / "list_effects.yaml"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    built = build_app(load_blueprint(EXAMPLE), tmp_path_factory.mktemp("skyhop"))
    assert built.report.passed, [v for v in built.report.verdicts if not v.ok]
    return built.app


def _rows(ep: Any, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return ep.db.execute(sql, args).fetchall()


def _pay(ep: Any, amount: float = 10.0) -> list[dict[str, Any]]:
    return [{"payment_method_id": _rows(ep, "SELECT payment_method_id FROM payment_method ORDER BY 1")[0][0], "amount": amount}]


def _dump(ep: Any) -> dict[str, list[tuple[Any, ...]]]:
    tables = [r[0] for r in _rows(ep, "SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: sorted(_rows(ep, f'SELECT * FROM "{t}"'), key=repr) for t in tables}


# -- the example builds and its procedural tests cover the new keys ------------------------------


def test_example_passes_with_list_cases_and_no_unconstructed(app: App) -> None:
    report = test_app(app)
    assert report.passed
    assert report.counts()["not_constructed"] == 0
    cases = {(v.tool, v.case) for v in report.verdicts}
    for case in (
        "violate:exists:flights",
        "violate:exists:payments_payment_method_id_rows",
        "invalid:payments:item_type:amount",
        "invalid:payments:missing_field:payment_method_id",
        "invalid:flight_ids:unique_items",
        "invalid:flight_ids:min_items",
        "invalid:flight_ids:max_items",
        "invalid:passengers:missing_field:dob",
        "invalid:passengers:item_type:first_name",
        "invalid:passengers:item_pattern:dob",
        "invalid:passengers:unknown_item_field",
    ):
        assert ("book_reservation", case) in cases


def test_json_schema_of_list_parameters(app: App) -> None:
    props = app.spec_by_name["book_reservation"].openai_schema()["function"]["parameters"]["properties"]
    assert props["flight_ids"] | {"description": ""} == {
        "type": "array",
        "description": "",
        "items": {"type": "string"},
        "minItems": 1,
        "maxItems": 4,
        "uniqueItems": True,
    }
    passengers = props["passengers"]
    assert passengers["minItems"] == 1 and passengers["maxItems"] == 5
    assert passengers["items"]["type"] == "object"
    assert passengers["items"]["required"] == ["first_name", "last_name", "dob"]
    assert passengers["items"]["additionalProperties"] is False
    assert passengers["items"]["properties"]["dob"]["pattern"] == r"^\d{4}-\d{2}-\d{2}$"


# -- real database effects ----------------------------------------------------------------------------


def _ids(ep: Any, table: str, where: str = "1", *args: Any) -> list[str]:
    return [r[0] for r in _rows(ep, f'SELECT * FROM "{table}" WHERE {where} ORDER BY 1', *args)]


def test_book_inserts_one_row_per_item_and_updates_each_listed_row(app: App) -> None:
    ep = app.episode()
    f1, f2 = _ids(ep, "flight")[:2]
    customer = _ids(ep, "customer")[0]
    seats = dict(_rows(ep, "SELECT flight_id, seats_booked FROM flight"))
    (spent,) = _rows(ep, "SELECT total_spent FROM customer WHERE customer_id = ?", customer)[0]
    people = [
        {"first_name": "Ada", "last_name": "Lovelace", "dob": "1990-12-10"},
        {"first_name": "Alan", "last_name": "Turing", "dob": "1992-06-23"},
        {"first_name": "Grace", "last_name": "Hopper", "dob": "2015-12-09"},
    ]
    res = ep.call(
        "book_reservation",
        {"customer_id": customer, "amount_due": 420.5, "flight_ids": [f1, f2], "passengers": people, "payments": _pay(ep)},
    )
    assert res.outcome == SUCCESS, res.content
    rid = res.data["reservation_id"]
    assert res.data["passenger_count"] == 3
    segs = _rows(ep, "SELECT flight_id, price, status FROM segment WHERE reservation_id = ? ORDER BY flight_id", rid)
    prices = dict(_rows(ep, "SELECT flight_id, price FROM flight"))
    assert segs == sorted([(f1, prices[f1], "confirmed"), (f2, prices[f2], "confirmed")])
    names = _rows(ep, "SELECT first_name, last_name, dob FROM passenger WHERE reservation_id = ? ORDER BY dob", rid)
    assert names == [("Ada", "Lovelace", "1990-12-10"), ("Alan", "Turing", "1992-06-23"), ("Grace", "Hopper", "2015-12-09")]
    after = dict(_rows(ep, "SELECT flight_id, seats_booked FROM flight"))
    assert after == {k: v + 3 if k in (f1, f2) else v for k, v in seats.items()}
    assert _rows(ep, "SELECT total_spent FROM customer WHERE customer_id = ?", customer)[0][0] == pytest.approx(spent + 420.5)
    method = _pay(ep)[0]["payment_method_id"]
    assert _rows(ep, "SELECT payment_method_id, amount, status FROM payment WHERE reservation_id = ?", rid) == [(method, 10.0, "paid")]


def test_an_unknown_id_in_a_list_is_a_rejection_naming_it_and_changes_nothing(app: App) -> None:
    ep = app.episode()
    before = _dump(ep)
    f1 = _ids(ep, "flight")[0]
    args = {"customer_id": _ids(ep, "customer")[0], "amount_due": 10, "flight_ids": [f1, "flt_999999"]}
    res = ep.call(
        "book_reservation", args | {"passengers": [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"}], "payments": _pay(ep)}
    )
    assert (res.outcome, res.code) == (REJECTION, "exists:flights")
    assert res.content == "No flight with flight id 'flt_999999'."
    assert _dump(ep) == before


def test_an_unknown_id_in_a_list_item_is_a_rejection_naming_it(app: App) -> None:
    ep = app.episode()
    before = _dump(ep)
    people = [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"}]
    payments = [*_pay(ep), {"payment_method_id": "pmt_999999", "amount": 3.5}]
    args = {"customer_id": _ids(ep, "customer")[0], "amount_due": 10, "flight_ids": _ids(ep, "flight")[:1], "passengers": people}
    res = ep.call("book_reservation", args | {"payments": payments})
    assert (res.outcome, res.code) == (REJECTION, "exists:payments_payment_method_id_rows")
    assert res.content == "No payment method with payment method id 'pmt_999999'."
    assert _dump(ep) == before


@pytest.mark.parametrize(
    "flights, passengers, words",
    [
        ("twice", [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"}], "is given twice; give each id once"),
        ("one", [{"first_name": "A", "last_name": "B"}], "passengers.0.dob"),
        ("one", [{"first_name": "A", "last_name": "B", "dob": "2000-02-30"}], "not a date of the calendar"),
        ("one", [], "passengers"),
        ("one", [{"first_name": "A", "last_name": "B", "dob": "2000-01-01", "seat": "1A"}], "unexpected argument"),
    ],
)
def test_bad_list_arguments_are_invalid_arguments(app: App, flights: str, passengers: list[Any], words: str) -> None:
    ep = app.episode()
    f1 = _ids(ep, "flight")[0]
    ids = [f1, f1] if flights == "twice" else [f1]
    res = ep.call(
        "book_reservation",
        {"customer_id": _ids(ep, "customer")[0], "amount_due": 10, "flight_ids": ids, "passengers": passengers, "payments": _pay(ep)},
    )
    assert (res.outcome, res.code) == (REJECTION, "invalid_arguments")
    assert words in res.content
    assert "Value error" not in res.content


def test_for_each_over_matched_rows_changes_exactly_those_rows(app: App) -> None:
    ep = app.episode()
    flight = next(f for f in _ids(ep, "flight", "status = 'scheduled'") if _ids(ep, "segment", "flight_id = ?", f))
    before = _dump(ep)
    on_it = set(_ids(ep, "segment", "flight_id = ? AND status = 'confirmed'", flight))
    booked = {
        r[0]
        for r in _rows(
            ep,
            "SELECT DISTINCT r.reservation_id FROM reservation r JOIN segment s USING (reservation_id) WHERE s.flight_id = ? AND r.status = 'booked'",
            flight,
        )
    }
    res = ep.call("cancel_flight", {"flight_id": flight})
    assert res.outcome == SUCCESS, res.content
    after = _dump(ep)
    assert set(_ids(ep, "segment", "status = 'cancelled' AND flight_id = ?", flight)) >= on_it
    changed_segments = {a[0] for a, b in zip(after["segment"], before["segment"]) if a != b}
    assert changed_segments == on_it
    changed_res = {a[0] for a, b in zip(after["reservation"], before["reservation"]) if a != b}
    assert changed_res == booked
    assert all(
        s == "disrupted"
        for (s,) in _rows(ep, f"SELECT status FROM reservation WHERE reservation_id IN ({','.join('?' * len(booked))})", *booked)
    )
    assert after["customer"] == before["customer"] and after["payment"] == before["payment"]


def test_cancel_refunds_every_payment_sets_null_and_decrements(app: App) -> None:
    ep = app.episode()
    rid = _ids(ep, "reservation")[0]
    ep.db.execute("UPDATE reservation SET status = 'booked', promo_code = 'PROMO-12' WHERE reservation_id = ?", (rid,))
    method = _pay(ep)[0]["payment_method_id"]
    ep.db.execute(
        "INSERT INTO payment VALUES ('pay_000001', ?, ?, 10, 'paid', NULL), ('pay_000002', ?, ?, 5, 'refunded', NULL)",
        (rid, method, rid, method),
    )
    cid, due = _rows(ep, "SELECT customer_id, amount_due FROM reservation WHERE reservation_id = ?", rid)[0]
    ep.db.execute("UPDATE customer SET total_spent = ? WHERE customer_id = ?", (due + 100, cid))
    paid = _ids(ep, "payment", "reservation_id = ? AND status = 'paid'", rid)
    others = _rows(ep, "SELECT * FROM payment WHERE reservation_id != ?", rid)
    res = ep.call("cancel_reservation", {"reservation_id": rid})
    assert res.outcome == SUCCESS, res.content
    assert res.data["promo_code"] is None and res.data["status"] == "cancelled"
    got = _rows(ep, "SELECT payment_id, status, refunded_at FROM payment WHERE reservation_id = ? ORDER BY 1", rid)
    assert [r for r in got if r[0] in paid] == [(p, "refunded", app.now) for p in paid]
    assert ("pay_000002", "refunded", None) in got  # a payment already refunded is left as it was
    assert _rows(ep, "SELECT * FROM payment WHERE reservation_id != ?", rid) == others
    assert _rows(ep, "SELECT total_spent FROM customer WHERE customer_id = ?", cid)[0][0] == pytest.approx(100)


def test_also_on_create_and_delete(app: App) -> None:
    ep = app.episode()
    rid, paid = _rows(ep, "SELECT reservation_id, paid_total FROM reservation ORDER BY 1")[0]
    res = ep.call("add_payment", {"reservation_id": rid, "payment_method_id": _pay(ep)[0]["payment_method_id"], "amount": 12.25})
    assert res.outcome == SUCCESS, res.content
    assert _rows(ep, "SELECT paid_total FROM reservation WHERE reservation_id = ?", rid)[0][0] == pytest.approx(paid + 12.25)
    ep.db.execute("UPDATE reservation SET passenger_count = 2 WHERE reservation_id = ?", (rid,))
    ep.db.execute("INSERT INTO passenger VALUES ('psg_000001', ?, 'X', 'Y', '2001-01-01')", (rid,))
    res = ep.call("remove_passenger", {"passenger_id": "psg_000001"})
    assert res.outcome == SUCCESS, res.content
    assert _rows(ep, "SELECT passenger_count FROM reservation WHERE reservation_id = ?", rid)[0][0] == 1
    assert not _ids(ep, "passenger", "passenger_id = 'psg_000001'")


# -- the tester catches a for_each that does not do what it declares ----------------------------------


@pytest.mark.parametrize(
    "drop, words",
    [
        ('    for row_values in each_1:\n        db.execute(\'UPDATE "reservation"', "for_each"),
        ('    for row_values in each_2:\n        db.execute(\'INSERT INTO "passenger"', "passenger"),
    ],
)
def test_tester_catches_missing_for_each_writes(app: App, drop: str, words: str) -> None:
    src = app.module_source
    assert drop in src
    head, tail = src.split(drop, 1)
    broken = head + "    for row_values in []:\n        db.execute('SELECT 1" + tail
    bad = App(app.blueprint, app.specs, broken, app.schema, app.sample_state)
    report = test_app(bad)
    failed = [v for v in report.failures if v.case.startswith("positive")]
    assert failed and any(words in v.detail for v in failed), [v.detail for v in report.failures]


# -- graph and planning see the writes ----------------------------------------------------------------------


def test_specs_declare_for_each_writes_and_graph_has_state_edges(app: App) -> None:
    spec = app.spec_by_name["cancel_flight"]
    assert spec.writes == {"flight": ["status"], "reservation": ["status"], "segment": ["status"]}
    book = app.spec_by_name["book_reservation"]
    assert book.creates == ["passenger", "payment", "reservation", "segment"]
    assert book.writes == {"customer": ["total_spent"], "flight": ["seats_booked"]}
    g = build_graph(app)
    assert g.has_edge("cancel_flight", "get_reservation", kind="state")
    assert g.has_edge("book_reservation", "cancel_flight", kind="state")
    assert g.has_edge("cancel_flight", "cancel_reservation", kind="logic")  # it makes reservations 'disrupted'


# -- load errors -----------------------------------------------------------------------------------------------


@pytest.fixture
def data() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def _error(data: dict[str, Any], mutate: Any) -> str:
    d = copy.deepcopy(data)
    mutate(d)
    with pytest.raises(BlueprintError) as exc:
        from_dict(d)
    return str(exc.value)


def _action(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in d["actions"] if a["name"] == name)


@pytest.mark.parametrize(
    "mutate, words",
    [
        (
            lambda d: _action(d, "get_reservation").update(also={"reservation": {"amount_due": "1"}}),
            "'also' is only for actions that write (create, update, delete, transition, transfer, book); a get action reads one row",
        ),
        (lambda d: _action(d, "get_reservation").update(for_each=[]), "'for_each' is only for actions that write"),
        (
            lambda d: d["actions"].append(
                {
                    "name": "move_spending",
                    "kind": "transfer",
                    "entity": "customer",
                    "field": "total_spent",
                    "description": "Move spending between customers.",
                    "also": {"source": {"total_spent": "0"}},
                }
            ),
            "source.total_spent is already written by this transfer action; one value per field",
        ),
        (
            lambda d: _action(d, "book_reservation")["params"][1]["items"].update(dob="birthday", seat=3),
            "items.dob: 'birthday' is not an item type; use one of string, text",
        ),
        (
            lambda d: d["actions"].append(
                {
                    "name": "note",
                    "kind": "custom",
                    "entity": "customer",
                    "mode": "read",
                    "code": "return {}",
                    "description": "A custom tool.",
                    "also": {},
                }
            ),
            "a custom action is hand-written code (custom code declares its writes in 'writes', 'creates' and 'deletes')",
        ),
        (
            lambda d: _action(d, "book_reservation")["params"][0].update(items={"a": "string"}),
            "a list parameter has either 'ref: <entity>' (a list of ids, each loading a row) or 'items",
        ),
        (
            lambda d: _action(d, "book_reservation")["params"][1].update(values=["a"], min_items=9),
            "'values' does not apply to a list parameter; bound its length with min_items/max_items; min_items (9) is greater than max_items (5)",
        ),
        (
            lambda d: _action(d, "add_payment").update(also={"reservation": {"amount_due": None}}),
            "reservation.amount_due is not nullable, so it cannot be set to None",
        ),
        (lambda d: _action(d, "add_payment")["set"].update(amount="+= 1"), "a new payment has none; give the value itself"),
        (lambda d: _action(d, "add_payment").update(also={"customer": {"total_spent": "+= 1"}}), "'customer' is not a bound row"),
        (
            lambda d: _action(d, "cancel_reservation").update(also={"reservation": {"amount_due": "0"}}),
            "'reservation' is the row this action changes; put its fields in 'set'",
        ),
        (
            lambda d: _action(d, "book_reservation")["for_each"][2].update(param="amount_due"),
            "'amount_due' is not a list parameter of this action (list parameters: ['flight_ids', 'passengers', 'payments'])",
        ),
        (lambda d: _action(d, "book_reservation")["for_each"][2].pop("insert"), "the items of 'passengers' are not rows"),
        (
            lambda d: _action(d, "book_reservation")["for_each"][2]["set"].update(first_name="traveller.nickname"),
            "an item of the list has no field 'nickname'",
        ),
        (lambda d: _action(d, "cancel_flight")["for_each"][0].update(param="x"), "exactly one"),
        (lambda d: _action(d, "cancel_flight")["for_each"][0].update(**{"as": "flight"}), "'flight' already names a row or parameter"),
        (lambda d: _action(d, "cancel_flight")["for_each"][0]["set"].update(status="+= 1"), "only numeric fields can be incremented"),
    ],
)
def test_v2_load_errors_are_plain(data: dict[str, Any], mutate: Any, words: str) -> None:
    msg = _error(data, mutate)
    assert words in msg
    assert "Extra inputs" not in msg and "function-" not in msg


# -- random lists (Hypothesis) ------------------------------------------------------------------------------------

_name = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
_person = st.fixed_dictionaries({"first_name": _name, "last_name": _name, "dob": st.dates().map(lambda d: d.isoformat())})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(people=st.lists(_person, min_size=1, max_size=5), n_flights=st.integers(1, 4))
def test_random_valid_lists_insert_one_row_each(app: App, people: list[dict[str, str]], n_flights: int) -> None:
    ep = app.episode()
    flights = _ids(ep, "flight")[:n_flights]
    res = ep.call(
        "book_reservation",
        {"customer_id": _ids(ep, "customer")[0], "amount_due": 5, "flight_ids": flights, "passengers": people, "payments": _pay(ep)},
    )
    assert res.outcome == SUCCESS, res.content
    rid = res.data["reservation_id"]
    got = _rows(ep, "SELECT first_name, last_name, dob FROM passenger WHERE reservation_id = ?", rid)
    assert sorted(got) == sorted((p["first_name"], p["last_name"], p["dob"]) for p in people)
    assert len(_ids(ep, "segment", "reservation_id = ?", rid)) == n_flights


_not_string = st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.lists(st.integers(), max_size=2))
_BAD = {
    "first_name": _not_string,
    "last_name": _not_string,
    "dob": st.one_of(_not_string, st.text(max_size=12).filter(lambda t: not re.fullmatch(r"\d{4}-\d{2}-\d{2}", t))),
    "extra": st.one_of(_not_string, st.text(max_size=5)),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), field=st.sampled_from(sorted(_BAD)), position=st.integers(0, 2))
def test_random_bad_items_are_refused_and_change_nothing(app: App, data: st.DataObject, field: str, position: int) -> None:
    people = [{"first_name": "A", "last_name": "B", "dob": "2000-01-01"} for _ in range(3)]
    people[position][field] = data.draw(_BAD[field])
    ep = app.episode()
    before = _dump(ep)
    args = {
        "customer_id": _ids(ep, "customer")[0],
        "amount_due": 5,
        "flight_ids": _ids(ep, "flight")[:1],
        "passengers": people,
        "payments": _pay(ep),
    }
    res = ep.call("book_reservation", args)
    assert (res.outcome, res.code) == (REJECTION, "invalid_arguments"), (people, res.content)
    assert f"passengers.{position}" in res.content
    assert _dump(ep) == before


# -- the docs quote the example -------------------------------------------------------------------------------


def _flat(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines())


def test_docs_section_11_quotes_the_built_example() -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text(encoding="utf-8")
    sections = [
        doc.split(f"### {title}", 1)[1].split("\n### ", 1)[0]
        for title in ("11.1 List parameters and for_each", "11.2 also on every action")
    ]
    example = _flat(EXAMPLE.read_text(encoding="utf-8"))
    blocks = [b for sec in sections for b in re.findall(r"```yaml\n(.*?)```", sec, flags=re.S)]
    assert len(blocks) == 5
    for block in blocks:
        assert _flat(block) in example, block
    assert "tests/data/examples/list_effects.yaml" in sections[0]


def test_task_synthesis_runs_on_an_app_with_list_parameters(tmp_path: Path) -> None:
    from envsynth.corpus import build_corpus

    build_corpus(tmp_path, blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=6, seed=0)
    attempts = [json.loads(line) for line in (tmp_path / "tasks" / "skyhop" / "attempts.jsonl").read_text().splitlines()]
    assert not [a for a in attempts if a.get("reason") == "synthesis_error"]
    assert list((tmp_path / "tasks" / "skyhop").glob("shard-*.jsonl"))
