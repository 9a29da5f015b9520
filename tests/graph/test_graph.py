"""Tool dependency graph on the shipped catalogue apps (compiled, not procedurally tested)."""

from __future__ import annotations

import itertools
import random
from functools import cache

import networkx as nx
import pytest

from envsynth import catalog
from envsynth.blueprint import expr as X
from envsynth.compiler.compile import app_files, compile_app, write_files
from envsynth.graph import (
    EDGE_KINDS,
    LAMBDA,
    S_SAT,
    ToolGraph,
    build_graph,
    expand_subgraph,
    missing_inputs,
    read_graph,
    structural_complexity,
    write_graph,
)

APPS = catalog.names()


@cache
def app(name: str):
    return compile_app(catalog.load(name), 0)


@cache
def graph(name: str) -> ToolGraph:
    return build_graph(app(name))


def spec(name: str, tool: str):
    return app(name).spec_by_name[tool]


def state_pre(tool_spec) -> dict[str, list]:
    """'entity.field' -> accepted constants, from ``alias.field in [...]`` / ``== c`` pre-conditions."""
    amap = {b.alias: b.entity for b in tool_spec.bindings}
    out = {}
    for c in tool_spec.pre:
        e = X.parse(c.check)
        tree = e.tree
        if len(e.fields()) == 1 and type(tree).__name__ == "Compare" and len(tree.ops) == 1:
            ((alias, fname),) = e.fields()
            right = tree.comparators[0]
            vals = [x.value for x in getattr(right, "elts", [right]) if hasattr(x, "value")]
            if alias in amap and vals:
                out[f"{amap[alias]}.{fname}"] = vals
    return out


# -- harbor_market: the order life cycle ----------------------------------------------


def test_create_order_feeds_pay_order_with_data_and_logic():
    g, name = graph("harbor_market"), "harbor_market"
    creators = [s.name for s in app(name).specs if s.kind == "create" and s.entity == "customer_order"]
    assert creators == ["place_order"]
    pay = spec(name, "pay_order")
    assert pay.kind == "transition" and pay.entity == "customer_order"
    # data: the new order's id fills pay_order's order_id
    assert g.has_edge(
        "place_order", "pay_order", "data", param="order_id", entity="customer_order", via="customer_order.order_id", fresh=True
    )
    # logic: the create establishes the state pay_order's pre-condition requires
    needed = state_pre(pay)["customer_order.status"]
    logic = [d for *_, d in g.edges("logic", "place_order", "pay_order")]
    assert any(d["field"] == "customer_order.status" and d["value"] in needed for d in logic), logic
    assert logic[0]["value"] == "pending"


def test_order_state_machine_chain_and_other_logic_edges():
    g = graph("harbor_market")
    for a, b, value in [
        ("pay_order", "ship_order", "paid"),
        ("ship_order", "deliver_order", "shipped"),
        ("deliver_order", "request_return", "delivered"),
        ("add_product", "activate_product", "draft"),
    ]:
        assert g.has_edge(a, b, "logic", how="state", value=value), (a, b)
    assert not g.has_edge("place_order", "ship_order", "logic")  # pending is not paid
    assert g.has_edge("add_order_item", "pay_order", "logic", how="exists", entity="order_item")
    assert g.has_edge("restock_inventory", "add_order_item", "logic", how="increase", field="inventory.stocked")
    assert g.has_edge("transfer_stock", "add_order_item", "logic", how="increase", field="inventory.stocked")
    assert g.has_edge("get_order", "pay_order", "data", param="order_id")  # get tools feed ids too
    assert g.has_edge("search_inventory", "add_order_item", "data", param="inventory_id", via="inventory.inventory_id")
    assert g.has_edge("place_order", "search_orders", "state", table="customer_order")


# -- every catalogue app ------------------------------------------------------------------


@pytest.mark.parametrize("name", APPS)
def test_edges_are_sound(name):
    g, a = graph(name), app(name)
    assert sorted(g.nodes) == sorted(s.name for s in a.specs)
    counts = g.edge_counts()
    assert all(counts[k] > 0 for k in EDGE_KINDS), counts
    for u, v, key, d in g.edges():
        assert key.startswith(d["kind"] + ":")
        if d["kind"] == "data":
            p = a.spec_by_name[v].param(d["param"])
            assert d["entity"] in g.node(u)["outputs"]
            assert p.ref in (None, d["entity"]) and p.required == d["required"]
            assert u != v or d["fresh"]
        else:
            assert u != v, (u, key)
        if d["kind"] == "state":
            sa, sb = a.spec_by_name[u], a.spec_by_name[v]
            assert d["table"] in {*sa.writes, *sa.creates, *sa.deletes}
            assert d["table"] in {*sb.reads, sb.entity}


@pytest.mark.parametrize("name", APPS)
def test_every_write_tool_has_state_edge_to_a_reader(name):
    g, a = graph(name), app(name)
    for s in a.specs:
        if s.mode != "write":
            continue
        written = {*s.writes, *s.creates, *s.deletes}
        readers = [(v, d["table"]) for _, v, _, d in g.edges("state", source=s.name) if g.node(v)["mode"] == "read"]
        assert readers, s.name
        for v, t in readers:  # a custom tool reads its own entity (its code is opaque)
            r = a.spec_by_name[v]
            assert t in written and (t in r.reads or (r.kind == "custom" and t == r.entity))


@pytest.mark.parametrize("name", APPS)
def test_bfs_expansion(name):
    g, a = graph(name), app(name)
    chain = next([u, v] for u, v, _, d in g.edges("data") if u != v and g.node(u)["mode"] == g.node(v)["mode"] == "write")
    tools = expand_subgraph(g, chain, min_size=20, rng=3)
    assert len(tools) >= 20 and tools[: len(chain)] == chain and len(set(tools)) == len(tools)
    assert tools == expand_subgraph(g, chain, min_size=20, rng=random.Random(3))
    for i, t in enumerate(tools[len(chain) :], start=len(chain)):
        before = set(tools[:i])
        assert any(t in g.neighbours(x) for x in before)
        for p in a.spec_by_name[t].params:
            if p.ref and p.required:  # some earlier tool outputs ids of p.ref via a data edge into t
                providers = [
                    u
                    for u, _, _, d in g.g.in_edges(t, keys=True, data=True)
                    if d["kind"] == "data" and d["param"] == p.name and u in before
                ]
                assert providers and all(p.ref in g.node(u)["outputs"] for u in providers), (t, p.name)
        assert not missing_inputs(g, t, before)


def test_bfs_stops_when_nothing_fits():
    g = graph("harbor_market")
    everything = expand_subgraph(g, ["place_order"], min_size=10_000, rng=0)
    assert len(everything) < len(g)
    # get_coupon_by_code only touches apply_coupon, which needs the coupon id it would give
    assert "get_coupon_by_code" not in everything and "apply_coupon" not in everything
    assert missing_inputs(g, "apply_coupon", everything) == {"coupon_id": "coupon"}
    with pytest.raises(KeyError):
        expand_subgraph(g, ["no_such_tool"])


# -- serialisation, stats, complexity -------------------------------------------------------


def test_json_round_trip_is_stable():
    g = graph("harbor_market")
    text = g.to_json()
    back = ToolGraph.from_json(text)
    assert back.to_json() == text
    assert back.name == "harbor_market" and back.edge_counts() == g.edge_counts()
    assert nx.utils.graphs_equal(back.g, g.g)
    again = build_graph(compile_app(catalog.load("harbor_market"), 0))
    shuffled = build_graph(list(reversed(app("harbor_market").specs)), app("harbor_market").blueprint)
    assert again.to_json() == text == shuffled.to_json()
    with pytest.raises(ValueError):
        ToolGraph.from_json('{"format": "other"}')


def test_specs_only_graph_is_a_subgraph():
    a = app("harbor_market")
    full = {(u, v, k) for u, v, k, _ in graph("harbor_market").edges()}
    inferred = {(u, v, k) for u, v, k, _ in build_graph(a.specs).edges()}
    assert inferred <= full and ("place_order", "pay_order", "data:order_id") in inferred


def test_write_graph(tmp_path):
    a = app("harbor_market")
    folder = tmp_path / "harbor_market"
    write_files(folder, app_files(a))
    out = write_graph(folder)
    assert out == folder / "graph.json"
    assert out.read_text(encoding="utf-8") == graph("harbor_market").to_json()
    assert read_graph(folder).to_json() == out.read_text(encoding="utf-8")


def test_stats_and_dot():
    g = graph("harbor_market")
    st = g.stats()
    assert st["nodes"] == len(g) and st["edges"] == sum(st["edges_by_kind"].values())
    assert 0 < st["density"] <= 1 and st["weak_components"] == 1
    assert st["mean_out_degree"] == pytest.approx(st["edges"] / st["nodes"], abs=1e-6)
    entries = [t for t in g.nodes if not [u for u in g.predecessors(t, "data") if u != t]]
    assert st["entry_tools"] == len(entries) and "register_customer" in entries
    path = st["longest_data_path"]["path"]
    assert st["longest_data_path"]["length"] == len(path) - 1 >= 5 and len(set(path)) == len(path)
    assert all(g.has_edge(u, v, "data") for u, v in itertools.pairwise(path))
    dot = g.to_dot()
    assert dot.startswith('digraph "harbor_market" {') and '"place_order" -> "pay_order"' in dot
    assert "dashed" in dot and "dashed" not in g.to_dot(kinds=["data"])


def test_structural_complexity():
    g = graph("harbor_market")
    tools = ["place_order", "add_order_item", "pay_order", "ship_order"]
    pairs = {(u, v) for u, v, _, _ in g.subgraph(tools).edges() if u != v}
    assert structural_complexity(g, tools) == pytest.approx(len(tools) + LAMBDA * len(pairs) / S_SAT)
    assert (LAMBDA, S_SAT) == (0.5, 50)
    tiny = ToolGraph(nx.MultiDiGraph())
    tiny.g.add_edge("a", "b", key="data:x", kind="data")
    tiny.g.add_edge("a", "b", key="state:t", kind="state")
    tiny.g.add_edge("b", "c", key="logic:y", kind="logic")
    assert structural_complexity(tiny) == pytest.approx(3 + 0.5 * 2 / 50)
    assert structural_complexity(tiny, kinds=["data"]) == pytest.approx(3 + 0.5 * 1 / 50)
