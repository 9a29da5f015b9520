"""The core kept from s0, and the rules that keep distractors from changing a task instead of distracting."""

from __future__ import annotations

from typing import Any

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, StateBuilder
from envsynth.tasks.building.core import _guarded, _prune
from envsynth.tasks.building.distractors import add_distractors
from envsynth.tasks.building.world import value_pool
from envsynth.tasks.planning.chain import Step


@pytest.fixture(scope="module")
def market() -> App:
    return compile_app(catalog.load("harbor_market"), 0)


def _world(app: App, seed: int, counts: dict[str, int]) -> Rows:
    return StateBuilder(app.blueprint, seed, app.order).use_pool(value_pool(app)).fill(counts)


def test_the_core_keeps_rows_a_pre_condition_counts(market: App) -> None:
    """pay_order needs ``exists(order_item, order_id=...)``: the bound order's items stay in the core, other orders' go."""
    steps = [Step(market.spec_by_name["pay_order"])]
    guarded = _guarded(steps)
    assert guarded == {"order_item"}
    for seed in range(50):  # a drawn world with items of the bound order and of the other one
        s0 = _world(market, seed, {e.name: 2 for e in market.blueprint.entities})
        order = s0["customer_order"][0]
        mine = [r for r in s0["order_item"] if r["order_id"] == order["order_id"]]
        others = [r for r in s0["order_item"] if r["order_id"] != order["order_id"]]
        if mine and others:
            break
    else:
        pytest.fail("no such world in 50 seeds")
    bound = [{"customer_order": ("customer_order", order["order_id"])}]

    core = _prune(market, s0, steps, bound, guarded)
    kept_items = {r["order_item_id"] for r in core["order_item"]}
    assert kept_items == {r["order_item_id"] for r in mine}
    # and what those items refer to, so the core is a valid state
    for item in core["order_item"]:
        assert any(r["inventory_id"] == item["inventory_id"] for r in core["inventory"])
        assert any(r["product_id"] == item["product_id"] for r in core["product"])
    assert [r["order_id"] for r in core["customer_order"]] == [order["order_id"]]
    # without the counted table the items are left out (the chain would then fail on the core)
    assert _prune(market, s0, steps, bound)["order_item"] == []


def _customer_and_order(app: App, seed: int) -> tuple[Rows, dict[str, Any], dict[str, Any]]:
    core = _world(app, seed, {"customer": 1, "address": 1, "customer_order": 1})
    return core, core["customer"][0], core["customer_order"][0]


def test_no_distractor_in_a_counted_table_refers_to_a_row_the_chain_acts_on(market: App) -> None:
    """Closing an account counts the customer's pending orders: copies of the task's order may not belong to that customer."""
    guarded = _guarded([Step(market.spec_by_name["close_customer_account"])])
    assert "customer_order" in guarded
    unguarded_hits = 0
    for seed in range(30):
        core, customer, order = _customer_and_order(market, seed)
        targets = [("customer_order", order["order_id"]), ("customer", customer["customer_id"])]
        args = (market.blueprint, market.order, core, targets, 4, seed, value_pool(market), guarded)
        extra, _ = add_distractors(*args, frozenset(targets))
        assert extra, seed
        assert all(r["customer_id"] != customer["customer_id"] for r in extra.get("customer_order", [])), seed
        plain, _ = add_distractors(*args)  # the same draw without the rule
        unguarded_hits += any(r["customer_id"] == customer["customer_id"] for r in plain.get("customer_order", []))
    assert unguarded_hits > 0, "without the rule some draws do refer to the customer (else this test proves nothing)"


@pytest.mark.parametrize("name", ["harbor_market", "northwind_bank", "peak_fitness"])
def test_every_distractor_differs_from_its_target_in_a_value_the_target_has(name: str) -> None:
    """Near-duplicates (level 3) included: a copy may differ where the target is empty, but that could never be said."""
    app = compile_app(catalog.load(name), 0)
    levels: dict[str, int] = {}
    for ent in app.order:
        for seed in range(12):
            core = _world(app, seed, {e.name: 1 for e in app.order})
            target = core[ent.name][0]
            extra, per_level = add_distractors(app.blueprint, app.order, core, [(ent.name, target[ent.id_field])], 3, seed, value_pool(app))
            for k, v in per_level.items():
                levels[k] = levels.get(k, 0) + v
            facts = {f.name: target[f.name] for f in ent.fields[1:] if target.get(f.name) is not None}
            for row in extra.get(ent.name, []):
                assert any(row.get(f) != v for f, v in facts.items()), (ent.name, seed, row, target)
    assert all(levels.get(f"d{i}", 0) > 0 for i in (1, 2, 3)), levels
