"""Information tasks reach the reads of an app that lookups never make: counts of one row's rows, groups of a row,
and the reads mixed tasks end with (issue 11: tool coverage per app).

Each test synthesizes catalogue task indexes at the corpus coordinates of ``envsynth build OUT -T 40 -S 2 -D 4
--seed 0`` and checks the admitted task: the read it answers with, its answer, and the question's words.
"""

from __future__ import annotations

import random
from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.graph.model import ToolGraph
from envsynth.runtime.answerpath import group_field
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.model import Call
from envsynth.tasks.planning.answer import _group_keys
from envsynth.tasks.planning.chain import _follow_ups, _info_reads, plan_chain, row_filter
from envsynth.tasks.planning.plan import plan_task
from envsynth.tasks.wording.questions import how_many


@cache
def _app(name: str) -> tuple[App, ToolGraph]:
    app = compile_app(catalog.load(name), 0)
    return app, build_graph(app)


def _tasks(name: str, task_index: int) -> list[Task] | None:
    """The tasks of an index; None when a guessing baseline would solve them (admission refuses those)."""
    app, graph = _app(name)
    out = synthesize(app, graph, app_index=catalog.names().index(name), task_index=task_index, states=2, depth=4, seed=0)
    if isinstance(out, Rejection) and out.reason == "guessable":
        return None
    assert not isinstance(out, Rejection), out
    return out


def _asking(name: str, tool: str) -> list[Task]:
    """The tasks of the first information task index of the corpus that asks with ``tool`` (the info round comes to it)."""
    app, graph = _app(name)
    index = catalog.names().index(name)
    for t in range(400):
        plan = plan_task(app, graph, app_index=index, task_index=t, depth=4, seed=0)
        if not isinstance(plan, Rejection) and plan.kind == "info" and plan.steps[-1].spec.name == tool:
            tasks = _tasks(name, t)
            if tasks is not None:
                return tasks
    raise AssertionError(f"no information task of {name} asks with {tool}")


def _rows(task: Task, table: str) -> list[dict]:
    return [*task.state.core.get(table, []), *task.state.distractors.get(table, [])]


def test_a_count_of_one_rows_rows_names_that_row() -> None:
    """ "How many songs are on my playlist ...?": was a count over every playlist entry (rejected), now of one playlist."""
    for task in _asking("tempo_music", "list_playlist_entries"):
        call = task.oracle[task.answer_step or 0]
        assert call.tool == "list_playlist_entries" and set(call.args) | set(call.refs) == {"playlist_id", "limit", "offset"}
        playlist = next(p for p in _rows(task, "playlist") if f'"{p["name"]}"' in task.instruction)
        assert "how many songs are on my" in task.instruction.lower()
        entries = [e for e in _rows(task, "playlist_entry") if e["playlist_id"] == playlist["playlist_id"]]
        assert task.expected_answer == len(entries) > 0


def test_a_count_grouped_by_a_row_is_asked_by_the_rows_name_and_answered_right() -> None:
    """ "How many memberships are there for the plan "Basic Flex" ...?": one group of count_memberships_by_plan, under each
    state's ids (the plan's id differs per state), never the plan's id."""
    tasks = _asking("peak_fitness", "count_memberships_by_plan")
    assert len({t.answer_field for t in tasks}) == len(tasks)  # each state's own plan id
    for task in tasks:
        call = task.oracle[task.answer_step or 0]
        assert call.tool == "count_memberships_by_plan" and "plan_id" not in call.args
        plan = next(p for p in _rows(task, "membership_plan") if task.answer_field == group_field("plan_id", p["plan_id"]))
        assert f'the plan "{plan["name"]}"' in task.instruction and plan["plan_id"] not in task.instruction
        rows = [m for m in _rows(task, "membership") if m["plan_id"] == plan["plan_id"] and m["status"] == call.args["status"]]
        assert task.expected_answer == len(rows) > 0


def test_a_grouped_aggregate_narrowed_to_a_row_asks_in_the_tools_words() -> None:
    """latest_reading_per_meter filtered to the meter it groups by: "What's the latest reading you have for the meter ...?" """
    for task in _asking("brightline_utilities", "latest_reading_per_meter"):
        assert task.oracle[task.answer_step or 0].tool == "latest_reading_per_meter"
        meter = next(m for m in _rows(task, "meter") if f'for the meter "{m["serial_number"]}"?' in task.instruction)
        assert (
            task.answer_field == group_field("meter_id", meter["meter_id"])
            and "what's the latest reading you have" in task.instruction.lower()
        )
        readings = [r["reading_value"] for r in _rows(task, "meter_reading") if r["meter_id"] == meter["meter_id"]]
        assert task.expected_answer == max(readings)


def test_a_listing_say_phrase_asks_how_many() -> None:
    assert how_many("which labels are on {task_id}?") == "how many labels are on {task_id}?"
    assert how_many("what songs are on {playlist_id}?") == "how many songs are on {playlist_id}?"
    assert how_many("which artists am I following?") == "how many artists am I following?"
    assert how_many("what has {artist_id} released?") == "what has {artist_id} released?"  # no plural noun to count


def test_the_requester_as_the_subject_reads_in_the_first_person() -> None:
    """circle_social's list_follows of the requester: "How many members do I follow?", not "... does my account follow?"."""
    for task in _asking("circle_social", "list_follows"):
        assert task.oracle[task.answer_step or 0].tool == "list_follows"
        assert "how many members do i follow?" in task.instruction.lower()


def test_the_info_rotation_reaches_reads_grouped_by_a_row() -> None:
    """Aggregates grouped by a reference are asked about (one group, named by its row), so the round of information
    tasks reaches them: top_tracks, count_followers_by_artist (tempo), count_check_ins (peak)."""
    for name, tools in (("tempo_music", {"top_tracks", "count_followers_by_artist"}), ("peak_fitness", {"count_check_ins"})):
        app, graph = _app(name)
        reads = {s.name for s in _info_reads(app)}
        assert tools <= reads, name
        firsts = {plan_chain(app, graph, random.Random(0), "info", slot=i)[0].spec.name for i in range(len(reads))}  # type: ignore[index]
        assert tools <= firsts
    app, _ = _app("tempo_music")
    assert row_filter(app, app.spec_by_name["count_followers_by_artist"]) == "artist_id"
    assert row_filter(app, app.spec_by_name["list_playlist_entries"]) == "playlist_id"
    assert row_filter(app, app.spec_by_name["search_subscriptions"]) is None  # value filters narrow it


def test_the_info_rotation_comes_to_reads_few_writes_lead_to_before_common_ones() -> None:
    """After the reads no mixed task can end with, information tasks go round those that the fewest writes lead to: a
    mixed task seldom ends with get_artist (only after following an artist), often with get_listener (after 8 writes).
    Searches over rows that writes act on come last: the oracle finds such rows with them (search_playlists)."""
    app, _ = _app("tempo_music")
    reach = _follow_ups(app)
    assert reach["get_artist"] < reach["get_listener"]
    order = [s.name for s in _info_reads(app)]
    assert order.index("get_artist") < order.index("get_listener") < order.index("search_playlists")
    last_get = max(i for i, n in enumerate(order) if n.startswith("get_"))
    assert all(order.index(n) > last_get for n in ("search_playlists", "search_artists", "search_tracks"))
    gets = [n for n in order if n.startswith("get_") and n in reach]
    assert [reach[n] for n in gets] == sorted(reach[n] for n in gets)


def test_a_grouped_total_asks_for_a_group_its_filters_keep() -> None:
    """ "What are the total minutes of the workouts on January 27, 2026 where the activity is hiit?": the group is one
    the date range keeps (a group no kept row falls in is missing from the result: the task was an empty answer)."""
    app, _ = _app("peak_fitness")
    spec = app.spec_by_name["total_workout_minutes"]
    core = {
        "workout": [
            {"workout_id": "wko_1", "activity": "yoga", "performed_on": "2026-01-20", "duration_minutes": 30},
            {"workout_id": "wko_2", "activity": "hiit", "performed_on": "2026-01-27", "duration_minutes": 16},
            {"workout_id": "wko_3", "activity": "running", "performed_on": "2026-02-03", "duration_minutes": 45},
        ]
    }
    call = Call(tool=spec.name, args={"member_id": None, "from_date": "2026-01-27", "to_date": "2026-01-27"})
    assert _group_keys(spec, call, core) == ["hiit"]
    unfiltered = Call(tool=spec.name, args={"member_id": None, "from_date": None, "to_date": None})
    assert _group_keys(spec, unfiltered, core) == ["hiit", "running", "yoga"]
    for task in _asking("peak_fitness", "total_workout_minutes"):  # was an empty answer
        assert task.oracle[task.answer_step or 0].tool == "total_workout_minutes" and task.expected_answer
