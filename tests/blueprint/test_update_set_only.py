"""An update with no ``fields``: it writes its ``set`` on every call (a top-up, an interest run).

The catalogue's former custom tools (top_up_wallet, restock_inventory, buy_pt_credits,
credit_monthly_interest, change_membership_plan) are updates of this form.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth import build_app
from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import Blueprint
from envsynth.runtime.app import App
from envsynth.tasks.model import Call
from envsynth.tasks.wording.describe import Description
from envsynth.tasks.wording.instruction import Phraser

VET = Path(__file__).resolve().parents[1] / "data" / "vet_clinic.yaml"

TOP_UP = {
    "name": "top_up_credit",
    "kind": "update",
    "entity": "owner",
    "params": [{"name": "amount", "type": "money", "min": 5, "max": 500, "description": "Credit to add (5 to 500)."}],
    "set": {"credit": "+= amount"},
    "description": "Add prepaid credit to an owner's account.",
}


def _bp(*actions: dict[str, Any]) -> Blueprint:
    d = copy.deepcopy(yaml.safe_load(VET.read_text()))
    d["actions"].extend(copy.deepcopy(list(actions)))
    return from_dict(d, "vet_clinic.yaml")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    built = build_app(_bp(TOP_UP), tmp_path_factory.mktemp("vet"))
    assert built.report.passed, [v for v in built.report.verdicts if not v.ok]
    return built.app


def test_its_parameters_are_the_id_and_its_params_all_required_with_no_given_check(app: App) -> None:
    spec = app.spec_by_name["top_up_credit"]
    assert [(p.name, p.required) for p in spec.params] == [("owner_id", True), ("amount", True)]
    assert [c.id for c in spec.pre] == ["exists:owner"]


def test_a_call_writes_the_set_and_returns_the_row(app: App) -> None:
    ep = app.episode()
    owner_id, credit = ep.db.execute('SELECT "owner_id", "credit" FROM "owner" ORDER BY 1 LIMIT 1').fetchone()
    res = ep.call("top_up_credit", {"owner_id": owner_id, "amount": 12.345})
    assert res.outcome == "success", res.content
    after = ep.db.execute('SELECT "credit" FROM "owner" WHERE "owner_id" = ?', (owner_id,)).fetchone()[0]
    assert after == round(credit + 12.345, 2) == res.data["credit"]
    assert ep.call("top_up_credit", {"owner_id": owner_id}).code == "invalid_arguments"


def test_the_tester_covers_it_with_no_unconstructed_case(app: App) -> None:
    from envsynth.testing.procedural import test_app

    verdicts = [v for v in test_app(app).verdicts if v.tool == "top_up_credit"]
    assert {v.case for v in verdicts} >= {"positive", "violate:exists:owner", "invalid:amount:minimum", "invalid:amount:maximum"}
    assert all(v.ok for v in verdicts)
    assert not [v for v in verdicts if v.observed == "not_constructed"]


def test_an_update_with_neither_fields_nor_set_is_a_load_error() -> None:
    empty = {k: v for k, v in TOP_UP.items() if k != "set"}
    with pytest.raises(BlueprintError, match=r"an update needs 'fields' .* or 'set'"):
        _bp(empty)


def test_without_a_say_phrase_the_request_names_the_action_not_a_field_change() -> None:
    bp = _bp(TOP_UP)
    phraser = Phraser(bp, {s.name: s for s in expand(bp)}, random.Random(0))
    call = Call(tool="top_up_credit", args={"owner_id": "own_100001", "amount": 20.0})
    text = phraser.clause(0, [call], {"owner_id": Description("owner", {"full_name": "Ann Lee"})})
    assert "Ann Lee" in text and "top up" in text and "set its" not in text


def test_the_docs_show_this_update() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "blueprints.md").read_text()
    quoted = doc.split("- name: top_up_credit", 1)[1].split("```", 1)[0]
    action = yaml.safe_load("- name: top_up_credit" + quoted)[0]
    assert action == TOP_UP
    assert "an update needs 'fields' (the\nfields the caller may change) or 'set' (values written on every call)" in doc
