"""The distractor level of a row, read off the task's core rows the way envsynth.tasks.building.distractors makes each level."""

from __future__ import annotations

from envsynth import catalog
from envsynth.view.taskview import distractor_level

BP = catalog.load("harbor_market")
TOTE = {
    "product_id": "prd_100001",
    "category_id": "cat_100001",
    "name": "Charcoal Cotton Tote Bag",
    "sku": "HM-41340",
    "brand": "Saltbox",
    "price": 171.15,
    "status": "active",
    "created_on": "2025-12-07",
}
ANNA = {"customer_id": "cus_100001", "full_name": "Anna Weber", "email": "anna@example.net", "phone": "+1-555-0100"}
CORE = {"product": [TOTE], "customer": [ANNA]}


def level(table: str, row: dict) -> str:
    return distractor_level(BP, table, row, CORE)


def test_each_level_is_recognised() -> None:
    near_duplicate = {**TOTE, "product_id": "prd_100002", "sku": "HM-00002", "price": 99.0}  # one fact changed
    namesake = {**TOTE, "product_id": "prd_100003", "sku": "HM-00003", "brand": "Pebble", "price": 55.0, "created_on": "2025-07-06"}
    plain = {**namesake, "product_id": "prd_100004", "sku": "HM-00004", "name": "Sand Linen Throw Blanket"}
    related = {"order_id": "ord_100001", "customer_id": "cus_100001", "address_id": "adr_100001", "status": "pending"}
    unrelated = {**related, "order_id": "ord_100002", "customer_id": "cus_999999"}
    assert level("product", near_duplicate) == "d3"
    assert level("product", namesake) == "d2"
    assert level("product", plain) == "d1"
    assert level("customer_order", related) == "d4"  # another order of the task's customer
    assert level("customer_order", unrelated) == "d1"
    assert level("customer", {**ANNA, "customer_id": "cus_100002", "email": "a.w@example.org", "phone": "+1-555-0199"}) == "d3"
