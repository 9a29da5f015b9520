"""The ids a task's later states rename are renamed inside list arguments too (docs/blueprints.md 11.1)."""

from __future__ import annotations

from pathlib import Path

from envsynth.blueprint.load import load_blueprint
from envsynth.compiler.compile import compile_app
from envsynth.tasks.building.states import remap_call
from envsynth.tasks.model import Call

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "list_effects.yaml"


def test_a_list_of_ids_and_the_ids_in_a_list_of_objects_are_renamed() -> None:
    app = compile_app(load_blueprint(EXAMPLE))
    call = Call(
        tool="book_reservation",
        args={
            "customer_id": "cus_1",
            "amount_due": 300,
            "flight_ids": ["flt_1", "flt_2"],
            "passengers": [{"first_name": "Ann", "last_name": "Lee", "dob": "1990-01-02"}],
            "payments": [{"payment_method_id": "pmt_1", "amount": 300}],
        },
    )
    mapping = {("customer", "cus_1"): "cus_9", ("flight", "flt_2"): "flt_8", ("payment_method", "pmt_1"): "pmt_7"}
    args = remap_call(app, call, mapping).args
    assert args["customer_id"] == "cus_9"
    assert args["flight_ids"] == ["flt_1", "flt_8"]
    assert args["payments"] == [{"payment_method_id": "pmt_7", "amount": 300}]
    assert args["passengers"] == call.args["passengers"]
