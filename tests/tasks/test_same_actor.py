"""Every step of a chain that acts for a user acts for the same one (docs/blueprints.md 11.9): the person who asks."""

from __future__ import annotations

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.instantiate import ChainFailed, instantiate
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.synth import value_pool


def test_delivering_then_returning_from_an_order_acts_for_one_customer() -> None:
    app = compile_app(catalog.load("juniper_goods"))
    deliver, ret = app.spec_by_name["deliver_order"], app.spec_by_name["return_order_items"]
    steps = [Step(deliver), Step(ret, pins={"order_id": (0, "customer_order")})]
    made, errors = 0, []
    for seed in range(10):
        world = StateBuilder(app.blueprint, seed, app.order).use_pool(value_pool(app)).fill()
        try:
            _, calls, _ = instantiate(app, steps, world, seed)
        except ChainFailed as exc:
            errors.append(str(exc))
            continue
        made += 1
        assert calls[0].args["customer_id"] == calls[1].args["customer_id"]
    assert made == 10, errors
