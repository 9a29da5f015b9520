"""Rules that keep generated states coherent (docs/blueprints.md 11.7): ``compute``, ``when`` + ``otherwise``,
``not_before`` (of the row or of the row a ref points to), ``sum_of`` and an entity's ``at_most_one``."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.order import creation_order
from envsynth.runtime.state import StateBuilder

SHOP: dict[str, Any] = {
    "name": "tiny_shop",
    "title": "Tiny Shop",
    "category": "other",
    "description": "Customers, their cards, plans and orders.",
    "entities": [
        {
            "name": "customer",
            "label": "name",
            "rows": 6,
            "fields": [
                {"name": "customer_id", "type": "id"},
                {"name": "name", "type": "name"},
                {"name": "joined_on", "type": "date", "gen": {"dates": ["-3y", "-1d"]}},
            ],
        },
        {
            "name": "card",
            "rows": 30,
            "unique": [["customer_id", "nickname"]],
            "fields": [
                {"name": "card_id", "type": "id"},
                {"name": "customer_id", "type": "ref", "ref": "customer"},
                {"name": "nickname", "type": "string", "gen": {"choice": ["Main", "Travel", "Backup", "Groceries", "Fuel", "Online"]}},
                {"name": "kind", "type": "enum", "values": ["credit_card", "gift_card"]},
                {"name": "balance", "type": "money", "gen": {"range": [5, 200], "when": {"kind": "gift_card"}, "otherwise": 0}},
                {"name": "issued_on", "type": "date", "gen": {"dates": ["-5y", "-1d"], "not_before": "customer_id.joined_on"}},
                {"name": "is_default", "type": "bool"},
            ],
            "at_most_one": [{"per": "customer_id", "where": {"is_default": True}}],
        },
        {
            "name": "membership",
            "rows": 30,
            "fields": [
                {"name": "membership_id", "type": "id"},
                {"name": "customer_id", "type": "ref", "ref": "customer"},
                {
                    "name": "status",
                    "type": "enum",
                    "values": ["active", "ended"],
                    "gen": {"choice": ["active", "ended"], "weights": [3, 1]},
                },
            ],
            "at_most_one": [{"per": ["customer_id"], "where": {"status": "active"}}],
        },
        {
            "name": "purchase",
            "rows": 20,
            "fields": [
                {"name": "purchase_id", "type": "id"},
                {"name": "customer_id", "type": "ref", "ref": "customer"},
                {"name": "total", "type": "money", "gen": {"range": [1, 50], "sum_of": "line.line_total"}},
                {"name": "placed_at", "type": "datetime", "gen": {"dates": ["-2y", "-1d"], "not_before": ["customer_id.joined_on"]}},
                {"name": "paid_at", "type": "datetime", "gen": {"dates": ["-2y", "-1d"], "not_before": "placed_at"}},
            ],
        },
        {
            "name": "line",
            "rows": 50,
            "fields": [
                {"name": "line_id", "type": "id"},
                {"name": "purchase_id", "type": "ref", "ref": "purchase"},
                {"name": "quantity", "type": "quantity", "gen": {"range": [1, 4]}},
                {"name": "unit_price", "type": "money", "gen": {"range": [2, 90]}},
                {"name": "line_total", "type": "money", "gen": {"compute": "quantity * unit_price"}},
            ],
        },
        {
            "name": "visit",
            "rows": 30,
            "fields": [
                {"name": "visit_id", "type": "id"},
                {"name": "status", "type": "enum", "values": ["booked", "done", "cancelled"]},
                {
                    "name": "starts_at",
                    "type": "datetime",
                    "gen": {"dates": ["-10d", "+10d"], "past_when": {"status": "done"}, "future_when": {"status": ["booked"]}},
                },
                {"name": "ends_at", "type": "datetime", "gen": {"after": "starts_at", "by": ["30min", "2h"]}},
            ],
        },
    ],
    "actions": [{"name": "get_card", "kind": "get", "entity": "card", "description": "Look up a card."}],
}
BP = from_dict(SHOP)


def _day(t: str) -> str:
    return t[:10]


@pytest.mark.parametrize("seed", [0, 1, 7, 42])
def test_drawn_rows_honour_the_rules(seed: int) -> None:
    rows = StateBuilder(BP, seed, creation_order(BP)).fill()
    joined = {c["customer_id"]: c["joined_on"] for c in rows["customer"]}
    for c in rows["card"]:
        assert c["issued_on"] >= joined[c["customer_id"]]
        assert (c["balance"] == 0) == (c["kind"] == "credit_card")
    assert len({(c["customer_id"], c["nickname"]) for c in rows["card"]}) == len(rows["card"])
    assert max(Counter(c["customer_id"] for c in rows["card"] if c["is_default"]).values(), default=0) <= 1
    assert max(Counter(m["customer_id"] for m in rows["membership"] if m["status"] == "active").values()) == 1
    for p in rows["purchase"]:
        assert _day(p["placed_at"]) >= joined[p["customer_id"]]
        assert p["paid_at"] >= p["placed_at"]
    for v in rows["visit"]:
        if v["status"] == "done":
            assert v["starts_at"][:10] < BP.reference_date
        elif v["status"] == "booked":
            assert v["starts_at"][:10] > BP.reference_date
        assert v["ends_at"] > v["starts_at"]
    sums: Counter[str] = Counter()
    for line in rows["line"]:
        assert line["line_total"] == round(line["quantity"] * line["unit_price"], 2)
        sums[line["purchase_id"]] += line["line_total"]
    for p in rows["purchase"]:
        if p["purchase_id"] in sums:
            assert p["total"] == pytest.approx(sums[p["purchase_id"]], abs=0.005)


def test_fixed_values_are_kept() -> None:
    b = StateBuilder(BP, 3, creation_order(BP))
    b.fill({"customer": 1})
    cust = b.rows["customer"][0]
    row = b.add(BP.entity("card"), {"customer_id": cust["customer_id"], "issued_on": "2000-01-01", "kind": "gift_card"})
    assert row is not None and row["issued_on"] == "2000-01-01"


@pytest.mark.parametrize("seed", range(6))
def test_a_given_date_picks_a_parent_it_fits(seed: int) -> None:
    b = StateBuilder(BP, seed, creation_order(BP))
    b.fill({"customer": 6})
    earliest = min(c["joined_on"] for c in b.rows["customer"])
    row = b.add(BP.entity("card"), {"issued_on": earliest, "kind": "credit_card"})
    assert row is not None
    assert next(c for c in b.rows["customer"] if c["customer_id"] == row["customer_id"])["joined_on"] == earliest


def test_sum_of_never_changes_given_rows() -> None:
    rows = StateBuilder(BP, 2, creation_order(BP)).fill({"customer": 2, "purchase": 3})
    before = [dict(p) for p in rows["purchase"]]
    b = StateBuilder(BP, 9, creation_order(BP), rows)
    for p in before:
        b.add(BP.entity("line"), {"purchase_id": p["purchase_id"]})
    assert rows["purchase"] == before  # a task state's rows are only added to


def _broken(path: list[Any], value: Any) -> dict[str, Any]:
    d = copy.deepcopy(SHOP)
    node: Any = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return d


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (
            ["entities", 1, "fields", 5, "gen", "not_before"],
            "customer_id.born_on",
            r"fields\[5\]\.gen\.not_before: .*customer has no field 'born_on'",
        ),
        (["entities", 1, "fields", 5, "gen", "not_before"], "nickname.joined_on", r"nickname is string, not a ref"),
        (["entities", 1, "fields", 5, "gen", "not_before"], "kind", r"kind is enum; not_before needs date or datetime"),
        (["entities", 4, "fields", 4, "gen", "compute"], "quantity * price", r"line has no field 'price'"),
        (["entities", 4, "fields", 4, "gen", "compute"], "quantity ** 2", r"an operator other than"),
        (["entities", 4, "fields", 4, "gen", "compute"], "__import__('os')", r"calls something other than"),
        (["entities", 3, "fields", 2, "gen", "sum_of"], "card.balance", r"card has no ref to purchase"),
        (["entities", 2, "at_most_one", 0, "where"], {"status": "paused"}, r"at_most_one\[0\]\.where\.status: 'paused' is not a value"),
        (["entities", 2, "at_most_one", 0, "where"], {"status": ["active", "ended"]}, r"every value of membership.status matches"),
        (["entities", 2, "at_most_one", 0, "per"], ["owner_id"], r"membership has no field 'owner_id'"),
        (
            ["entities", 5, "fields", 2, "gen", "past_when"],
            {"status": "over"},
            r"past_when\.status: 'over' is not a value of visit\.status",
        ),
        (
            ["entities", 5, "fields", 1, "gen"],
            {"choice": ["done"], "future_when": {"status": "done"}},
            r"future_when is for date or datetime",
        ),
    ],
)
def test_bad_rules_are_located(path: list[Any], value: Any, match: str) -> None:
    with pytest.raises(BlueprintError, match=match):
        from_dict(_broken(path, value))


def test_otherwise_needs_when() -> None:
    d = _broken(["entities", 1, "fields", 4, "gen"], {"range": [5, 200], "otherwise": 0})
    with pytest.raises(BlueprintError, match=r"otherwise .* needs when"):
        from_dict(d)


def test_when_without_otherwise_still_needs_nullable() -> None:
    d = _broken(["entities", 1, "fields", 4, "gen"], {"range": [5, 200], "when": {"kind": "gift_card"}})
    with pytest.raises(BlueprintError, match="make it nullable: true, or set otherwise"):
        from_dict(d)
