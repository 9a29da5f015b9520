"""The rules of the airline (northstar_air) and retail (juniper_goods) catalogue domains, on real episodes."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import envsynth
from envsynth import catalog
from envsynth.compiler.build import BuiltApp
from envsynth.runtime.app import App


@pytest.fixture(scope="module")
def retail(built_catalog: dict[str, BuiltApp]) -> App:
    return envsynth.load_app(built_catalog["juniper_goods"].path)


def _row(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any]:
    cur = db.execute(sql, args)
    cols = [c[0] for c in cur.description]
    row = cur.fetchone()
    assert row is not None, sql
    return dict(zip(cols, row))


def _order(db: sqlite3.Connection, status: str, kind: str, balance: float) -> tuple[str, str]:
    o = _row(db, "SELECT * FROM customer_order LIMIT 1")
    p = _row(db, "SELECT * FROM payment_method LIMIT 1")
    db.execute(
        "UPDATE payment_method SET customer_id=?, kind=?, balance=?, status='active' WHERE payment_method_id=?",
        (o["customer_id"], kind, balance, p["payment_method_id"]),
    )
    db.execute(
        "UPDATE customer_order SET status=?, payment_method_id=?, total=120 WHERE order_id=?",
        (status, p["payment_method_id"], o["order_id"]),
    )
    return o["order_id"], p["payment_method_id"]


def test_retail_cancel_takes_only_the_permitted_reasons_and_refunds_a_gift_card(retail: App) -> None:
    ep = retail.episode()
    order_id, pay_id = _order(ep.db, "pending", "gift_card", 30)
    assert ep.call("cancel_order", {"order_id": order_id, "reason": "found_it_cheaper"}).code == "invalid_arguments"
    done = ep.call("cancel_order", {"order_id": order_id, "reason": "ordered_by_mistake"})
    assert done.outcome == "success", done.content
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay_id,))["balance"] == 150
    ep2 = retail.episode()
    processed, _ = _order(ep2.db, "processed", "credit_card", 0)
    assert ep2.call("cancel_order", {"order_id": processed, "reason": "no_longer_needed"}).code == "state"


def _line_and_variants(db: sqlite3.Connection, order_id: str) -> tuple[str, str, str]:
    """A line of the order (price 40), another in-stock variant of its product (price 50) and a variant of another product."""
    line = _row(db, "SELECT * FROM order_line LIMIT 1")
    old = _row(db, "SELECT * FROM item LIMIT 1")
    new = _row(db, "SELECT * FROM item WHERE item_id != ? LIMIT 1", (old["item_id"],))
    other = _row(db, "SELECT * FROM item WHERE item_id NOT IN (?, ?) LIMIT 1", (old["item_id"], new["item_id"]))
    prods = [r[0] for r in db.execute("SELECT product_id FROM product LIMIT 2")]
    db.execute("UPDATE item SET product_id=?, available=1, price=40 WHERE item_id=?", (prods[0], old["item_id"]))
    db.execute("UPDATE item SET product_id=?, available=1, price=50 WHERE item_id=?", (prods[0], new["item_id"]))
    db.execute("UPDATE item SET product_id=?, available=1 WHERE item_id=?", (prods[1], other["item_id"]))
    db.execute(
        "UPDATE order_line SET order_id=?, item_id=?, price=40, status='ordered' WHERE line_id=?",
        (order_id, old["item_id"], line["line_id"]),
    )
    return line["line_id"], new["item_id"], other["item_id"]


def test_retail_modify_item_same_product_once(retail: App) -> None:
    ep = retail.episode()
    order_id, pay_id = _order(ep.db, "pending", "gift_card", 30)
    line_id, new_id, other_id = _line_and_variants(ep.db, order_id)
    wrong = ep.call("modify_order_item", {"order_id": order_id, "line_id": line_id, "item_id": other_id, "payment_method_id": pay_id})
    assert wrong.code == "pre[1]"
    done = ep.call("modify_order_item", {"order_id": order_id, "line_id": line_id, "item_id": new_id, "payment_method_id": pay_id})
    assert done.outcome == "success", done.content
    assert (done.data["status"], done.data["total"]) == ("items_modified", 130)
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay_id,))["balance"] == 20
    again = ep.call("modify_order_item", {"order_id": order_id, "line_id": line_id, "item_id": new_id, "payment_method_id": pay_id})
    assert again.code == "state"
    assert ep.call("cancel_order", {"order_id": order_id, "reason": "no_longer_needed"}).code == "state"


def test_retail_return_refunds_only_the_original_method_or_a_gift_card(retail: App) -> None:
    ep = retail.episode()
    order_id, pay_id = _order(ep.db, "delivered", "credit_card", 0)
    line_id, _, _ = _line_and_variants(ep.db, order_id)
    customer_id = _row(ep.db, "SELECT customer_id FROM customer_order WHERE order_id=?", (order_id,))["customer_id"]
    other = _row(ep.db, "SELECT * FROM payment_method WHERE payment_method_id != ? LIMIT 1", (pay_id,))
    ep.db.execute(
        "UPDATE payment_method SET customer_id=?, kind='credit_card', status='active' WHERE payment_method_id=?",
        (customer_id, other["payment_method_id"]),
    )
    refused = ep.call("return_order_item", {"order_id": order_id, "line_id": line_id, "payment_method_id": other["payment_method_id"]})
    assert refused.outcome == "anticipated_rejection" and refused.code == "pre[3]"
    ep.db.execute("UPDATE payment_method SET kind='gift_card', balance=5 WHERE payment_method_id=?", (other["payment_method_id"],))
    done = ep.call("return_order_item", {"order_id": order_id, "line_id": line_id, "payment_method_id": other["payment_method_id"]})
    assert done.outcome == "success", done.content
    assert (done.data["status"], done.data["refund_amount"]) == ("return_requested", 40)
    assert ep.call("receive_return", {"order_id": order_id}).outcome == "success"
    assert _row(ep.db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (other["payment_method_id"],))["balance"] == 45


def test_catalogue_lists_both_new_domains() -> None:
    names = catalog.names()
    assert len(names) == len(set(names))
    assert {catalog.load("northstar_air").category, catalog.load("juniper_goods").category} == {"travel", "shopping"}
