"""Solvable by construction: the tools that find each named row from what the request states."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, synthesize
from envsynth.tasks.admission.solvable import lookups
from envsynth.tasks.model import UserProfile
from envsynth.tasks.wording.describe import Description
from envsynth.tasks.wording.instruction import Requester

DANA = {
    "customer_id": "cus_100001",
    "full_name": "Dana Whitfield",
    "email": "dana@example.net",
    "phone": "+1-555-0100",
    "loyalty_tier": "gold",
    "store_credit": 0.0,
    "status": "active",
    "joined_on": "2024-05-02",
}
ORDER = {
    "order_id": "ord_100001",
    "customer_id": "cus_100001",
    "address_id": "adr_1",
    "status": "pending",
    "placed_at": "2026-03-03T10:00:00",
}
ROWS = {"customer": [DANA], "customer_order": [ORDER]}
DANA_ASKS = Requester(UserProfile(name="Dana Whitfield", role="customer"), "customer", "cus_100001", ("dana@example.net",))
STAFF_ASKS = Requester(UserProfile(name="Sam Staff", role="store associate"))


@pytest.fixture(scope="module")
def harbor() -> App:
    return compile_app(catalog.load("harbor_market"), 0)


def test_a_described_row_is_found_by_a_search_and_the_requester_by_email(harbor: App) -> None:
    descs = {("customer_order", "ord_100001"): Description("customer_order", {"placed_at": "2026-03-03T10:00:00"})}
    found = lookups(harbor, ROWS, descs, DANA_ASKS)
    assert found.lost == ()
    assert "search_orders" in found.tools and "find_customer_by_email" in found.tools


def test_a_row_nothing_states_cannot_be_found(harbor: App) -> None:
    descs = {("customer_order", "ord_100001"): Description("customer_order", {})}
    found = lookups(harbor, ROWS, descs, STAFF_ASKS)
    assert found.lost and "order" in found.lost[0]


def test_without_a_tool_that_lists_or_looks_up_the_table_the_row_is_lost(harbor: App) -> None:
    no_search = SimpleNamespace(blueprint=harbor.blueprint, specs=[s for s in harbor.specs if s.name != "search_orders"])
    descs = {("customer_order", "ord_100001"): Description("customer_order", {"placed_at": "2026-03-03T10:00:00"})}
    found = lookups(no_search, ROWS, descs, STAFF_ASKS)  # type: ignore[arg-type]
    assert found.tools == () and len(found.lost) == 1
    no_email = SimpleNamespace(blueprint=harbor.blueprint, specs=[s for s in harbor.specs if s.name != "find_customer_by_email"])
    mine = lookups(no_email, ROWS, {}, DANA_ASKS)  # type: ignore[arg-type]
    assert mine.tools == () and mine.lost == ("the requester's customer",)  # harbor_market has no search over customers


def test_admitted_catalogue_tasks_show_the_tools_that_find_their_rows(harbor: App) -> None:
    from envsynth.graph import build_graph
    from envsynth.tasks import synthesize

    graph = build_graph(harbor)
    checked = 0
    for i in range(12):
        made = synthesize(harbor, graph, app_index=0, task_index=i, states=1, depth=1, seed=0)
        if not isinstance(made, list):
            continue
        task = made[0]
        if task.user.email and any(task.user.email == r.get("email") for r in task.state.core.get("customer", [])):
            assert "find_customer_by_email" in task.visible_tools, task.id
            checked += 1
    assert checked > 0


def test_a_person_of_no_declared_role_is_found_by_the_email_they_give(bookshop_blueprint_path) -> None:  # type: ignore[no-untyped-def]
    from envsynth.blueprint import load_blueprint

    shop = compile_app(load_blueprint(bookshop_blueprint_path), 0)  # declares no users: a unique email identifies a customer
    rows = {
        "customer": [
            {"customer_id": "cus_1", "full_name": "Alice Moreau", "email": "alice@example.net", "tier": "member", "status": "active"}
        ]
    }
    alice = Requester(UserProfile(name="Alice Moreau", role="customer"), "customer", "cus_1", ("alice@example.net",))
    found = lookups(shop, rows, {}, alice)
    assert found.lost == () and found.tools == ("get_customer_by_email",)


def test_a_row_described_through_its_parent_is_found_by_a_search_on_that_parent(harbor: App) -> None:
    """ "The stock entry of the product X": find X by its name, then list the stock entries of X."""
    product = {"product_id": "prd_1", "name": "Ivory Bath Towel Set", "sku": "HM-1", "status": "active"}
    stock = {"inventory_id": "inv_1", "product_id": "prd_1", "warehouse_id": "wh_1", "stocked": 40, "allocated": 0}
    rows = {**ROWS, "product": [product], "inventory": [stock]}
    described = Description("inventory", {}, ("product_id", Description("product", {"name": "Ivory Bath Towel Set"})))
    found = lookups(harbor, rows, {("inventory", "inv_1"): described}, STAFF_ASKS)
    assert found.lost == ()
    assert "search_inventory" in found.tools and "search_products" in found.tools


def test_the_requester_is_found_by_what_they_give_not_by_their_rows_other_values() -> None:
    """circle_social finds a member by @handle only, and its members give their name and email: the oracle finds the
    requester by a search of their name (their handle, which they never give, was looked up before: 14 of 20 tasks)."""
    app = compile_app(catalog.load("circle_social"), 0)
    graph = build_graph(app)
    by_name = 0
    for t in range(10):
        made = synthesize(app, graph, app_index=catalog.names().index("circle_social"), task_index=t, states=2, depth=4, seed=0)
        for task in made if not isinstance(made, Rejection) else []:
            for call in task.oracle:
                if call.tool == "get_profile_by_handle":
                    assert call.args["handle"] in task.instruction, (task.id, call)
                if call.tool == "search_profiles" and call.args.get("display_name") == task.user.name:
                    by_name += 1
    assert by_name > 0
