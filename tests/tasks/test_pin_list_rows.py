"""A later step of a chain can act on a row a list parameter of an earlier step loaded (docs/blueprints.md 11.1)."""

from __future__ import annotations

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.instantiate import ChainFailed, instantiate
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.synth import value_pool


def test_receiving_one_of_the_returned_items_pins_a_row_of_the_list() -> None:
    app = compile_app(catalog.load("juniper_goods"))
    steps = [Step(app.spec_by_name["return_order_items"]), Step(app.spec_by_name["receive_returned_item"], pins={"line_id": (0, "lines")})]
    made, errors = [], []
    for seed in range(6):
        world = StateBuilder(app.blueprint, seed, app.order).use_pool(value_pool(app)).fill()
        try:
            _, calls, bound = instantiate(app, steps, world, seed)
        except ChainFailed as exc:
            errors.append(str(exc))
            continue
        made.append(calls)
        assert bound[0]["lines"] == ("order_line", calls[0].args["line_ids"][0])
        assert calls[1].args["line_id"] == calls[0].args["line_ids"][0]
    assert made, errors
