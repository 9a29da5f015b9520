"""Generated tool code (envsynth.compiler.codegen) does what each archetype says, on a real database.

Each test compiles the bookshop blueprint in memory (no catalogue build), calls a generated tool in
an episode and compares the rows it returns or leaves with what is computed here, in Python, from
the same rows read before the call.

Seeded bugs this module catches (each made by hand in codegen.py, the tests run, then reverted):
- the UPDATE of an update tool without its ``WHERE id = ?`` (every customer renamed):
  test_update_changes_one_row_and_only_the_given_fields fails;
- the DELETE of a delete tool without its ``WHERE`` (every card gone):
  test_delete_removes_exactly_that_row fails;
- the ``lte`` filter of a query written ``>=``: test_search_filters_match_python[args1, args2] fail;
- the ``eq`` filter of a query written ``!=``: test_search_filters_match_python[args0, args2] and
  every test_count_with_filters_matches_python case fail.
"""

from __future__ import annotations

from typing import Any

import pytest

from envsynth.blueprint import load_blueprint
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.episode import Episode
from envsynth.runtime.state import read_rows


@pytest.fixture(scope="module")
def app(bookshop_blueprint_path) -> App:  # type: ignore[no-untyped-def]
    return compile_app(load_blueprint(bookshop_blueprint_path), 0)


def _rows(app: App, ep: Episode, table: str) -> list[dict[str, Any]]:
    return [dict(r) for r in read_rows(ep.db, app.blueprint)[table]]


@pytest.mark.parametrize(
    "args",
    [
        {"genre": "fiction"},
        {"max_price": 20.0},
        {"genre": "history", "max_price": 30.0},
        {"title": "RIVER"},
        {},
    ],
)
def test_search_filters_match_python(app: App, args: dict[str, Any]) -> None:
    ep = app.episode()
    books = _rows(app, ep, "book")
    expected = [
        b
        for b in books
        if ("genre" not in args or b["genre"] == args["genre"])
        and ("max_price" not in args or b["price"] <= args["max_price"])
        and ("title" not in args or args["title"].lower() in b["title"].lower())
    ]
    res = ep.call("search_books", {**args, "limit": 100})
    assert res.outcome == "success", res.content
    assert res.data["total"] == len(expected)
    assert sorted(i["book_id"] for i in res.data["items"]) == sorted(b["book_id"] for b in expected)
    assert [i["title"] for i in res.data["items"]] == sorted(i["title"] for i in res.data["items"])  # ordered by title
    assert 0 < len(expected) < len(books) or not args  # each filter selects some, not all


@pytest.mark.parametrize("status", ["placed", "paid", "shipped", "cancelled"])
def test_count_with_filters_matches_python(app: App, status: str) -> None:
    ep = app.episode()
    purchases = _rows(app, ep, "purchase")
    customer = purchases[0]["customer_id"]
    res = ep.call("count_purchases", {"customer_id": customer, "status": status})
    assert res.outcome == "success", res.content
    assert res.data == {"value": sum(p["customer_id"] == customer and p["status"] == status for p in purchases)}
    assert ep.call("count_purchases", {"status": status}).data == {"value": sum(p["status"] == status for p in purchases)}


def test_grouped_sum_matches_python(app: App) -> None:
    ep = app.episode()
    expected: dict[str, float] = {}
    for c in _rows(app, ep, "gift_card"):
        expected[c["customer_id"]] = expected.get(c["customer_id"], 0.0) + c["balance"]
    res = ep.call("total_gift_card_balance", {})
    assert res.outcome == "success", res.content
    assert {g["customer_id"]: g["value"] for g in res.data["groups"]} == pytest.approx(expected)


def test_update_changes_one_row_and_only_the_given_fields(app: App) -> None:
    ep = app.episode()
    before = _rows(app, ep, "customer")
    target = before[1]
    res = ep.call("update_customer", {"customer_id": target["customer_id"], "full_name": "Ada Lovelace"})
    assert res.outcome == "success", res.content
    after = _rows(app, ep, "customer")
    assert after == [{**r, "full_name": "Ada Lovelace"} if r["customer_id"] == target["customer_id"] else r for r in before]
    assert res.data == {**target, "full_name": "Ada Lovelace"}


def test_delete_removes_exactly_that_row(app: App) -> None:
    ep = app.episode()
    before = _rows(app, ep, "gift_card")
    gone = before[2]["gift_card_id"]
    res = ep.call("delete_gift_card", {"gift_card_id": gone})
    assert res.outcome == "success", res.content
    assert _rows(app, ep, "gift_card") == [r for r in before if r["gift_card_id"] != gone]


def test_transition_checks_the_state_and_moves_it(app: App) -> None:
    ep = app.episode()
    purchases = _rows(app, ep, "purchase")
    placed = next(p for p in purchases if p["status"] == "placed")
    other = next(p for p in purchases if p["status"] != "placed")
    refused = ep.call("pay_purchase", {"purchase_id": other["purchase_id"]})
    assert (refused.outcome, refused.code) == ("anticipated_rejection", "state")
    assert _rows(app, ep, "purchase") == purchases  # a rejected call changes nothing
    res = ep.call("pay_purchase", {"purchase_id": placed["purchase_id"]})
    assert res.outcome == "success", res.content
    assert _rows(app, ep, "purchase") == [{**p, "status": "paid"} if p is placed else p for p in purchases]


def test_transfer_moves_the_amount_between_two_rows(app: App) -> None:
    ep = app.episode()
    cards = _rows(app, ep, "gift_card")
    src, dst = sorted(cards, key=lambda c: -c["balance"])[:2]
    amount = round(src["balance"] / 2, 2)
    res = ep.call(
        "move_gift_card_balance", {"from_gift_card_id": src["gift_card_id"], "to_gift_card_id": dst["gift_card_id"], "amount": amount}
    )
    assert res.outcome == "success", res.content
    after = {c["gift_card_id"]: c["balance"] for c in _rows(app, ep, "gift_card")}
    assert after[src["gift_card_id"]] == pytest.approx(src["balance"] - amount)
    assert after[dst["gift_card_id"]] == pytest.approx(dst["balance"] + amount)
    assert all(after[c["gift_card_id"]] == c["balance"] for c in cards if c not in (src, dst))
    too_much = ep.call(
        "move_gift_card_balance", {"from_gift_card_id": dst["gift_card_id"], "to_gift_card_id": src["gift_card_id"], "amount": 10_000.0}
    )
    assert too_much.outcome == "anticipated_rejection"
