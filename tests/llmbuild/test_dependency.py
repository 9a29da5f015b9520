"""The dependency agent: proposed edges are kept only when a chain through them executes."""

from __future__ import annotations

import asyncio
import json

import networkx as nx
import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import ToolGraph, build_graph, read_graph
from envsynth.llm import ScriptedProvider
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.dependency import DependencyProposal, ProposedEdge, apply_proposal, propose_dependencies, write_augmented_graph
from envsynth.runtime.app import App


@pytest.fixture(scope="module")
def harbor() -> tuple[App, ToolGraph]:
    app = compile_app(catalog.load("harbor_market"), 0)
    return app, build_graph(app)


PROPOSAL = {
    "edges": [
        {
            "source": "register_customer",
            "target": "find_customer_by_email",
            "kind": "data",
            "param": "email",
            "field": "email",
            "reason": "The new customer's email can be used to look the account up again.",
        },
        {
            "source": "cancel_order",
            "target": "ship_order",
            "kind": "logic",
            "param": "order_id",
            "reason": "Cancelling an order prepares it for shipping.",
        },
        {
            "source": "register_customer",
            "target": "send_welcome_email",
            "kind": "data",
            "param": "email",
            "reason": "A new customer gets a welcome email.",
        },
        {"source": "place_order", "target": "place_order", "kind": "logic", "reason": "Orders follow orders."},
        {"source": "place_order", "target": "pay_order", "kind": "data", "param": "order_id", "reason": "Pay the new order."},
        {
            "source": "register_customer",
            "target": "get_product",
            "kind": "data",
            "param": "product_id",
            "field": "customer_id",
            "reason": "Look up a product for the customer.",
        },
    ]
}


def test_proposed_edges_are_kept_only_when_they_execute(harbor: tuple[App, ToolGraph], tmp_path) -> None:
    app, graph = harbor
    before = graph.to_json()
    llm = ScriptedProvider(lambda m, t, i: "```json\n" + json.dumps(PROPOSAL if i == 0 else {"edges": []}) + "\n```")
    client = BuilderClient(llm)
    result = asyncio.run(propose_dependencies(client, app, graph, seed=0))

    asked = "\n".join(r[-1]["content"] for r in llm.requests)
    assert "find_customer_by_email" in asked and "place_order.customer_id <- " in asked  # tools and found edges shown
    assert result.groups == len(llm.requests) > 1 and result.failures == []  # 41 tools do not fit one 8k prompt
    assert all(client.fits(r, DependencyProposal) for r in llm.requests)

    assert [(k["source"], k["target"], k["param"]) for k in result.kept] == [("register_customer", "find_customer_by_email", "email")]
    kept = result.kept[0]
    assert kept["origin"] == "llm" and kept["via"] == "customer.email" and "look the account up" in kept["reason"]
    why = {(r["source"], r["target"]): r["why"] for r in result.rejected}
    assert why[("cancel_order", "ship_order")].startswith("does not execute")
    assert why[("register_customer", "send_welcome_email")] == "unknown tool 'send_welcome_email'"
    assert why[("place_order", "place_order")] == "self-loop"
    assert why[("place_order", "pay_order")] == "already in the graph"
    assert "does not carry a product id" in why[("register_customer", "get_product")]

    new = result.graph
    assert new.has_edge("register_customer", "find_customer_by_email", "data", param="email", origin="llm")
    assert new.edge_counts()["data"] == graph.edge_counts()["data"] + 1
    assert graph.to_json() == before  # the input graph is not changed

    path = write_augmented_graph(tmp_path, new)
    assert read_graph(tmp_path).to_json() == new.to_json() == path.read_text(encoding="utf-8")


def test_a_logic_edge_needs_the_source(harbor: tuple[App, ToolGraph]) -> None:
    app, graph = harbor
    g = nx.MultiDiGraph(graph.g)  # forget two logic edges the static analysis found
    for u, v, k in list(g.edges(keys=True)):
        if k.startswith("logic:") and (u, v) in {("ship_order", "deliver_order"), ("pay_order", "cancel_order")}:
            g.remove_edge(u, v, k)
    blind = ToolGraph(g, graph.name)
    edges = [
        ProposedEdge(source="ship_order", target="deliver_order", kind="logic", reason="Only a shipped order can be delivered."),
        ProposedEdge(source="pay_order", target="cancel_order", kind="logic", reason="A paid order can be cancelled."),
        ProposedEdge(source="publish_review", target="update_product", kind="logic", reason="Reviews change products."),
    ]
    result = apply_proposal(app, blind, edges, seed=1)
    assert [(k["source"], k["target"], k["entity"]) for k in result.kept] == [("ship_order", "deliver_order", "customer_order")]
    why = {(r["source"], r["target"]): r["why"] for r in result.rejected}
    assert "runs without pay_order" in why[("pay_order", "cancel_order")]  # a pending order can be cancelled too
    assert "takes no row" in why[("publish_review", "update_product")]


def test_proposals_beyond_the_limit_and_duplicates_are_rejected(harbor: tuple[App, ToolGraph]) -> None:
    app, graph = harbor
    edge = ProposedEdge(source="add_product", target="get_product_by_sku", kind="data", param="sku", reason="Look up by SKU.")
    other = ProposedEdge(source="register_customer", target="find_customer_by_email", kind="data", param="email", reason="x")
    third = ProposedEdge(source="cancel_order", target="ship_order", kind="logic", reason="y")
    result = apply_proposal(app, graph, [edge, edge, other, third], max_edges=2)
    assert [k["target"] for k in result.kept] == ["get_product_by_sku", "find_customer_by_email"]  # a duplicate is not checked
    assert [(r["proposal"], r["why"]) for r in result.rejected] == [
        (2, "duplicate of proposal 1"),
        (4, "beyond the first 2 proposals checked"),
    ]


def test_every_rejection_says_its_true_reason(harbor: tuple[App, ToolGraph]) -> None:
    """A made-up tool is unknown (even when repeated); only a repeat is a duplicate; a corrected field is checked anew."""
    app, graph = harbor
    made_up = ProposedEdge(source="register_customer", target="send_welcome_email", kind="data", param="email", reason="a")
    bad_field = ProposedEdge(
        source="register_customer", target="find_customer_by_email", kind="data", param="email", field="nope", reason="b"
    )
    good = bad_field.model_copy(update={"field": "email"})
    again = good.model_copy(update={"field": None})
    loop = ProposedEdge(source="place_order", target="place_order", kind="logic", reason="c")
    result = apply_proposal(app, graph, [made_up, made_up, bad_field, good, good, again, loop])
    why = {r["proposal"]: r["why"] for r in result.rejected}
    assert why[1] == why[2] == "unknown tool 'send_welcome_email'"
    assert "has no field 'nope'" in why[3]
    assert [k["proposal"] for k in result.kept] == [4]  # the corrected proposal is no duplicate of the wrong one
    assert why[5] == "duplicate of proposal 4"
    assert why[6] == "the same edge as proposal 4, already kept"
    assert why[7] == "self-loop"
    assert not any("duplicate" in w for n, w in why.items() if n != 5)


def test_proposals_beyond_a_groups_limit_are_recorded(harbor: tuple[App, ToolGraph]) -> None:
    app, graph = harbor
    many = {"edges": [{"source": "made_up", "target": f"tool_{i}", "kind": "logic"} for i in range(5)]}
    llm = ScriptedProvider(lambda m, t, i: json.dumps(many))
    result = asyncio.run(propose_dependencies(BuilderClient(llm, context_tokens=200_000), app, graph, max_edges=3))
    n = result.groups  # 41 tools take more than one prompt of at most 12,000 characters, whatever the context
    assert n > 1 and len(result.rejected) == 5 * n  # none vanishes
    beyond = "beyond the first 3 proposals of its tool group"
    assert [r["why"] for r in result.rejected] == ["unknown tool 'made_up'"] * 3 * n + [beyond] * 2 * n
