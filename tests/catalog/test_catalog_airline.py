"""The rules of the airline catalogue domain (northstar_air, language v2), on real episodes and a real corpus."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from envsynth import build_app, catalog
from envsynth.blueprint.policy import agent_rules
from envsynth.compiler.build import BuiltApp
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.runtime.app import App
from envsynth.runtime.episode import Episode
from envsynth.tasks.admission.policy import forbids, oracle_plus_forbidden
from envsynth.tasks.wording.instruction import leaks_id
from replay_helpers import play

NOW = "2026-03-15T12:00:00"  # the episode clock


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltApp:
    return build_app(catalog.load("northstar_air"), tmp_path_factory.mktemp("air"), seed=0)


@pytest.fixture(scope="module")
def airline(built: BuiltApp) -> App:
    return built.app


def _rows(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    cur = db.execute(sql, args)
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _row(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any]:
    rows = _rows(db, sql, args)
    assert rows, sql
    return rows[0]


def _flights(db: sqlite3.Connection) -> tuple[str, str]:
    """Two scheduled future flights JFK -> ORD (short band) and ORD -> LAX (medium band) with seats in every cabin."""
    a, b = (r["flight_id"] for r in _rows(db, "SELECT flight_id FROM flight ORDER BY flight_id LIMIT 2"))
    for fid, orig, dest, band, day in ((a, "JFK", "ORD", "short", "2026-04-01"), (b, "ORD", "LAX", "medium", "2026-04-02")):
        db.execute(
            "UPDATE flight SET status='scheduled', origin=?, destination=?, fare_band=?, departure_date=?, departs_at=?, arrives_at=?,"
            " basic_economy_left=10, economy_left=50, business_left=6 WHERE flight_id=?",
            (orig, dest, band, day, day + "T09:00:00", day + "T12:00:00", fid),
        )
    return a, b


def _member(db: sqlite3.Connection, tier: str, kind: str, balance: float | None) -> tuple[str, str]:
    """A member of ``tier`` with one active payment method of ``kind``."""
    m = _row(db, "SELECT member_id FROM member ORDER BY member_id LIMIT 1")["member_id"]
    db.execute("UPDATE member SET membership=? WHERE member_id=?", (tier, m))
    p = _row(db, "SELECT payment_method_id FROM payment_method ORDER BY payment_method_id LIMIT 1")["payment_method_id"]
    db.execute("UPDATE payment_method SET member_id=?, kind=?, balance=?, status='active' WHERE payment_method_id=?", (m, kind, balance, p))
    return m, p


def _book(ep: Episode, member: str, pay: str, flights: list[str], cabin: str, bags: int, insurance: bool, people: int = 2) -> Any:
    passengers = [{"full_name": f"Traveller {i}", "date_of_birth": f"19{80 + i}-05-04"} for i in range(people)]
    args = {
        "member_id": member,
        "payment_method_id": pay,
        "trip_type": "one_way",
        "origin": "JFK",
        "destination": "LAX",
        "cabin": cabin,
        "insurance": insurance,
        "checked_bags": bags,
        "flight_ids": flights,
        "passengers": passengers,
    }
    return ep.call("book_reservation", args)


# -- the procedural tests ---------------------------------------------------------------------------------


def test_every_precondition_has_a_violate_case_that_is_exercised(built: BuiltApp) -> None:
    report = built.report
    assert report.passed
    observed = {(v.tool, v.case): v.observed for v in report.verdicts}
    for spec in built.app.specs:
        for check in spec.pre:
            case = (spec.name, f"violate:{check.id}")
            assert observed.get(case) == "anticipated_rejection", (case, observed.get(case))
    assert report.counts()["not_constructed"] == 0


def test_the_blueprint_uses_no_custom_code(airline: App) -> None:
    assert all(s.code is None and s.kind != "custom" for s in airline.specs)
    assert {r.rule for r in agent_rules(airline.blueprint)} == {"refundable_cancellation", "compensation_eligibility", "keep_refund_method"}


# -- booking: several flights and passengers in one call, fares and bags from lookup tables ----------------


def test_one_call_books_every_flight_and_passenger_and_charges_the_total(airline: App) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, pay = _member(ep.db, "gold", "gift_card", 5000)
    res = _book(ep, member, pay, [a, b], "economy", bags=7, insurance=True)
    assert res.outcome == "success", res.content
    rid = res.data["reservation_id"]
    # fares: 2 passengers x (short 149 + medium 239); gold economy: 3 free bags each, 1 extra at 50; insurance 2 x 30
    assert (res.data["fare_paid"], res.data["extras_paid"], res.data["passenger_count"]) == (776, 110, 2)
    segs = _rows(ep.db, "SELECT flight_id, fare_band, price, status FROM segment WHERE reservation_id=? ORDER BY price", (rid,))
    assert segs == [
        {"flight_id": a, "fare_band": "short", "price": 149, "status": "scheduled"},
        {"flight_id": b, "fare_band": "medium", "price": 239, "status": "scheduled"},
    ]
    names = [r["full_name"] for r in _rows(ep.db, "SELECT full_name FROM passenger WHERE reservation_id=? ORDER BY 1", (rid,))]
    assert names == ["Traveller 0", "Traveller 1"]
    pays = _rows(ep.db, "SELECT payment_method_id, kind, purpose, amount FROM payment WHERE reservation_id=?", (rid,))
    assert pays == [{"payment_method_id": pay, "kind": "charge", "purpose": "fare", "amount": 886}]
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay,))["balance"] == 5000 - 886
    left = _rows(ep.db, "SELECT economy_left FROM flight WHERE flight_id IN (?, ?)", (a, b))
    assert [r["economy_left"] for r in left] == [48, 48]


def test_a_certificate_is_used_up_by_the_booking_it_pays(airline: App) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, cert = _member(ep.db, "silver", "certificate", 1000)
    res = _book(ep, member, cert, [a, b], "economy", bags=0, insurance=False)
    assert res.outcome == "success", res.content
    method = _row(ep.db, "SELECT balance, status FROM payment_method WHERE payment_method_id=?", (cert,))
    assert method == {"balance": 0, "status": "used"}  # 1000 - 776 left on it is lost
    again = _book(ep, member, cert, [a, b], "economy", bags=0, insurance=False)
    assert (again.outcome, again.code) == ("anticipated_rejection", "pre[6]")


@pytest.mark.parametrize(
    ("tier", "cabin", "bags", "extras"),
    [("regular", "basic_economy", 1, 50), ("silver", "basic_economy", 3, 50), ("gold", "economy", 6, 0), ("regular", "business", 6, 100)],
)
def test_bag_allowance_by_tier_and_cabin(airline: App, tier: str, cabin: str, bags: int, extras: int) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, pay = _member(ep.db, tier, "credit_card", None)
    res = _book(ep, member, pay, [a, b], cabin, bags=bags, insurance=False)
    assert res.outcome == "success", res.content
    assert res.data["extras_paid"] == extras


def test_booking_refuses_a_flight_that_is_not_bookable_or_full_and_an_uncovered_gift_card(airline: App) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, pay = _member(ep.db, "regular", "gift_card", 100)
    assert _book(ep, member, pay, [a, b], "economy", bags=0, insurance=False).code == "pre[7]"  # 776 > 100
    ep.db.execute("UPDATE payment_method SET balance=5000 WHERE payment_method_id=?", (pay,))
    ep.db.execute("UPDATE flight SET status='delayed' WHERE flight_id=?", (b,))
    assert _book(ep, member, pay, [a, b], "economy", bags=0, insurance=False).code == "pre[0]"  # all(...) scheduled
    ep.db.execute("UPDATE flight SET status='scheduled', business_left=1 WHERE flight_id=?", (b,))
    assert _book(ep, member, pay, [a, b], "business", bags=0, insurance=False).code == "pre[1]"  # seats on every flight
    assert _book(ep, member, pay, [a], "economy", bags=0, insurance=False).code == "pre[2]"  # JFK -> ORD does not reach LAX
    ep.db.execute("UPDATE flight SET destination='JFK' WHERE flight_id=?", (b,))  # ORD -> JFK: back to the origin
    ep.db.execute("UPDATE flight SET business_left=6 WHERE flight_id=?", (b,))
    c = _row(ep.db, "SELECT flight_id FROM flight WHERE flight_id NOT IN (?, ?) LIMIT 1", (a, b))["flight_id"]
    ep.db.execute(
        "UPDATE flight SET status='scheduled', origin='JFK', destination='LAX', departs_at='2026-04-03T09:00:00' WHERE flight_id=?", (c,)
    )
    ep.db.execute(
        "UPDATE flight SET economy_left=50, departure_date='2026-04-03', arrives_at='2026-04-03T14:00:00' WHERE flight_id=?", (c,)
    )
    assert _book(ep, member, pay, [a, b, c], "economy", bags=0, insurance=False).code == "pre[4]"  # one way, flies back
    assert _book(ep, member, pay, [c], "economy", bags=0, insurance=False).outcome == "success"
    other = _row(ep.db, "SELECT payment_method_id FROM payment_method WHERE member_id != ? LIMIT 1", (member,))["payment_method_id"]
    assert _book(ep, member, other, [a, b], "economy", bags=0, insurance=False).code == "auth:payment_method"


# -- changes, cancellation and refunds ------------------------------------------------------------------------


def test_bags_and_cabin_changes_charge_the_reservation_method_and_move_seats(airline: App) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, pay = _member(ep.db, "regular", "gift_card", 5000)
    rid = _book(ep, member, pay, [a, b], "economy", bags=0, insurance=False).data["reservation_id"]
    bags = ep.call("add_checked_bags", {"reservation_id": rid, "member_id": member, "checked_bags": 4})
    assert bags.outcome == "success", bags.content
    assert bags.data["extras_paid"] == 100  # regular economy: 1 free bag each, 2 extra
    up = ep.call("change_to_business", {"reservation_id": rid, "member_id": member})
    assert up.outcome == "success", up.content
    assert up.data["fare_paid"] == 2 * (449 + 749)
    kinds = [
        (r["purpose"], r["kind"], r["amount"]) for r in _rows(ep.db, "SELECT * FROM payment WHERE reservation_id=? ORDER BY rowid", (rid,))
    ]
    assert kinds == [("fare", "charge", 776), ("bags", "charge", 100), ("cabin_change", "charge", 2396 - 776)]
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay,))["balance"] == 5000 - 776 - 100 - 1620
    f = _rows(ep.db, "SELECT economy_left, business_left FROM flight WHERE flight_id IN (?, ?)", (a, b))
    assert [(r["economy_left"], r["business_left"]) for r in f] == [(50, 4), (50, 4)]


def test_cancel_refunds_every_payment_to_its_method_and_releases_every_seat(airline: App) -> None:
    ep = airline.episode()
    a, b = _flights(ep.db)
    member, pay = _member(ep.db, "regular", "gift_card", 5000)
    rid = _book(ep, member, pay, [a, b], "economy", bags=4, insurance=True).data["reservation_id"]
    assert ep.call("add_checked_bags", {"reservation_id": rid, "member_id": member, "checked_bags": 5}).outcome == "success"
    done = ep.call("cancel_reservation", {"reservation_id": rid, "member_id": member, "reason": "health"})
    assert done.outcome == "success", done.content
    assert done.data["refund_amount"] == 776 + 60 + 100 + 50
    refunds = _rows(ep.db, "SELECT payment_method_id, amount FROM payment WHERE reservation_id=? AND kind='refund' ORDER BY amount", (rid,))
    assert refunds == [{"payment_method_id": pay, "amount": 50}, {"payment_method_id": pay, "amount": 936}]
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay,))["balance"] == 5000
    assert [r["economy_left"] for r in _rows(ep.db, "SELECT economy_left FROM flight WHERE flight_id IN (?, ?)", (a, b))] == [50, 50]
    assert ep.call("cancel_reservation", {"reservation_id": rid, "member_id": member}).code == "state"


def _reservation(db: sqlite3.Connection, member: str, cabin: str, insurance: bool, created_at: str, segment_status: str) -> str:
    r = _row(db, "SELECT reservation_id FROM reservation WHERE member_id != ? ORDER BY reservation_id LIMIT 1", (member,))["reservation_id"]
    pay = _row(db, "SELECT payment_method_id FROM payment_method WHERE member_id=? AND status='active' LIMIT 1", (member,))
    db.execute(
        "UPDATE reservation SET member_id=?, payment_method_id=?, cabin=?, insurance=?, created_at=?, status='confirmed' WHERE reservation_id=?",
        (member, pay["payment_method_id"], cabin, int(insurance), created_at, r),
    )
    db.execute("DELETE FROM segment WHERE reservation_id=?", (r,))
    f = _row(db, "SELECT flight_id FROM flight LIMIT 1")["flight_id"]
    db.execute(
        "INSERT INTO segment (segment_id, reservation_id, flight_id, fare_band, price, status) VALUES ('seg_test01', ?, ?, 'short', 149, ?)",
        (r, f, segment_status),
    )
    return r


@pytest.mark.parametrize(
    ("cabin", "insurance", "created_at", "segment", "reason", "forbidden"),
    [
        ("economy", False, "2026-03-10T09:00:00", "scheduled", "change_of_plans", True),
        ("economy", False, "2026-03-14T18:00:00", "scheduled", "change_of_plans", False),  # booked within 24 hours
        ("economy", False, "2026-03-10T09:00:00", "cancelled", "change_of_plans", False),  # the airline cancelled a flight
        ("business", False, "2026-03-10T09:00:00", "scheduled", "other", False),
        ("economy", True, "2026-03-10T09:00:00", "scheduled", "weather", False),
        ("economy", True, "2026-03-10T09:00:00", "scheduled", "change_of_plans", True),
    ],
)
def test_the_cancellation_rule_the_agent_obeys(
    airline: App, cabin: str, insurance: bool, created_at: str, segment: str, reason: str, forbidden: bool
) -> None:
    ep = airline.episode()
    member, _ = _member(ep.db, "regular", "credit_card", None)
    rid = _reservation(ep.db, member, cabin, insurance, created_at, segment)
    rule = next(r for r in agent_rules(airline.blueprint) if r.rule == "refundable_cancellation")
    args = {"reservation_id": rid, "member_id": member, "reason": reason}
    assert forbids(airline, rule, "cancel_reservation", args, ep) is forbidden
    assert ep.call("cancel_reservation", args).outcome == "success"  # the tools allow it: the agent must refuse


def test_nothing_changes_once_a_flight_has_left(airline: App) -> None:
    ep = airline.episode()
    member, _ = _member(ep.db, "gold", "credit_card", None)
    rid = _reservation(ep.db, member, "business", False, "2026-03-10T09:00:00", "departed")
    for tool, extra in (("cancel_reservation", {}), ("change_to_economy", {}), ("add_checked_bags", {"checked_bags": 6})):
        res = ep.call(tool, {"reservation_id": rid, "member_id": member, **extra})
        assert res.code == "policy:nothing_after_departure", (tool, res.content)


def test_a_member_acts_only_on_their_own_reservations(airline: App) -> None:
    ep = airline.episode()
    member, _ = _member(ep.db, "gold", "credit_card", None)
    rid = _reservation(ep.db, member, "business", False, "2026-03-10T09:00:00", "scheduled")
    other = _row(ep.db, "SELECT member_id FROM member WHERE member_id != ? LIMIT 1", (member,))["member_id"]
    res = ep.call("cancel_reservation", {"reservation_id": rid, "member_id": other})
    assert (res.outcome, res.code) == ("anticipated_rejection", "auth:reservation")


# -- flights, segments and compensation ------------------------------------------------------------------------


def test_flight_operations_move_every_segment_and_completion_needs_all_landed(airline: App) -> None:
    ep = airline.episode()
    member, _ = _member(ep.db, "gold", "credit_card", None)
    rid = _reservation(ep.db, member, "economy", False, "2026-03-10T09:00:00", "scheduled")
    fid = _row(ep.db, "SELECT flight_id FROM segment WHERE segment_id='seg_test01'")["flight_id"]
    ep.db.execute("UPDATE flight SET status='scheduled' WHERE flight_id=?", (fid,))
    ep.db.execute("UPDATE segment SET status='scheduled' WHERE flight_id=?", (fid,))
    assert ep.call("complete_reservation", {"reservation_id": rid, "member_id": member}).code == "pre[1]"
    for tool in ("depart_flight", "land_flight"):
        assert ep.call(tool, {"flight_id": fid}).outcome == "success"
    assert {r["status"] for r in _rows(ep.db, "SELECT status FROM segment WHERE flight_id=?", (fid,))} == {"landed"}
    assert ep.call("complete_reservation", {"reservation_id": rid, "member_id": member}).outcome == "success"


def test_compensation_is_recorded_once_per_reservation(airline: App) -> None:
    ep = airline.episode()
    member, _ = _member(ep.db, "silver", "credit_card", None)
    rid = _reservation(ep.db, member, "economy", False, "2026-03-10T09:00:00", "cancelled")
    ep.db.execute("UPDATE reservation SET passenger_count=3, compensated=0 WHERE reservation_id=?", (rid,))
    done = ep.call("compensate_cancelled_flight", {"reservation_id": rid, "member_id": member})
    assert done.outcome == "success", done.content
    assert (done.data["kind"], done.data["balance"], done.data["last_four"]) == ("certificate", 300, None)
    assert _row(ep.db, "SELECT compensated FROM reservation WHERE reservation_id=?", (rid,))["compensated"] == 1
    again = ep.call("compensate_cancelled_flight", {"reservation_id": rid, "member_id": member})
    assert again.code == "pre[1]"


def test_a_flight_number_flies_once_a_day(airline: App) -> None:
    ep = airline.episode()
    f = _row(ep.db, "SELECT * FROM flight LIMIT 1")
    args = {
        "flight_number": f["flight_number"],
        "departure_date": "2026-05-02",
        "origin": "BOS",
        "destination": "SEA",
        "departs_at": "2026-05-02T08:00:00",
        "arrives_at": "2026-05-02T14:00:00",
        "fare_band": "long",
        "basic_economy_left": 10,
        "economy_left": 100,
        "business_left": 8,
    }
    assert ep.call("schedule_flight", args).outcome == "success"
    again = ep.call("schedule_flight", args)
    assert (again.outcome, again.code) == ("anticipated_rejection", "unique:flight_number+departure_date")


def test_sample_data_is_correlated(built: BuiltApp) -> None:
    db = sqlite3.connect(built.path / "state.db")
    flights = _rows(db, "SELECT * FROM flight")
    assert len({(f["flight_number"], f["departure_date"]) for f in flights}) == len(flights)
    for f in flights:
        assert f["origin"] != f["destination"]
        assert f["departure_date"] < f["departs_at"] < f["arrives_at"]
    for r in _rows(db, "SELECT * FROM reservation"):
        assert r["origin"] != r["destination"]
        assert (r["cancel_reason"] is not None) == (r["refund_amount"] is not None) == (r["status"] == "cancelled")
    for p in _rows(db, "SELECT * FROM payment_method"):
        assert (p["last_four"] is None) == (p["kind"] == "certificate")
        assert (p["balance"] is None) == (p["kind"] == "credit_card")


# -- policy tasks: refusals score 0 when the agent also does the forbidden part ---------------------------------


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("air_corpus") / "corpus"
    build_corpus(out, blueprints=[catalog.load("northstar_air")], tasks_per_app=40, states=2, distractors=4, seed=0)
    return load_corpus(out)


def test_policy_tasks_share_and_refusals_replayed(corpus: Corpus) -> None:
    tasks = corpus.tasks
    involved = [t for t in tasks if t.policy is not None]
    refusals = [t for t in involved if t.policy and t.policy.refusal]
    assert len(involved) >= 0.10 * len(tasks), (len(involved), len(tasks))
    # about half of the tasks with a write are offered a refusal; it is made only where every state can carry one (not on
    # a staff request; on a goal about its rows as a whole, only on a row the states hold). Measured against all tasks:
    # multi-goal requests meet more rules, so the policy tasks grow more than the refusals (7.5% before them, 10% now)
    assert len(refusals) >= 0.05 * len(tasks), (len(refusals), len(involved), len(tasks))
    assert {t.policy.rule for t in refusals if t.policy} >= {"refundable_cancellation", "keep_refund_method"}
    for task in refusals:
        assert play(corpus, task, list(task.oracle)) == 1.0, task.id
        assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0, task.id
        assert play(corpus, task, []) == 0.0, task.id


def test_airline_tasks_read_without_ids_or_raw_lists(corpus: Corpus) -> None:
    for t in corpus.tasks:
        assert "{'" not in t.instruction and "seats on it" not in t.instruction, t.instruction
        assert not leaks_id(t.instruction), t.instruction
