"""The state guard of task synthesis's workspace (tasks.building.instantiate.Workspace): its triggers stay on the
connection (runtime.guard.stand), but each chain is guarded only by the triggers its own calls ask for."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth.blueprint import from_dict
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, read_rows
from envsynth.tasks.building.instantiate import ChainFailed, Delta, Workspace
from envsynth.tasks.model import Call

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "state_machines.yaml"
BLOCKED = r"\(archive_application\): anticipated_rejection: This permit is 'revoked'; it cannot move to 'active'"


@pytest.fixture(scope="module")
def app() -> App:
    """Two custom tools, each guarded on one state field; archiving also reactivates the permits (undeclared)."""
    d = yaml.safe_load(EXAMPLE.read_text())
    act = next(a for a in d["actions"] if a["name"] == "archive_application")
    act["pre"] = []
    act["code"] = (
        "db.execute(\"UPDATE application SET status = 'closed' WHERE application_id = ?\", (application_id,))\n"
        "db.execute(\"UPDATE permit SET status = 'active' WHERE application_id = ?\", (application_id,))\n"
        "return {}\n"
    )
    expire = copy.deepcopy(act)
    expire.update(name="expire_permit", entity="permit", writes={"permit": ["status"]}, description="Expire a permit.")
    expire["params"] = [{"name": "permit_id", "type": "ref", "ref": "permit"}]
    expire["code"] = "db.execute(\"UPDATE permit SET status = 'expired' WHERE permit_id = ?\", (permit_id,))\nreturn {}\n"
    d["actions"].append(expire)
    return compile_app(from_dict(d))


def _rows(app: App) -> Rows:
    ep = app.episode()
    rows = read_rows(ep.db, app.blueprint)
    ep.close()
    rows["application"] = [{**r, "status": "approved"} for r in rows["application"]]
    rows["permit"] = [{**r, "status": "revoked"} for r in rows["permit"]]
    rows["permit"][0]["status"] = "active"
    return rows


def test_only_the_triggers_a_chain_asks_for_guard_it(app: App) -> None:
    assert set(app.state_writers) == {"archive_application", "expire_permit"}
    rows = _rows(app)
    active, revoked = rows["permit"][0], rows["permit"][1]
    archive = Call(tool="archive_application", args={"application_id": revoked["application_id"]})
    with Workspace(app, rows) as ws:
        assert ws.guard is not None and len(ws.guard.made) == 2
        for _ in range(2):  # the permit's trigger stands, but archiving alone never asked for it
            ws.try_rows(rows, Delta(), [archive])
            status = "SELECT status FROM permit WHERE permit_id = ?"
            assert ws.conn.execute(status, (revoked["permit_id"],)).fetchone() == ("active",)
        with pytest.raises(ChainFailed, match=r"step 0 .*This permit is 'revoked'; it cannot move to 'expired'"):
            ws.run([Call(tool="expire_permit", args={"permit_id": revoked["permit_id"]}), archive])
        with pytest.raises(ChainFailed, match=BLOCKED):  # the first call asked for it
            ws.run([Call(tool="expire_permit", args={"permit_id": active["permit_id"]}), archive])
        kept = ws.try_rows(rows, Delta(), [Call(tool="expire_permit", args={"permit_id": active["permit_id"]})])
        with pytest.raises(ChainFailed, match=BLOCKED):  # the kept call asked for it
            ws.extend(kept, archive)
        kept = ws.try_rows(rows, Delta(), [Call(tool="get_application", args={"application_id": active["application_id"]})])
        assert ws.extend(kept, archive).results[-1] == {}
    assert _schema_of(app) == _schema_of(app)  # nothing left behind but the standing triggers


def _schema_of(app: App) -> list[Any]:
    with Workspace(app, {}) as ws:
        return ws.conn.execute("SELECT type, name FROM sqlite_temp_master ORDER BY name").fetchall()
