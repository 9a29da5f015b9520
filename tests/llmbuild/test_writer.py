"""The task writer: a natural instruction is accepted only when the rules say it keeps the task."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from llmbuild_helpers import acts, asked, chosen_value, find_tasks, is_write_then_get, norm, other_values, rewrites, row_id

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import ToolGraph, build_graph
from envsynth.llm import ScriptedProvider
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.writer import Rewrite, check_rewrite, required_values, write_instruction
from envsynth.runtime.app import App
from envsynth.tasks import Task
from envsynth.tasks.wording.instruction import leaks_id


@pytest.fixture(scope="module")
def harbor() -> tuple[App, ToolGraph]:
    app = compile_app(catalog.load("harbor_market"), 0)
    return app, build_graph(app)


def find_task(app: App, graph: ToolGraph, want: Callable[[Task], bool]) -> Task:
    return find_tasks(app, graph, want)[0]


@pytest.fixture(scope="module")
def write_task(harbor: tuple[App, ToolGraph]) -> Task:
    """Change an order named by its date and time with a chosen value (e.g. ship it with DHL), then ask about that order."""
    app, graph = harbor
    return find_task(app, graph, lambda t: is_write_then_get(app, t))


def reply(task: Task, instruction: str, **profile: object) -> str:
    return json.dumps(
        {
            "instruction": instruction,
            "name": task.user.name,
            "role": "store operations manager",
            "email": task.user.email,
            "phone": task.user.phone,
            "preferences": {"tone": "brief"},
            **profile,
        }
    )


def test_required_values_of_a_procedural_instruction(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, _ = harbor
    values = required_values(app, write_task)
    kinds = {v.kind: v for v in values}
    assert set(kinds) == {"date", "time", "text"}  # the digits of the date and the time are no numbers
    call = acts(app, write_task)[0]
    chosen = [call.args[p.name] for p in app.spec_by_name[call.tool].params if p.enum and p.name in call.args]  # the carrier...
    assert chosen and all(str(a).replace("_", " ").lower() in {v.norm for v in values if v.kind == "text"} for a in chosen)
    assert kinds["date"].shown in write_task.instruction and kinds["time"].shown in write_task.instruction
    assert all(v.shown in write_task.instruction for v in values)


def test_a_good_rewrite_is_accepted(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, _ = harbor
    good = rewrites(app, write_task)["good"]
    llm = ScriptedProvider([reply(write_task, good)])
    instruction, user, info = asyncio.run(write_instruction(BuilderClient(llm), app, write_task))
    assert instruction == good
    assert info == {"status": "rewritten", "attempts": 1, "reasons": []}
    assert user.name == write_task.user.name and user.role == "store operations manager"
    assert user.knows == [instruction] and user.preferences["tone"] == "brief"
    asked = llm.requests[0][-1]["content"]
    assert write_task.instruction in asked and row_id(app, write_task) not in asked  # ids are masked


def test_a_leak_is_sent_back_with_the_reason(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, _ = harbor
    t = rewrites(app, write_task)
    llm = ScriptedProvider([reply(write_task, t["leak"]), reply(write_task, t["good"])])
    instruction, _, info = asyncio.run(write_instruction(BuilderClient(llm), app, write_task))
    assert instruction == t["good"] and info["status"] == "rewritten" and info["attempts"] == 2
    assert "internal id" in info["reasons"][0][0]
    assert "internal id" in llm.requests[1][-1]["content"]  # the feedback message


def test_a_leak_then_a_dropped_value_fall_back(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, _ = harbor
    t = rewrites(app, write_task)
    value = chosen_value(app, write_task)
    assert value is not None
    llm = ScriptedProvider([reply(write_task, t["leak"]), reply(write_task, t["dropped"])])
    instruction, user, info = asyncio.run(write_instruction(BuilderClient(llm), app, write_task))
    assert instruction == write_task.instruction and user == write_task.user.model_copy(update={"knows": [write_task.instruction]})
    assert info["status"] == "fallback" and info["attempts"] == 2
    assert any("internal id" in r for r in info["reasons"][0])
    assert info["reasons"][1] == [f'values of the original are missing or changed: "{value.shown}"']


def test_values_are_compared_normalized(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, _ = harbor
    date, time = norm(app, write_task, "date"), norm(app, write_task, "time")  # ISO, 24-hour
    assert date not in write_task.instruction  # the request says it another way (and a time other than noon too)
    assert time not in write_task.instruction or time.startswith("12:")  # '12:00' is in '12:00 PM'
    value = chosen_value(app, write_task)
    assert value is not None
    cased = value.shown.lower() if value.shown.isupper() else value.shown.upper()  # another letter case
    assert cased != value.shown
    text = f"Please see to the one {date} {time}{other_values(app, write_task)} using {cased}. What {asked(write_task)} is on it now?"
    assert check_rewrite(app, write_task, Rewrite(instruction=text, name=write_task.user.name.upper(), role="staff")) == []
    wrong = text.replace(date, date[:-2] + ("01" if date[-2:] != "01" else "02"))
    assert check_rewrite(app, write_task, Rewrite(instruction=wrong, name=write_task.user.name, role="staff"))[0].startswith(
        "values of the original"
    )


def test_the_question_and_the_user_are_kept(harbor: tuple[App, ToolGraph], write_task: Task) -> None:
    app, graph = harbor
    text = rewrites(app, write_task)["good"]
    statement = text.split(" Once that's done")[0]
    assert statement != text
    reasons = check_rewrite(app, write_task, Rewrite(instruction=statement, name="Someone Else", role="staff", email="x@example.org"))
    assert f"it no longer asks for the {asked(write_task)}: the user must still ask for it, as a question" in reasons
    assert any("name must stay" in r for r in reasons)
    assert any("no email" in r for r in reasons) == (write_task.user.email is None)
    assert any("email must stay" in r for r in reasons) == (write_task.user.email is not None)

    count = find_task(app, graph, lambda t: t.kind == "info" and t.answer_field == "total")
    assert check_rewrite(app, count, Rewrite(instruction=count.instruction, name=count.user.name, role="staff")) == []
    flat = Rewrite(instruction="Please look at the records. Thanks!", name=count.user.name, role="staff")
    assert "it no longer asks for how many records there are: the user must still ask for it, as a question" in check_rewrite(
        app, count, flat
    )


@pytest.mark.parametrize("text", ["booking RNT_104200", "Cancel Ord_100231 please", "the id is CUST_000042.", "rnt_104200"])
def test_an_id_in_any_letter_case_is_a_leak(text: str) -> None:
    assert leaks_id(text)


@pytest.mark.parametrize("text", ["order 104200", "SKU-104200", "a_b 123456", "RNT_1042", "Booking ABCDEF_104200"])
def test_text_without_an_id_shape_is_no_leak(text: str) -> None:
    assert not leaks_id(text)
