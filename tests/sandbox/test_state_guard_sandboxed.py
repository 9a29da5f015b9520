"""The state machines guard sandboxed (untrusted) custom code too: its writes are applied on the episode's
connection, where an illegal move is rejected (docs/blueprints.md 11.6)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sandbox_helpers import FORCE_FALLBACK

from envsynth.blueprint.load import from_dict
from envsynth.compiler.compile import compile_app
from envsynth.runtime.episode import REJECTION, SUCCESS
from envsynth.runtime.state import read_rows
from envsynth.sandbox import Limits, fallback_mode
from envsynth.sandbox.untrusted import ToolWorkerPool, set_tool_pool

EXAMPLE = Path(__file__).parents[1] / "data" / "examples" / "state_machines.yaml"


@pytest.fixture(scope="module", autouse=True)
def tool_pool() -> Iterator[ToolWorkerPool]:
    mode = fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1") if FORCE_FALLBACK else None
    pool = ToolWorkerPool(size=1, limits=Limits(wall=3.0, cpu=1.0, memory=256 << 20, output=1 << 20), mode=mode)
    previous = set_tool_pool(pool)
    yield pool
    set_tool_pool(previous)
    pool.close()


def test_sandboxed_code_cannot_make_an_illegal_move() -> None:
    d = yaml.safe_load(EXAMPLE.read_text())
    act = next(a for a in d["actions"] if a["name"] == "archive_application")
    act.update(pre=[], untrusted=True)
    app = compile_app(from_dict(copy.deepcopy(d)))
    ep = app.episode()
    aid = ep.db.execute("SELECT application_id FROM application LIMIT 1").fetchone()[0]
    ep.db.execute("UPDATE application SET status = 'submitted' WHERE application_id = ?", (aid,))
    before = read_rows(ep.db, app.blueprint)
    res = ep.call("archive_application", {"application_id": aid})
    assert (res.outcome, res.code) == (REJECTION, "state:application.status")
    assert res.content == "This application is 'submitted'; it cannot move to 'closed' (it can only move to 'review', 'rejected')."
    assert read_rows(ep.db, app.blueprint) == before
    ep.db.execute("UPDATE application SET status = 'rejected' WHERE application_id = ?", (aid,))
    assert ep.call("archive_application", {"application_id": aid}).outcome == SUCCESS
    ep.close()
