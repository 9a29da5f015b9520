"""Admission under another episode seed: what the seed can change, and the check that stands in for a replay."""

from __future__ import annotations

import ast

from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize
from envsynth.tasks.admission.admit import admit
from envsynth.tasks.building.states import _drawn_ids_in_arguments
from envsynth.tasks.model import Call
from envsynth.tasks.state import merged


def test_generated_tools_draw_randomness_only_for_new_ids(built_catalog: dict[str, BuiltApp]) -> None:
    """The premise of replacing the seed-1 replay for archetype chains: ``ctx.rng`` is used by ``new_id`` alone."""
    for name, built in built_catalog.items():
        tree = ast.parse(built.app.module_source)
        uses = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ctx"
        }
        assert "rng" not in uses, name
        assert "new_id" in uses or not any(s.creates for s in built.app.specs), name


def test_an_argument_naming_a_row_the_chain_drew_is_found(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    before = {"customer_order": [{"order_id": "ord_100001", "status": "pending"}]}
    after = {"customer_order": [*before["customer_order"], {"order_id": "ord_555555", "status": "pending"}]}
    calls = [
        Call(tool="get_order", args={"order_id": "ord_100001"}),  # a row of s0: fine
        Call(tool="pay_order", args={"order_id": "ord_555555", "payment_method": "card"}),  # drawn by the run
    ]
    assert _drawn_ids_in_arguments(app, calls, before, after, ["customer_order"]) == ["ord_555555"]
    assert _drawn_ids_in_arguments(app, calls[:1], before, after, ["customer_order"]) == []


def test_admitted_tasks_also_pass_a_replay_under_another_seed(built_catalog: dict[str, BuiltApp]) -> None:
    """Every admitted task of two apps (chains with inserts among them) scores 1.0 when replayed under seed 1."""
    checked = inserting = 0
    for name in ("harbor_market", "taskboard"):
        app = built_catalog[name].app
        graph = build_graph(app)
        for i in range(30):
            made = synthesize(app, graph, app_index=0, task_index=i, states=2, depth=4, seed=0)
            if isinstance(made, Rejection):
                continue
            for task in made:
                assert admit(app, task, merged(task.state.core, task.state.distractors)) is None, task.id
                checked += 1
                inserting += any(app.spec_by_name[c.tool].creates for c in task.oracle)
    assert checked >= 60 and inserting >= 20, (checked, inserting)
