"""The oracle follows the solvability rule's routes: it finds every row it passes the id of, as an agent must."""

from __future__ import annotations

from typing import Any

import pytest
from test_solvable import DANA as SOLVABLE_DANA

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import synthesize
from envsynth.tasks.admission import admit as admission
from envsynth.tasks.admission.admit import Admitted
from envsynth.tasks.admission.routes import look_up_rows
from envsynth.tasks.building.instantiate import Workspace, execute
from envsynth.tasks.model import Call, Coordinates, Ref, Rejection, Task, TaskState, UserProfile
from envsynth.tasks.planning.oracle import oracle_program
from envsynth.tasks.planning.refs import MISSING, resolve, source
from envsynth.tasks.wording.describe import Description

CATEGORY = {"category_id": "cat_1", "name": "Kitchen", "description": "Pots and mugs."}
DANA = {**SOLVABLE_DANA, "customer_id": "cus_1"}  # the customer of test_solvable, with a shorter id
LEE = {**DANA, "customer_id": "cus_2", "full_name": "Lee Park", "email": "lee@example.net", "phone": "+1-555-0101"}


def _product(i: int, name: str, brand: str = "Acme", status: str = "draft") -> dict[str, Any]:
    return {
        "product_id": f"prd_{i}",
        "category_id": "cat_1",
        "name": name,
        "sku": f"HM-{i:05d}",
        "brand": brand,
        "price": 10.0 + i,
        "status": status,
        "created_on": "2025-01-02",
    }


def _order(i: int, customer: str, placed_at: str) -> dict[str, Any]:
    return {
        "order_id": f"ord_{i}",
        "customer_id": customer,
        "address_id": f"adr_{customer}",
        "status": "pending",
        "placed_at": placed_at,
        "payment_method": None,
        "paid_at": None,
        "carrier": None,
        "tracking_number": None,
        "shipped_at": None,
        "delivered_at": None,
    }


def _address(customer: str) -> dict[str, Any]:
    return {
        "address_id": f"adr_{customer}",
        "customer_id": customer,
        "kind": "home",
        "street": "1 Main St",
        "city": "Springfield",
        "state": "IL",
        "postal_code": "62701",
        "is_default": True,
    }


@pytest.fixture(scope="module")
def harbor() -> App:
    return compile_app(catalog.load("harbor_market"), 0)


def _admitted(rows: dict[str, list[dict[str, Any]]], oracle: list[Call], descs: dict[Any, Description], **task: Any) -> Admitted:
    answer_step = task.pop("answer_step", None)
    made = Task(
        id="harbor_market-t00000-s0",
        app="harbor_market",
        kind="action",
        instruction=task.pop("instruction", "Please do it."),
        user=UserProfile(name=task.pop("user", "Sam Staff"), role="customer"),
        state=TaskState(core=rows),
        oracle=oracle,
        oracle_program=oracle_program(oracle, answer_step, "status" if answer_step is not None else None),
        answer_step=answer_step,
        answer_field="status" if answer_step is not None else None,
        expected_effects={},
        visible_tools=[c.tool for c in oracle],
        coordinates=Coordinates(app=0, task=0, state=0, distractors=0),
        seed=0,
    )
    return Admitted(made, rows, descs)


def _ids(app: App, admitted: Admitted) -> list[dict[str, Any]]:
    """The arguments each call of the oracle makes once its refs are filled in (run on the state)."""
    results = execute(app, admitted.state, list(admitted.task.oracle), seed=1).results
    out = []
    for c in admitted.task.oracle:
        out.append({**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}})
    return out


def test_a_row_named_by_its_name_is_found_by_a_search_and_taken_from_its_place_in_the_result(harbor: App) -> None:
    products = [_product(1, "Blue Mug"), _product(2, "Blue Mug XL"), _product(3, "Red Mug")]
    rows = {"category": [CATEGORY], "product": products}
    named = Description("product", {"name": "Blue Mug XL", "brand": "Acme"})
    varied = look_up_rows(
        harbor, _admitted(rows, [Call(tool="activate_product", args={"product_id": "prd_2"})], {("product", "prd_2"): named})
    )
    assert not isinstance(varied, Rejection)
    search, act = varied.task.oracle
    assert (search.tool, search.args, search.refs) == ("search_products", {"name": "Blue Mug XL", "brand": "Acme"}, {})
    assert act.args == {} and act.refs == {"product_id": Ref(step=0, field="product_id", item=0)}
    assert varied.lookups == (0,) and "search_products" in varied.task.visible_tools
    assert _ids(harbor, varied)[1] == {"product_id": "prd_2"}
    assert "r0['items'][0]['product_id']" in varied.task.oracle_program


def test_a_row_named_by_a_unique_value_is_found_by_the_get_by_it(harbor: App) -> None:
    rows = {"category": [CATEGORY], "product": [_product(1, "Blue Mug"), _product(2, "Red Mug")]}
    named = Description("product", {"sku": "HM-00002"})
    varied = look_up_rows(
        harbor, _admitted(rows, [Call(tool="activate_product", args={"product_id": "prd_2"})], {("product", "prd_2"): named})
    )
    assert not isinstance(varied, Rejection)
    assert [(c.tool, c.args) for c in varied.task.oracle] == [("get_product_by_sku", {"sku": "HM-00002"}), ("activate_product", {})]
    assert varied.task.oracle[1].refs == {"product_id": Ref(step=0, field="product_id")}


def test_my_order_is_found_through_me_and_the_question_moves_past_the_lookups(harbor: App) -> None:
    rows = {
        "customer": [DANA, LEE],
        "address": [_address("cus_1"), _address("cus_2")],
        "customer_order": [
            _order(1, "cus_2", "2026-03-03T10:00:00"),
            _order(2, "cus_1", "2026-03-03T10:00:00"),
            _order(3, "cus_1", "2026-04-01T09:00:00"),
        ],
    }
    mine = Description("customer_order", {"placed_at": "2026-03-03T10:00:00"})
    asked = _admitted(
        rows,
        [Call(tool="get_order", args={"order_id": "ord_2"})],
        {("customer_order", "ord_2"): mine},
        instruction="Hi, Dana Whitfield here (dana@example.net). What is the status of my order placed on March 3, 2026 at 10:00 AM?",
        user="Dana Whitfield",
        answer_step=0,
    )
    varied = look_up_rows(harbor, asked)
    assert not isinstance(varied, Rejection)
    me, search, get = varied.task.oracle
    assert (me.tool, me.args) == ("find_customer_by_email", {"email": "dana@example.net"})
    assert search.tool == "search_orders" and search.refs == {"customer_id": Ref(step=0, field="customer_id")}
    assert search.args == {"min_placed_at": "2026-03-03T10:00:00", "max_placed_at": "2026-03-03T10:00:00"}
    assert get.refs == {"order_id": Ref(step=1, field="order_id", item=0)}
    assert varied.task.answer_step == 2 and varied.task.oracle_program.endswith("return r2['status']\n")
    assert _ids(harbor, varied)[2] == {"order_id": "ord_2"}  # Lee's order of the same minute is not listed


def test_a_lookup_goes_before_an_earlier_call_that_writes_what_it_reads(harbor: App) -> None:
    products = [_product(1, "Blue Mug", status="active"), _product(2, "Red Mug", status="draft")]
    rows = {"category": [CATEGORY], "product": products}
    descs = {
        ("product", "prd_1"): Description("product", {"name": "Blue Mug"}),
        ("product", "prd_2"): Description("product", {"name": "Red Mug"}),
    }
    oracle = [Call(tool="discontinue_product", args={"product_id": "prd_1"}), Call(tool="activate_product", args={"product_id": "prd_2"})]
    varied = look_up_rows(harbor, _admitted(rows, oracle, descs))
    assert not isinstance(varied, Rejection)
    assert [c.tool for c in varied.task.oracle] == ["search_products", "search_products", "discontinue_product", "activate_product"]
    assert varied.lookups == (0, 1)
    assert [a for a in _ids(harbor, varied)[2:]] == [{"product_id": "prd_1"}, {"product_id": "prd_2"}]


def test_the_same_listing_is_made_once_for_two_rows_it_lists(harbor: App) -> None:
    rows = {"category": [CATEGORY], "product": [_product(1, "Blue Mug", status="discontinued"), _product(2, "Red Mug")]}
    descs = {("product", "prd_1"): Description("product", {"brand": "Acme", "status": "discontinued"})}
    descs[("product", "prd_2")] = Description("product", {"brand": "Acme", "status": "draft"})
    oracle = [Call(tool="get_product", args={"product_id": "prd_1"}), Call(tool="get_product", args={"product_id": "prd_2"})]
    varied = look_up_rows(harbor, _admitted(rows, oracle, descs))
    assert not isinstance(varied, Rejection)
    tools = [c.tool for c in varied.task.oracle]
    assert tools.count("search_products") == 2  # different status filters: two searches
    same = {
        ("product", "prd_1"): Description("product", {"brand": "Acme"}),
        ("product", "prd_2"): Description("product", {"brand": "Acme"}),
    }
    once = look_up_rows(harbor, _admitted(rows, oracle, same))
    assert not isinstance(once, Rejection)
    assert [c.tool for c in once.task.oracle] == ["search_products", "get_product", "get_product"]
    assert [c.refs["product_id"].item for c in once.task.oracle[1:]] == [0, 1]


def test_a_row_past_the_first_page_is_listed_with_a_larger_limit(harbor: App) -> None:
    products = [_product(i, f"Mug {i:02d}") for i in range(1, 26)]  # listed by name: 20 a page by default
    rows = {"category": [CATEGORY], "product": products}
    wide = Description("product", {"brand": "Acme", "created_on": "2025-01-02"})  # the brand filter keeps all 25
    varied = look_up_rows(
        harbor, _admitted(rows, [Call(tool="activate_product", args={"product_id": "prd_25"})], {("product", "prd_25"): wide})
    )
    assert not isinstance(varied, Rejection)
    search, act = varied.task.oracle
    assert search.args == {"brand": "Acme", "limit": 25} and act.refs["product_id"].item == 24
    assert _ids(harbor, varied)[1] == {"product_id": "prd_25"}
    first_page = look_up_rows(
        harbor, _admitted(rows, [Call(tool="activate_product", args={"product_id": "prd_9"})], {("product", "prd_9"): wide})
    )
    assert not isinstance(first_page, Rejection) and first_page.task.oracle[0].args == {"brand": "Acme"}


def test_a_row_the_request_does_not_describe_is_not_solvable(harbor: App) -> None:
    rows = {"category": [CATEGORY], "product": [_product(1, "Blue Mug")]}
    out = look_up_rows(harbor, _admitted(rows, [Call(tool="activate_product", args={"product_id": "prd_1"})], {}))
    assert isinstance(out, Rejection) and out.reason == "not_solvable" and "prd_1" in out.detail


def test_a_ref_to_an_item_is_left_out_of_the_json_when_absent_and_resolves_to_the_listed_row() -> None:
    plain, item = Ref(step=0, field="order_id"), Ref(step=1, field="order_id", item=1)
    assert plain.model_dump_json() == '{"step":0,"field":"order_id"}'
    assert Ref.model_validate_json(item.model_dump_json()) == item
    results = [{"order_id": "ord_0"}, {"total": 2, "items": [{"order_id": "ord_1"}, {"order_id": "ord_2"}]}]
    assert (resolve(plain, results), resolve(item, results)) == ("ord_0", "ord_2")
    assert resolve(Ref(step=1, field="order_id", item=2), results) is MISSING and resolve(Ref(step=3, field="x"), results) is MISSING
    assert resolve(item, {1: results[1]}) == "ord_2"  # results by step, as the oracle agent keeps them
    assert (source(plain), source(item)) == ("r0['order_id']", "r1['items'][1]['order_id']")


def test_a_lookup_after_a_write_to_what_it_reads_is_not_taken_as_a_read_of_s0(harbor: App) -> None:
    products = [_product(1, "Blue Mug", status="active"), _product(2, "Red Mug", status="draft")]
    rows = {"category": [CATEGORY], "product": products}
    original = [Call(tool="discontinue_product", args={"product_id": "prd_1"}), Call(tool="activate_product", args={"product_id": "prd_2"})]
    plain = _admitted(rows, original, {}).task
    at = {"product_id": Ref(step=0, field="product_id", item=0)}
    late = [
        Call(tool="search_products", args={"name": "Blue Mug"}),
        Call(tool="discontinue_product", args={}, refs=at),
        Call(tool="search_products", args={"name": "Red Mug"}),  # after a write to the table it lists
        Call(tool="activate_product", args={}, refs={"product_id": Ref(step=2, field="product_id", item=0)}),
    ]
    early = [late[0], late[2], late[1], late[3].model_copy(update={"refs": {"product_id": Ref(step=1, field="product_id", item=0)}})]
    with Workspace(harbor, rows) as ws:
        for oracle, steps, fast in ((late, (0, 2), False), (early, (0, 1), True)):
            varied = plain.model_copy(update={"oracle": oracle, "visible_tools": sorted({c.tool for c in oracle})})
            assert (admission._looks_up(harbor, plain, varied, Admitted(varied, rows, lookups=steps), ws) is not None) is fast


def test_synthesis_checks_a_task_with_search_lookups_without_replaying_it(harbor: App, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = build_graph(harbor.specs)
    admits: list[str] = []
    real = admission.admit
    monkeypatch.setattr(admission, "admit", lambda *a, **k: admits.append(a[1].id) or real(*a, **k))
    for t in range(30):
        admits.clear()
        made = synthesize(harbor, graph, app_index=0, task_index=t, states=2, depth=2)
        if isinstance(made, list) and all(any(r.item is not None for c in x.oracle for r in c.refs.values()) for x in made):
            # state 0 admitted once, before its lookups (checked by their recorded runs); state 1 carries state 0's
            # oracle over (tasks/admission/restate.py), checked against its own ground-truth run: no admission replay at all
            assert admits == [made[0].id]
            return
    raise AssertionError("no task with a search lookup in every state")
