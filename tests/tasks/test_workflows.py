"""Declared workflows (``workflows:``) are planned as one goal, and staff name the person they act for."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize
from envsynth.tasks.building.instantiate import execute
from envsynth.tasks.planning.plan import plan_task
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture
def data(bookshop_blueprint_path: Path) -> dict:
    return yaml.safe_load(bookshop_blueprint_path.read_text())


def test_a_workflow_loads_and_is_kept(data: dict) -> None:
    d = copy.deepcopy(data)
    d["workflows"] = [{"name": "buy a book", "steps": ["place_purchase", "ship_purchase"], "reasons": ["it's a present"]}]
    flow = from_dict(d, "shop.yaml").workflows[0]
    assert (flow.name, flow.steps, flow.reasons) == ("buy a book", ["place_purchase", "ship_purchase"], ["it's a present"])


@pytest.mark.parametrize(
    ("flow", "path", "words"),
    [
        ({"name": "buy a book", "steps": ["place_purchase", "ship_purchse"]}, "workflows[0].steps[1]", "'ship_purchse' is not an action"),
        ({"name": "buy a book", "steps": ["search_books", "place_purchase"]}, "workflows[0].steps[0]", "only reads"),
        ({"name": "buy a book", "steps": ["place_purchase", "place_purchase"]}, "workflows[0].steps[1]", "comes twice"),
        ({"name": "buy a book", "steps": ["place_purchase"]}, "workflows[0].steps", "at least 2"),
        ({"name": "Buy a book.", "steps": ["place_purchase", "ship_purchase"]}, "workflows[0].name", "pattern"),
    ],
)
def test_workflow_mistakes_are_located(data: dict, flow: dict[str, Any], path: str, words: str) -> None:
    d = copy.deepcopy(data)
    d["workflows"] = [flow]
    with pytest.raises(BlueprintError) as info:
        from_dict(d, "shop.yaml")
    message = str(info.value)
    assert message.startswith("shop.yaml: ") and path in message and words in message and "\n" not in message, message


def test_the_docs_workflow_is_the_catalogues_and_is_planned_as_one_goal(built_catalog: dict[str, BuiltApp]) -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.S) if b.startswith("workflows:"))
    assert block in (ROOT / "src" / "envsynth" / "catalog" / "shopping.yaml").read_text()
    app = built_catalog["harbor_market"].app
    flow = yaml.safe_load(block)["workflows"][0]
    graph = build_graph(app.specs)
    planned = admitted = 0
    for t in range(120):
        plan = plan_task(app, graph, app_index=5, task_index=t, depth=2, seed=0)
        if isinstance(plan, Rejection) or plan.workflow is None:
            continue
        planned += 1
        assert [s.spec.name for s in plan.steps][: len(flow["steps"])] == flow["steps"]
        tasks = synthesize(app, graph, app_index=5, task_index=t, states=2, depth=2)
        if isinstance(tasks, Rejection):
            continue
        admitted += 1
        assert f"I'd like to {flow['name']}." in tasks[0].instruction
        tools = [c.tool for c in tasks[0].oracle if app.spec_by_name[c.tool].mode == "write"]  # between the lookups
        assert tools[: len(flow["steps"])] == flow["steps"]
        assert tasks[0].scenario is not None and tasks[0].scenario.reason in flow["reasons"]
    assert planned >= 2 and admitted >= 1


def test_a_staff_member_names_the_customer_whose_card_they_act_on(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["northwind_bank"].app
    graph = build_graph(app.specs)
    seen = 0
    for t in range(80):
        tasks = synthesize(app, graph, app_index=0, task_index=t, states=1, depth=2)
        if isinstance(tasks, Rejection) or tasks[0].user.role != "bank officer":
            continue
        task = tasks[0]
        rows = merged(task.state.core, task.state.distractors)
        results = execute(app, rows, list(task.oracle), seed=1).results  # the card ids the oracle's lookups find
        cards = [c.args.get("card_id") or resolve(c.refs["card_id"], results) for c in task.oracle if {"card_id"} & {*c.args, *c.refs}]
        if not cards:
            continue
        card = next(r for r in rows["card"] if r["card_id"] == cards[0])
        account = next(r for r in rows["account"] if r["account_id"] == card["account_id"])
        customer = next(r for r in rows["customer"] if r["customer_id"] == account["customer_id"])
        assert f"our customer {customer['full_name']} ({customer['email']})" in task.instruction, task.instruction
        assert task.scenario is not None and task.scenario.persona.endswith(
            f"acting for the customer {customer['full_name']} ({customer['email']})"
        )
        seen += 1
    assert seen >= 2
