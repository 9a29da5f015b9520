"""The retail catalogue domain (juniper_goods, blueprint language v2) on real episodes: its rules, every
pre-condition exercised by the procedural tests, and a refusal task scored on the real runtime."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import envsynth
from envsynth import catalog
from envsynth.blueprint.policy import agent_rules
from envsynth.compiler.build import BuiltApp
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.runtime.app import App
from envsynth.runtime.episode import Episode
from envsynth.runtime.toolkit import date_sub, days
from envsynth.tasks.admission.policy import oracle_plus_forbidden
from replay_helpers import play


@pytest.fixture(scope="module")
def retail(built_catalog: dict[str, BuiltApp]) -> App:
    return envsynth.load_app(built_catalog["juniper_goods"].path)


def _row(db: sqlite3.Connection, sql: str, args: tuple[Any, ...] = ()) -> dict[str, Any]:
    cur = db.execute(sql, args)
    cols = [c[0] for c in cur.description]
    row = cur.fetchone()
    assert row is not None, sql
    return dict(zip(cols, row))


def _balance(db: sqlite3.Connection, pay_id: str) -> float:
    return float(_row(db, "SELECT balance FROM payment_method WHERE payment_method_id=?", (pay_id,))["balance"])


def _card(db: sqlite3.Connection, customer_id: str, kind: str, balance: float, skip: tuple[str, ...] = ()) -> str:
    """A payment method of the customer, active, of ``kind`` with ``balance`` (another row than those in ``skip``)."""
    marks = ",".join("?" * len(skip)) or "''"
    p = _row(db, f"SELECT payment_method_id FROM payment_method WHERE payment_method_id NOT IN ({marks}) LIMIT 1", skip)
    db.execute(
        "UPDATE payment_method SET customer_id=?, kind=?, balance=?, status='active' WHERE payment_method_id=?",
        (customer_id, kind, balance, p["payment_method_id"]),
    )
    return str(p["payment_method_id"])


def _order(ep: Episode, status: str, kind: str, balance: float, delivered_days_ago: int | None = None) -> tuple[str, str, str]:
    """An order (total 120) of its customer in ``status``, paid with a fresh payment method: (order, customer, method)."""
    db = ep.db
    o = _row(db, "SELECT order_id, customer_id FROM customer_order LIMIT 1")
    pay_id = _card(db, o["customer_id"], kind, balance)
    delivered = None if delivered_days_ago is None else date_sub(ep.ctx.now(), days(delivered_days_ago))
    db.execute(
        "UPDATE customer_order SET status=?, payment_method_id=?, total=120, delivered_at=? WHERE order_id=?",
        (status, pay_id, delivered, o["order_id"]),
    )
    db.execute("DELETE FROM payment WHERE order_id=?", (o["order_id"],))
    return o["order_id"], o["customer_id"], pay_id


def _lines(db: sqlite3.Connection, order_id: str, prices: list[float]) -> list[str]:
    """Lines of the order at these prices (each an 'ordered' item); every other line of the order leaves it."""
    other = _row(db, "SELECT order_id FROM customer_order WHERE order_id != ? LIMIT 1", (order_id,))["order_id"]
    db.execute("UPDATE order_line SET order_id=? WHERE order_id=?", (other, order_id))
    ids = [r[0] for r in db.execute("SELECT line_id FROM order_line LIMIT ?", (len(prices),))]
    for line_id, price in zip(ids, prices):
        db.execute("UPDATE order_line SET order_id=?, price=?, status='ordered' WHERE line_id=?", (order_id, price, line_id))
    return ids


def _variants(db: sqlite3.Connection, line_id: str) -> tuple[str, str]:
    """Another in-stock variant (price 50) of the line's product (the line's item costing 40), and a variant of another product."""
    items = [r[0] for r in db.execute("SELECT item_id FROM item LIMIT 3")]
    prods = [r[0] for r in db.execute("SELECT product_id FROM product LIMIT 2")]
    for item_id, prod, color, price in zip(items, [prods[0], prods[0], prods[1]], ["black", "navy", "red"], [40, 50, 45]):
        db.execute(
            "UPDATE item SET product_id=?, color=?, size='medium', stock='in_stock', price=? WHERE item_id=?", (prod, color, price, item_id)
        )
    db.execute("UPDATE order_line SET item_id=?, price=40 WHERE line_id=?", (items[0], line_id))
    return items[1], items[2]


def test_cancel_takes_only_the_permitted_reasons_and_refunds_every_charge(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, gift = _order(ep, "pending", "gift_card", 30)
    card = _card(ep.db, customer_id, "credit_card", 0, skip=(gift,))
    for pay_id, amount in ((gift, 70), (card, 50)):
        ep.db.execute(
            "INSERT INTO payment (payment_id, order_id, payment_method_id, amount, kind, status) VALUES (?, ?, ?, ?, 'charge', 'completed')",
            (f"pmt_t{amount}", order_id, pay_id, amount),
        )
    args = {"order_id": order_id, "customer_id": customer_id}
    assert ep.call("cancel_order", {**args, "reason": "found_it_cheaper"}).code == "invalid_arguments"
    done = ep.call("cancel_order", {**args, "reason": "ordered_by_mistake"})
    assert done.outcome == "success", done.content
    assert _balance(ep.db, gift) == 150  # the gift card that pays the order gets its total back at once
    charges = ep.db.execute("SELECT status FROM payment WHERE order_id=? AND kind='charge'", (order_id,)).fetchall()
    refunds = ep.db.execute("SELECT payment_method_id, amount FROM payment WHERE order_id=? AND kind='refund'", (order_id,)).fetchall()
    assert [c[0] for c in charges] == ["refunded", "refunded"]
    assert sorted(refunds) == sorted([(gift, 70), (card, 50)])
    ep2 = retail.episode()
    processed, owner, _ = _order(ep2, "processed", "credit_card", 0)
    assert ep2.call("cancel_order", {"order_id": processed, "customer_id": owner, "reason": "no_longer_needed"}).code == "state"


def test_an_order_of_another_customer_is_refused(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, _ = _order(ep, "pending", "credit_card", 0)
    other = _row(ep.db, "SELECT customer_id FROM customer WHERE customer_id != ? LIMIT 1", (customer_id,))["customer_id"]
    res = ep.call("cancel_order", {"order_id": order_id, "customer_id": other, "reason": "no_longer_needed"})
    assert (res.outcome, res.code) == ("anticipated_rejection", "auth:customer_order")


def test_modify_item_keeps_the_product_happens_once_and_charges_the_gift_card(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, gift = _order(ep, "pending", "gift_card", 30)
    (line_id,) = _lines(ep.db, order_id, [40])
    new_id, other_id = _variants(ep.db, line_id)
    args = {"order_id": order_id, "line_id": line_id, "payment_method_id": gift, "customer_id": customer_id}
    assert ep.call("modify_order_item", {**args, "item_id": other_id}).code == "pre[1]"
    done = ep.call("modify_order_item", {**args, "item_id": new_id})
    assert done.outcome == "success", done.content
    assert (done.data["status"], done.data["total"]) == ("items_modified", 130)
    assert _balance(ep.db, gift) == 20
    assert _row(ep.db, "SELECT item_id, price FROM order_line WHERE line_id=?", (line_id,)) == {"item_id": new_id, "price": 50}
    assert ep.call("modify_order_item", {**args, "item_id": new_id}).code == "state"
    assert ep.call("cancel_order", {"order_id": order_id, "customer_id": customer_id, "reason": "no_longer_needed"}).code == "state"


def test_changing_the_payment_charges_the_new_method_and_refunds_the_old_one(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, old = _order(ep, "pending", "gift_card", 10)
    ep.db.execute(
        "INSERT INTO payment (payment_id, order_id, payment_method_id, amount, kind, status) VALUES ('pmt_t1', ?, ?, 120, 'charge', 'completed')",
        (order_id, old),
    )
    new = _card(ep.db, customer_id, "gift_card", 100, skip=(old,))
    args = {"order_id": order_id, "customer_id": customer_id, "payment_method_id": new}
    assert ep.call("modify_order_payment", args).code == "pre[3]"  # 100 left; the order comes to 120
    ep.db.execute("UPDATE payment_method SET balance=200 WHERE payment_method_id=?", (new,))
    done = ep.call("modify_order_payment", args)
    assert done.outcome == "success", done.content
    assert (_balance(ep.db, new), _balance(ep.db, old)) == (80, 130)
    rows = ep.db.execute(
        "SELECT payment_method_id, amount, kind, status FROM payment WHERE order_id=? ORDER BY kind, payment_method_id", (order_id,)
    )
    assert sorted(rows.fetchall()) == sorted(
        [(old, 120, "charge", "refunded"), (new, 120, "charge", "completed"), (old, 120, "refund", "completed")]
    )


def test_a_return_of_several_items_refunds_each_as_it_arrives(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, card = _order(ep, "delivered", "credit_card", 0, delivered_days_ago=5)
    gift = _card(ep.db, customer_id, "gift_card", 5, skip=(card,))
    other = _card(ep.db, customer_id, "credit_card", 0, skip=(card, gift))
    lines = _lines(ep.db, order_id, [40, 25.5])
    args = {"order_id": order_id, "line_ids": lines, "customer_id": customer_id}
    assert ep.call("return_order_items", {**args, "payment_method_id": other}).code == "pre[2]"  # neither original nor a gift card
    stranger = _row(ep.db, "SELECT line_id FROM order_line WHERE order_id != ? LIMIT 1", (order_id,))["line_id"]
    assert ep.call("return_order_items", {**args, "line_ids": [lines[0], stranger], "payment_method_id": gift}).code == "pre[0]"
    done = ep.call("return_order_items", {**args, "payment_method_id": gift})
    assert done.outcome == "success", done.content
    assert done.data["status"] == "return_requested"
    assert [r[0] for r in ep.db.execute("SELECT status FROM order_line WHERE order_id=?", (order_id,))] == ["return_requested"] * 2
    first = ep.call("receive_returned_item", {"line_id": lines[0]})
    assert first.outcome == "success", first.content
    assert _balance(ep.db, gift) == 45
    assert _row(ep.db, "SELECT status FROM customer_order WHERE order_id=?", (order_id,))["status"] == "return_requested"
    assert ep.call("receive_returned_item", {"line_id": lines[1]}).outcome == "success"
    assert _balance(ep.db, gift) == 70.5
    assert _row(ep.db, "SELECT status FROM customer_order WHERE order_id=?", (order_id,))["status"] == "returned"  # the last item closes it
    refunds = ep.db.execute("SELECT amount FROM payment WHERE order_id=? AND kind='refund' ORDER BY amount", (order_id,)).fetchall()
    assert [r[0] for r in refunds] == [25.5, 40]


def test_returns_close_30_days_after_delivery(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, card = _order(ep, "delivered", "credit_card", 0, delivered_days_ago=40)
    lines = _lines(ep.db, order_id, [40])
    res = ep.call("return_order_items", {"order_id": order_id, "line_ids": lines, "payment_method_id": card, "customer_id": customer_id})
    assert (res.outcome, res.code) == ("anticipated_rejection", "policy:return_window")


def test_an_exchange_is_settled_on_a_gift_card_and_completed_with_the_new_item(retail: App) -> None:
    ep = retail.episode()
    order_id, customer_id, gift = _order(ep, "delivered", "gift_card", 30, delivered_days_ago=3)
    (line_id,) = _lines(ep.db, order_id, [40])
    new_id, _ = _variants(ep.db, line_id)
    args = {"order_id": order_id, "line_id": line_id, "item_id": new_id, "payment_method_id": gift, "customer_id": customer_id}
    done = ep.call("exchange_order_item", args)
    assert done.outcome == "success", done.content
    assert (done.data["exchange_difference"], _balance(ep.db, gift)) == (10, 20)
    closed = ep.call("complete_exchange", {"order_id": order_id, "customer_id": customer_id})
    assert closed.outcome == "success", closed.content
    assert _row(ep.db, "SELECT item_id, status FROM order_line WHERE line_id=?", (line_id,)) == {"item_id": new_id, "status": "exchanged"}


def test_a_variant_is_listed_once_per_colour_and_size(retail: App) -> None:
    ep = retail.episode()
    item = _row(ep.db, "SELECT i.* FROM item i JOIN product p ON p.product_id = i.product_id WHERE p.status = 'active' LIMIT 1")
    args = {k: item[k] for k in ("product_id", "color", "size", "price")}
    res = ep.call("add_item", {**args, "sku": "JC-00001"})
    assert (res.outcome, res.code) == ("anticipated_rejection", "unique:product_id+color+size")
    assert ["product_id", "color", "size"] in retail.blueprint.entity("item").unique


def test_every_pre_condition_has_a_violate_case_that_is_exercised(retail: App, built_catalog: dict[str, BuiltApp]) -> None:
    verdicts = json.loads((Path(built_catalog["juniper_goods"].path) / "tests.json").read_text())["verdicts"]
    observed = {(v["tool"], v["case"]): (v["observed"], v["ok"]) for v in verdicts}
    checks = [(spec.name, c.id) for spec in retail.specs for c in spec.pre]
    assert len(checks) > 100
    missing = [(tool, cid, observed.get((tool, f"violate:{cid}"))) for tool, cid in checks]
    assert [m for m in missing if m[2] != ("anticipated_rejection", True)] == []
    assert not [k for k, (obs, _) in observed.items() if obs == "not_constructed"]


def test_the_policy_has_enforced_and_agent_obeyed_rules(retail: App) -> None:
    policy = retail.blueprint.policy
    assert policy is not None and "# Juniper & Co customer desk: policy" in policy.text
    assert {r.rule for r in policy.rules if r.check} == {"return_window"}
    assert {r.rule for r in agent_rules(retail.blueprint)} == {"exchange_window", "keep_paying_method", "gift_card_balance_left"}
    spec = retail.spec_by_name["return_order_items"]
    assert "policy:return_window" in [c.id for c in spec.pre]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("retail_corpus") / "corpus"
    build_corpus(out, blueprints=[catalog.load("juniper_goods")], tasks_per_app=16, states=2, distractors=2, seed=0)
    return load_corpus(out)


def test_a_refusal_scores_one_for_the_oracle_and_zero_with_the_forbidden_call(corpus: Corpus) -> None:
    tasks = corpus.tasks
    involved = [t for t in tasks if t.policy is not None]
    refusals = [t for t in involved if t.policy and t.policy.refusal]
    # about half of the tasks with a write are offered a refusal; it is made only where every state can carry one (not on
    # a staff request; on a goal about its rows as a whole, only on a row the states hold). Measured against all tasks:
    # multi-goal requests meet more rules, so the policy tasks grow more than the refusals
    assert len(involved) >= 0.1 * len(tasks) and len(refusals) >= 0.05 * len(tasks), (len(tasks), len(involved), len(refusals))
    for task in refusals:
        assert task.policy is not None and task.policy.request and task.policy.request in task.instruction
        assert play(corpus, task, task.oracle) == 1.0
        assert play(corpus, task, []) == 0.0
        assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0  # the tools allow it; the final state gives it away
