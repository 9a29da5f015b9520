"""States of a blueprint with a nullable ``ref`` cycle (team -> captain player -> team).

A team is inserted before its players (its ``captain_id`` is nullable, a player's ``team_id``
is not), so a team whose captain is set refers to a row inserted after it. Such states are
made by the tester's fixtures and by tasks (a captain appointed); loading them into SQLite
(episodes, task states, fixtures) must not fail with "FOREIGN KEY constraint failed".
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import envsynth
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, read_rows, rows_to_bytes, rows_to_bytes_fast
from envsynth.tasks.state import rows_bytes

BLUEPRINT = Path(__file__).resolve().parents[1] / "data" / "ref_cycle.yaml"


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> App:
    out = tmp_path_factory.mktemp("apps")
    envsynth.build_app(envsynth.load_blueprint(BLUEPRINT), out)
    return envsynth.load_app(out / "league_desk")


def _captained(app: App) -> Rows:
    """The app's sample rows with every team captained by one of its players."""
    rows = read_rows(app.episode().db, app.blueprint)
    for team in rows["team"]:
        mine = [p for p in rows["player"] if p["team_id"] == team["team_id"]]
        team["captain_id"] = mine[0]["player_id"] if mine else None
    assert any(t["captain_id"] for t in rows["team"])
    return rows


@pytest.mark.parametrize("to_bytes", [rows_to_bytes, rows_to_bytes_fast])
def test_a_state_with_a_back_reference_loads_and_reads_back(app: App, to_bytes) -> None:  # type: ignore[no-untyped-def]
    rows = _captained(app)
    ep = app.episode(to_bytes(app.schema, app.order, rows))
    assert read_rows(ep.db, app.blueprint) == rows
    assert ep.db.execute("PRAGMA foreign_key_check").fetchall() == []


def test_the_scratch_connection_is_left_empty_and_reusable(app: App) -> None:
    rows = _captained(app)
    first = rows_bytes(app, rows)
    again = rows_bytes(app, rows)  # the connection was emptied in spite of the back reference
    assert read_rows(app.episode(again).db, app.blueprint) == read_rows(app.episode(first).db, app.blueprint) == rows


def test_an_episode_on_such_a_state_runs_tools_with_foreign_keys_on(app: App) -> None:
    rows = _captained(app)
    ep = app.episode(rows_bytes(app, rows))
    team = next(t for t in rows["team"] if t["captain_id"])
    other = next(p for p in rows["player"] if p["team_id"] == team["team_id"] and p["player_id"] != team["captain_id"])
    res = ep.call("appoint_captain", {"team_id": team["team_id"], "captain_id": other["player_id"]})
    assert res.outcome == "success", res.content
    with pytest.raises(sqlite3.IntegrityError):
        ep.db.execute('UPDATE "team" SET "captain_id" = ? WHERE "team_id" = ?', ("ply_000000", team["team_id"]))


@pytest.mark.parametrize("to_bytes", [rows_to_bytes, rows_to_bytes_fast])
def test_a_back_reference_to_no_row_is_still_refused(app: App, to_bytes) -> None:  # type: ignore[no-untyped-def]
    rows = _captained(app)
    rows["team"][0]["captain_id"] = "ply_000000"
    with pytest.raises(sqlite3.IntegrityError, match=r"(?i)foreign key"):
        to_bytes(app.schema, app.order, rows)
    assert read_rows(app.episode(rows_bytes(app, _captained(app))).db, app.blueprint) == _captained(app)


def test_a_reply_listed_before_the_message_it_answers_loads() -> None:
    """A nullable reference into the same table: relay_chat's rows as read back (ordered by id) list
    some replies before their thread's first message."""
    from envsynth import catalog
    from envsynth.compiler.compile import compile_app

    chat = compile_app(catalog.load("messaging"), 0)
    rows = read_rows(chat.episode().db, chat.blueprint)
    place = {m["message_id"]: i for i, m in enumerate(rows["message"])}
    assert any(m["parent_message_id"] and place[m["parent_message_id"]] > i for i, m in enumerate(rows["message"]))
    for to_bytes in (rows_to_bytes, rows_to_bytes_fast):
        assert read_rows(chat.episode(to_bytes(chat.schema, chat.order, rows)).db, chat.blueprint) == rows
