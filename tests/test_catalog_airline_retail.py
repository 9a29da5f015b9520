"""The rules of the airline (northstar_air) catalogue domain, on real episodes (retail: tests/test_catalog_retail.py)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import envsynth
from envsynth import catalog
from envsynth.compiler.build import BuiltApp
from envsynth.runtime.app import App


@pytest.fixture(scope="module")
def airline(built_catalog: dict[str, BuiltApp]) -> App:
    return envsynth.load_app(built_catalog["northstar_air"].path)


def _row(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any]:
    cur = db.execute(sql, args)
    cols = [c[0] for c in cur.description]
    row = cur.fetchone()
    assert row is not None, sql
    return dict(zip(cols, row))


def _flight(db: sqlite3.Connection) -> dict[str, Any]:
    """A scheduled future flight with free seats in every cabin and consistent counters."""
    f = _row(db, "SELECT * FROM flight LIMIT 1")
    db.execute(
        "UPDATE flight SET status='scheduled', departs_at='2026-04-01T09:00:00', basic_economy_seats=20, basic_economy_booked=5,"
        " economy_seats=100, economy_booked=40, business_seats=10, business_booked=2, basic_economy_price=80,"
        " economy_price=200, business_price=900 WHERE flight_id=?",
        (f["flight_id"],),
    )
    return _row(db, "SELECT * FROM flight WHERE flight_id=?", (f["flight_id"],))


def _member_with_card(db: sqlite3.Connection, tier: str, kind: str, balance: float) -> tuple[str, str]:
    m = _row(db, "SELECT * FROM member LIMIT 1")
    db.execute("UPDATE member SET membership=? WHERE member_id=?", (tier, m["member_id"]))
    p = _row(db, "SELECT * FROM payment_method LIMIT 1")
    db.execute(
        "UPDATE payment_method SET member_id=?, kind=?, balance=?, status='active' WHERE payment_method_id=?",
        (m["member_id"], kind, balance, p["payment_method_id"]),
    )
    return m["member_id"], p["payment_method_id"]


@pytest.mark.parametrize(
    ("tool", "tier", "bags", "free", "extras"),
    [
        ("book_basic_economy", "regular", 1, 0, 50),
        ("book_economy", "gold", 7, 6, 50),
        ("book_business", "silver", 4, 6, 0),
    ],
)
def test_airline_bag_allowance_by_tier_and_cabin(airline: App, tool: str, tier: str, bags: int, free: int, extras: int) -> None:
    ep = airline.episode()
    flight = _flight(ep.db)
    member_id, pay_id = _member_with_card(ep.db, tier, "credit_card", 0)
    res = ep.call(
        tool,
        {
            "flight_id": flight["flight_id"],
            "passenger_count": 2,
            "member_id": member_id,
            "payment_method_id": pay_id,
            "insurance": False,
            "checked_bags": bags,
        },
    )
    assert res.outcome == "success", res.content
    assert (res.data["free_bags"], res.data["extras_paid"]) == (free, extras)


def _reservation(db: sqlite3.Connection, flight_id: str, member_id: str, pay_id: str, cabin: str, insurance: bool) -> str:
    r = _row(db, "SELECT * FROM reservation LIMIT 1")
    db.execute(
        "UPDATE reservation SET flight_id=?, member_id=?, payment_method_id=?, cabin=?, insurance=?, status='confirmed',"
        " passenger_count=2, fare_paid=400, extras_paid=60 WHERE reservation_id=?",
        (flight_id, member_id, pay_id, cabin, int(insurance), r["reservation_id"]),
    )
    return r["reservation_id"]


def test_airline_cancellation_follows_the_refund_rules(airline: App) -> None:
    ep = airline.episode()
    flight = _flight(ep.db)
    member_id, pay_id = _member_with_card(ep.db, "regular", "gift_card", 10)
    res_id = _reservation(ep.db, flight["flight_id"], member_id, pay_id, "economy", insurance=False)
    refused = ep.call("cancel_reservation", {"reservation_id": res_id, "reason": "change_of_plans"})
    assert refused.outcome == "anticipated_rejection" and refused.code == "pre[1]"
    ep.db.execute("UPDATE reservation SET insurance=1 WHERE reservation_id=?", (res_id,))
    assert ep.call("cancel_reservation", {"reservation_id": res_id, "reason": "change_of_plans"}).code == "pre[1]"
    done = ep.call("cancel_reservation", {"reservation_id": res_id, "reason": "health"})
    assert done.outcome == "success", done.content
    assert done.data["refund_amount"] == 460
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay_id,))["balance"] == 470
    assert _row(ep.db, "SELECT economy_booked FROM flight WHERE flight_id=?", (flight["flight_id"],))["economy_booked"] == 38


def test_airline_cabin_change_moves_seats_and_settles_the_fare(airline: App) -> None:
    ep = airline.episode()
    flight = _flight(ep.db)
    member_id, pay_id = _member_with_card(ep.db, "gold", "gift_card", 2000)
    res_id = _reservation(ep.db, flight["flight_id"], member_id, pay_id, "economy", insurance=False)
    res = ep.call("change_to_business", {"reservation_id": res_id, "payment_method_id": pay_id})
    assert res.outcome == "success", res.content
    assert (res.data["cabin"], res.data["fare_paid"]) == ("business", 1800)
    f = _row(ep.db, "SELECT economy_booked, business_booked FROM flight WHERE flight_id=?", (flight["flight_id"],))
    assert (f["economy_booked"], f["business_booked"]) == (38, 4)
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay_id,))["balance"] == 2000 - (1800 - 400)


def test_catalogue_lists_both_new_domains() -> None:
    names = catalog.names()
    assert len(names) == len(set(names))
    assert {catalog.load("northstar_air").category, catalog.load("juniper_goods").category} == {"travel", "shopping"}
