"""A request names every row of a list-of-ids argument ("return the item ... and the item ..."), not "it"."""

from __future__ import annotations

import random

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.core import _targets
from envsynth.tasks.model import Call
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.wording.describe import describe, render
from envsynth.tasks.wording.instruction import Phraser
from envsynth.tasks.wording.request import _param_descriptions


def test_a_return_of_two_items_names_both() -> None:
    app = compile_app(catalog.load("juniper_goods"))
    rows = StateBuilder(app.blueprint, 3, app.order).fill()
    order = rows["customer_order"][0]
    lines = rows["order_line"][:2]
    for ln in lines:
        ln["order_id"] = order["order_id"]
    call = Call(tool="return_order_items", args={"order_id": order["order_id"], "line_ids": [ln["line_id"] for ln in lines]})
    targets = _targets(app, [Step(app.spec_by_name["return_order_items"])], [call], [{}], rows)
    assert [("order_line", ln["line_id"]) for ln in lines] == [tk for tk in targets if tk[0] == "order_line"]
    descs = {("order_line", ln["line_id"]): describe(app.blueprint, rows, "order_line", ln, random.Random(0)) for ln in lines}
    descs[("customer_order", order["order_id"])] = describe(app.blueprint, rows, "customer_order", order, random.Random(0))
    per_param = _param_descriptions(app, [call], descs)[0]
    text = Phraser(app.blueprint, app.spec_by_name, random.Random(0)).clause(0, [call], per_param)
    for ln in lines:
        assert render(app.blueprint, descs[("order_line", ln["line_id"])]) in text, text
    assert " it " not in f" {text} "
