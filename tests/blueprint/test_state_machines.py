"""State machines on every write (docs/blueprints.md 11.6): static moves are load errors, dynamic ones
Anticipated Rejections (implicit pre-conditions for effects, database triggers for custom code)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.episode import REJECTION, SUCCESS
from envsynth.runtime.state import read_rows
from envsynth.testing.procedural import test_app as run_tester

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "state_machines.yaml"


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def _action(d: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in d["actions"] if a["name"] == name)


def _app(d: dict[str, Any]) -> App:
    return compile_app(from_dict(d))


def _status_of(app: App, ep: Any, table: str, key: str) -> str:
    ent = app.blueprint.entity(table)
    return ep.db.execute(f'SELECT status FROM "{table}" WHERE "{ent.id_field}" = ?', (key,)).fetchone()[0]


def _set_status(ep: Any, table: str, key_field: str, key: str, status: str) -> None:
    ep.db.execute(f'UPDATE "{table}" SET status = ? WHERE "{key_field}" = ?', (status, key))


def test_also_into_a_state_no_row_can_move_from_is_a_load_error(data: dict[str, Any]) -> None:
    d = copy.deepcopy(data)
    _action(d, "revoke_permit")["pre"] = ["application.status in ['submitted', 'review']"]
    with pytest.raises(BlueprintError) as err:
        from_dict(d)
    e = err.value
    assert e.path == "actions[4].also.application.status"
    assert "revoke_permit: sets application.status to 'closed'" in e.message
    assert "no move from 'submitted', 'review'" in e.message
    assert "moves into it come from 'approved', 'rejected'" in e.message
    assert "submitted -> review, rejected; review -> approved, rejected; approved -> closed; rejected -> closed" in e.message


def test_a_state_with_no_moves_at_all_is_named() -> None:
    d = yaml.safe_load(EXAMPLE.read_text())
    d["entities"][0]["fields"][2]["transitions"] = {"submitted": ["review"], "review": ["approved", "rejected"]}
    with pytest.raises(BlueprintError, match=r"also\.application\.status: revoke_permit: .*moves into it come from none"):
        from_dict(d)


def test_a_set_on_an_update_goes_through_the_machine_too(data: dict[str, Any]) -> None:
    d = copy.deepcopy(data)
    d["actions"].append(
        {
            "name": "rename_rejected",
            "kind": "update",
            "entity": "application",
            "fields": ["project"],
            "pre": ["application.status == 'rejected'"],
            "set": {"status": "'review'"},
            "description": "Rename a rejected project and send it back to review.",
        }
    )
    with pytest.raises(BlueprintError, match=r"actions\[6\]\.set\.status: rename_rejected: sets application\.status to 'review'"):
        from_dict(d)


def test_writes_the_pre_conditions_make_legal_add_no_check(data: dict[str, Any]) -> None:
    d = copy.deepcopy(data)
    _action(d, "revoke_permit")["pre"] = ["application.status == 'approved'"]
    app = _app(d)
    assert [c.id for c in app.spec_by_name["revoke_permit"].pre] == ["exists:permit", "state", "pre[0]"]


def test_an_also_move_some_rows_may_make_is_rejected_at_run_time(data: dict[str, Any]) -> None:
    app = _app(data)
    spec = app.spec_by_name["revoke_permit"]
    check = next(c for c in spec.pre if c.id == "state:application.status")
    assert check.check == "application.status in ['approved', 'rejected', 'closed']"
    ep = app.episode()
    permit = ep.db.execute("SELECT permit_id, application_id FROM permit WHERE status = 'active' LIMIT 1").fetchone()
    _set_status(ep, "application", "application_id", permit[1], "submitted")
    before = read_rows(ep.db, app.blueprint)
    res = ep.call("revoke_permit", {"permit_id": permit[0]})
    assert (res.outcome, res.code) == (REJECTION, "state:application.status")
    assert res.content == "This application is 'submitted'; it cannot become 'closed' (only from 'approved', 'rejected', 'closed')."
    assert read_rows(ep.db, app.blueprint) == before
    _set_status(ep, "application", "application_id", permit[1], "approved")
    res = ep.call("revoke_permit", {"permit_id": permit[0]})
    assert res.outcome == SUCCESS
    assert _status_of(app, ep, "application", permit[1]) == "closed"


def test_a_parameter_target_is_checked_against_the_row_state(data: dict[str, Any]) -> None:
    d = copy.deepcopy(data)
    d["actions"].append(
        {
            "name": "decide_application",
            "kind": "update",
            "entity": "application",
            "fields": ["project"],
            "params": [{"name": "decision", "type": "enum", "values": ["approved", "rejected"]}],
            "set": {"status": "decision"},
            "description": "Record a decision on an application (and optionally rename its project).",
        }
    )
    app = _app(d)
    assert "state:application.status" in [c.id for c in app.spec_by_name["decide_application"].pre]
    ep = app.episode()
    aid = ep.db.execute("SELECT application_id FROM application LIMIT 1").fetchone()[0]
    _set_status(ep, "application", "application_id", aid, "submitted")
    res = ep.call("decide_application", {"application_id": aid, "decision": "approved", "project": "Oak Deck"})
    assert (res.outcome, res.code) == (REJECTION, "state:application.status")
    assert res.content.startswith("This application is 'submitted'; it cannot move to 'approved'")
    res = ep.call("decide_application", {"application_id": aid, "decision": "rejected", "project": "Oak Deck"})
    assert res.outcome == SUCCESS and _status_of(app, ep, "application", aid) == "rejected"


def test_the_tester_violates_the_new_check(data: dict[str, Any]) -> None:
    report = run_tester(_app(data))
    hit = [v for v in report.verdicts if v.tool == "revoke_permit" and v.case == "violate:state:application.status"]
    assert len(hit) == 1 and hit[0].ok and hit[0].observed == REJECTION


def _careless(data: dict[str, Any], code: str) -> App:
    d = copy.deepcopy(data)
    act = _action(d, "archive_application")
    act["pre"] = []
    act["code"] = code
    return _app(d)


def test_custom_code_cannot_make_an_illegal_move(data: dict[str, Any]) -> None:
    app = _careless(
        data, "db.execute(\"UPDATE application SET status = 'closed' WHERE application_id = ?\", (application_id,))\nreturn {}\n"
    )
    ep = app.episode()
    aid = ep.db.execute("SELECT application_id FROM application LIMIT 1").fetchone()[0]
    _set_status(ep, "application", "application_id", aid, "review")
    before = read_rows(ep.db, app.blueprint)
    res = ep.call("archive_application", {"application_id": aid})
    assert (res.outcome, res.code) == (REJECTION, "state:application.status")
    assert res.content == "This application is 'review'; it cannot move to 'closed' (it can only move to 'approved', 'rejected')."
    assert read_rows(ep.db, app.blueprint) == before
    # outside a tool call the rows are the caller's (task states, solver repairs): nothing is blocked
    _set_status(ep, "application", "application_id", aid, "submitted")
    _set_status(ep, "application", "application_id", aid, "closed")
    assert _status_of(app, ep, "application", aid) == "closed"
    _set_status(ep, "application", "application_id", aid, "approved")
    assert ep.call("archive_application", {"application_id": aid}).outcome == SUCCESS
    assert _status_of(app, ep, "application", aid) == "closed"


def test_custom_code_that_swallows_the_error_is_still_rejected(data: dict[str, Any]) -> None:
    code = (
        "try:\n"
        "    db.execute(\"UPDATE application SET status = 'closed' WHERE application_id = ?\", (application_id,))\n"
        "except Exception:\n"
        "    pass\n"
        "db.execute(\"UPDATE application SET project = 'x' WHERE application_id = ?\", (application_id,))\n"
        "return {}\n"
    )
    app = _careless(data, code)
    ep = app.episode()
    aid = ep.db.execute("SELECT application_id FROM application LIMIT 1").fetchone()[0]
    _set_status(ep, "application", "application_id", aid, "submitted")
    before = read_rows(ep.db, app.blueprint)
    res = ep.call("archive_application", {"application_id": aid})
    assert (res.outcome, res.code) == (REJECTION, "state:application.status")
    assert read_rows(ep.db, app.blueprint) == before


def test_the_state_bytes_and_schema_carry_no_trigger(data: dict[str, Any]) -> None:
    app = _app(data)
    assert "TRIGGER" not in app.schema
    ep = app.episode()
    aid = ep.db.execute("SELECT application_id FROM application WHERE status = 'approved' LIMIT 1").fetchone()
    if aid is None:
        aid = ep.db.execute("SELECT application_id FROM application LIMIT 1").fetchone()
        _set_status(ep, "application", "application_id", aid[0], "approved")
    assert ep.call("archive_application", {"application_id": aid[0]}).outcome == SUCCESS
    assert ep.db.execute("SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger'").fetchone()[0] == 0


def test_the_tester_breaks_the_machine_under_custom_code(data: dict[str, Any]) -> None:
    report = run_tester(_app(data), seed=0)
    v = next(v for v in report.verdicts if (v.tool, v.case) == ("archive_application", "violate:state:application.status"))
    assert v.ok and v.observed == REJECTION
    assert "application.status set to 'submitted' first; pre[0]" in v.detail  # the tool's own check caught it
    careless = _careless(
        data, "db.execute(\"UPDATE application SET status = 'closed' WHERE application_id = ?\", (application_id,))\nreturn {}\n"
    )
    report = run_tester(careless, seed=1)
    v = next(v for v in report.verdicts if (v.tool, v.case) == ("archive_application", "violate:state:application.status"))
    assert v.ok and v.observed == REJECTION
    assert "state:application.status: This application is 'submitted'; it cannot move to 'closed'" in v.detail  # the guard did


def test_the_tester_fails_custom_code_that_moves_rows_it_may_not(data: dict[str, Any]) -> None:
    careless = _careless(
        data, "db.execute(\"UPDATE application SET status = 'closed' WHERE application_id = ?\", (application_id,))\nreturn {}\n"
    )
    report = run_tester(careless, seed=0)
    positive = next(v for v in report.verdicts if (v.tool, v.case) == ("archive_application", "positive"))
    assert not positive.ok and positive.observed == REJECTION
    assert "it cannot move to 'closed'" in positive.detail
    assert not report.passed
