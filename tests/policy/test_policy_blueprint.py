"""Policy rules and authorization (docs/blueprints.md 11.8, 11.9): they load, build, and every
check they add is exercised by the procedural tester."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth import build_app, load_blueprint
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import from_dict, tool_specs

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_app(load_blueprint(EXAMPLE), tmp_path_factory.mktemp("policy"))


def _data() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))


def test_example_builds_and_every_policy_and_auth_check_is_exercised(built: Any) -> None:
    assert built.report.passed
    cases = {(v.tool, v.case): v.observed for v in built.report.verdicts}
    for key in [
        ("cancel_reservation", "violate:policy:before_departure"),
        ("refund_payment", "violate:policy:refund_after_cancel"),
        ("cancel_reservation", "violate:auth:reservation"),
        ("get_reservation", "violate:auth:reservation"),
        ("refund_payment", "violate:auth:payment"),  # two hops: payment -> reservation -> customer
        ("refund_payment", "violate:exists:acting_user"),
    ]:
        assert cases[key] == "anticipated_rejection", key


def test_auth_adds_the_acting_user_only_where_a_tool_acts_on_owned_rows(built: Any) -> None:
    specs = built.app.spec_by_name
    assert [p.name for p in specs["refund_payment"].params] == ["payment_id", "customer_id"]
    assert [p.name for p in specs["cancel_reservation"].params] == ["reservation_id", "customer_id"]
    # book_flight takes the customer already: it is the acting user, no second parameter
    assert [p.name for p in specs["book_flight"].params] == ["flight_id", "customer_id", "cabin"]
    # finding who asks (by email) and searches need no acting user
    assert [p.name for p in specs["find_customer"].params] == ["email"]
    assert "customer_id" not in [p.name for p in specs["search_flights"].params]
    ids = [c.id for c in specs["cancel_reservation"].pre]
    assert ids == ["exists:reservation", "exists:acting_user", "auth:reservation", "state", "policy:before_departure"]


def test_another_customers_reservation_is_refused_by_the_real_tool(built: Any) -> None:
    ep = built.app.episode()
    rows = ep.db.execute("SELECT reservation_id, customer_id FROM reservation WHERE status = 'booked'").fetchall()
    other = ep.db.execute("SELECT customer_id FROM customer WHERE customer_id != ?", (rows[0][1],)).fetchone()[0]
    refused = ep.call("get_reservation", {"reservation_id": rows[0][0], "customer_id": other})
    assert refused.outcome == "anticipated_rejection" and refused.code == "auth:reservation"
    ok = ep.call("get_reservation", {"reservation_id": rows[0][0], "customer_id": rows[0][1]})
    assert ok.outcome == "success"


def test_agent_rules_add_no_check(built: Any) -> None:
    assert not any(c.id == "policy:basic_economy_final" for s in built.app.specs for c in s.pre)


def test_manifest_carries_the_policy(built: Any) -> None:
    bp = built.app.manifest["blueprint"]
    assert bp["policy"]["rules"][1]["forbid"].startswith("reservation.cabin == 'basic_economy'")
    assert bp["authorization"]["owns"] == {"reservation": "customer_id", "payment": "reservation_id.customer_id"}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["policy"]["rules"][0].update(actions=["cancel_booking"]),
            "policy.rules[0].actions[0]: before_departure: unknown action 'cancel_booking'",
        ),
        (
            lambda d: d["policy"]["rules"][0].update(check="flightt.departs_at > now()"),
            "policy.rules[0].check: before_departure: unknown name(s) ['flightt']",
        ),
        (lambda d: d["policy"]["rules"][1].update(check="1 == 1"), "exactly one of 'check'"),
        (
            lambda d: d["policy"]["rules"][1].update(forbid="reservation.cabbin == 'basic_economy'"),
            "policy.rules[1].forbid: basic_economy_final: 'reservation' (reservation) has no field 'cabbin'",
        ),
        (lambda d: d["policy"]["rules"][1].update(message="no"), "a 'forbid' rule is obeyed by the agent"),
        (lambda d: d["policy"]["rules"].append(dict(d["policy"]["rules"][0])), "policy.rules[3].rule: duplicate rule 'before_departure'"),
        (lambda d: d["authorization"].update(role="staff"), "authorization.role: 'staff' is not a role of 'users'"),
        (lambda d: d["users"][0].update(entity="client"), "authorization.role: the role 'customer' names the unknown entity 'client'"),
        (lambda d: d["users"][0].update(entity=None, identify_by=[]), "the role 'customer' has no entity"),
        (lambda d: d["authorization"]["owns"].update(payment="amount"), "authorization.owns.payment: payment.amount is not a ref field"),
        (
            lambda d: d["authorization"]["owns"].update(payment="reservation_id.flight_id"),
            "leads to 'flight', not to the user entity 'customer'",
        ),
        (lambda d: d["authorization"]["owns"].update(ticket="customer_id"), "authorization.owns.ticket: unknown entity 'ticket'"),
    ],
)
def test_policy_and_authorization_load_errors(edit: Any, message: str) -> None:
    data = _data()
    edit(data)
    with pytest.raises(BlueprintError) as err:
        tool_specs(from_dict(data, "policy.yaml"))
    assert message in str(err.value)


def test_a_transfer_checks_the_source_only() -> None:
    data = _data()
    data["entities"].append(
        {
            "name": "wallet",
            "rows": 6,
            "fields": [
                {"name": "wallet_id", "type": "id"},
                {"name": "customer_id", "type": "ref", "ref": "customer"},
                {"name": "miles", "type": "quantity"},
            ],
        }
    )
    data["authorization"]["owns"]["wallet"] = "customer_id"
    data["actions"].append(
        {"name": "give_miles", "kind": "transfer", "entity": "wallet", "field": "miles", "description": "Give miles to another wallet."}
    )
    spec = next(s for s in tool_specs(from_dict(data, "policy.yaml")) if s.name == "give_miles")
    assert [c.id for c in spec.pre if c.id.startswith("auth:")] == ["auth:source"]
    assert "customer_id" in [p.name for p in spec.params]


def test_an_enforced_rule_is_a_logic_edge_of_the_graph(built: Any) -> None:
    import json

    edges = json.loads((built.path / "graph.json").read_text())["edges"]
    logic = {(e["source"], e["target"], e["check"]) for e in edges if e["kind"] == "logic"}
    assert ("cancel_reservation", "refund_payment", "reservation.status == 'cancelled'") in logic  # policy:refund_after_cancel
