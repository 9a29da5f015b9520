"""The task writer: a natural instruction is accepted only when the rules say it keeps the task."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import ToolGraph, build_graph
from envsynth.llm import ScriptedProvider
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.writer import Rewrite, check_rewrite, required_values, write_instruction
from envsynth.runtime.app import App
from envsynth.tasks import Task, synthesize
from envsynth.tasks.instruction import leaks_id


@pytest.fixture(scope="module")
def harbor() -> tuple[App, ToolGraph]:
    app = compile_app(catalog.load("harbor_market"), 0)
    return app, build_graph(app)


def find_task(app: App, graph: ToolGraph, want: Callable[[Task], bool]) -> Task:
    for i in range(80):
        made = synthesize(app, graph, app_index=0, task_index=i, states=2, depth=1, seed=0)
        if isinstance(made, list) and want(made[0]):
            return made[0]
    raise AssertionError("no such task in the first 80 task indices")


@pytest.fixture(scope="module")
def pay_task(harbor: tuple[App, ToolGraph]) -> Task:
    """Pay an order named by its date and time, then ask for its payment method."""
    app, graph = harbor
    return find_task(app, graph, lambda t: [c.tool for c in t.oracle] == ["pay_order", "get_order"])


def shown(app: App, task: Task, kind: str) -> str:
    return next(v.shown for v in required_values(app, task) if v.kind == kind)


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


def other_words(app: App, task: Task) -> str:
    """The description's other required words (how the order's date is named, e.g. "delivered"), or "placed"."""
    method = task.oracle[0].args["payment_method"].replace("_", " ")
    return " ".join(v.shown for v in required_values(app, task) if v.kind == "text" and v.norm != method) or "placed"


def texts(app: App, task: Task) -> dict[str, str]:
    date, time = shown(app, task, "date"), shown(app, task, "time")
    method = task.oracle[0].args["payment_method"].replace("_", " ")
    order_id = task.oracle[0].args["order_id"]
    good = (
        f"Hi, {task.user.name} here. There's an order that was {other_words(app, task)} on {date} at {time} and still needs paying. "
        f"Could you pay it with {method}? Once that's done, which payment method does the order show?"
    )
    return {
        "good": good,
        "leak": good.replace("an order that", f"an order ({order_id}) that"),
        "dropped": good.replace(f" with {method}", ""),
    }


def test_required_values_of_a_procedural_instruction(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, _ = harbor
    kinds = {v.kind: v for v in required_values(app, pay_task)}
    assert set(kinds) == {"date", "time", "text"}
    method = pay_task.oracle[0].args["payment_method"].replace("_", " ")
    assert method in {v.norm for v in required_values(app, pay_task) if v.kind == "text"}
    assert kinds["date"].shown in pay_task.instruction and kinds["time"].shown in pay_task.instruction


def test_a_good_rewrite_is_accepted(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, _ = harbor
    llm = ScriptedProvider([reply(pay_task, texts(app, pay_task)["good"])])
    instruction, user, info = asyncio.run(write_instruction(BuilderClient(llm), app, pay_task))
    assert instruction == texts(app, pay_task)["good"]
    assert info == {"status": "rewritten", "attempts": 1, "reasons": []}
    assert user.name == pay_task.user.name and user.role == "store operations manager"
    assert user.knows == [instruction] and user.preferences["tone"] == "brief"
    asked = llm.requests[0][-1]["content"]
    assert pay_task.instruction in asked and pay_task.oracle[0].args["order_id"] not in asked  # ids are masked


def test_a_leak_is_sent_back_with_the_reason(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, _ = harbor
    t = texts(app, pay_task)
    llm = ScriptedProvider([reply(pay_task, t["leak"]), reply(pay_task, t["good"])])
    instruction, _, info = asyncio.run(write_instruction(BuilderClient(llm), app, pay_task))
    assert instruction == t["good"] and info["status"] == "rewritten" and info["attempts"] == 2
    assert "internal id" in info["reasons"][0][0]
    assert "internal id" in llm.requests[1][-1]["content"]  # the feedback message


def test_a_leak_then_a_dropped_value_fall_back(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, _ = harbor
    t = texts(app, pay_task)
    method = pay_task.oracle[0].args["payment_method"].replace("_", " ")
    llm = ScriptedProvider([reply(pay_task, t["leak"]), reply(pay_task, t["dropped"])])
    instruction, user, info = asyncio.run(write_instruction(BuilderClient(llm), app, pay_task))
    assert instruction == pay_task.instruction and user == pay_task.user.model_copy(update={"knows": [pay_task.instruction]})
    assert info["status"] == "fallback" and info["attempts"] == 2
    assert any("internal id" in r for r in info["reasons"][0])
    assert info["reasons"][1] == [f'values of the original are missing or changed: "{method}"']


def test_values_are_compared_normalized(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, _ = harbor
    date = next(v.norm for v in required_values(app, pay_task) if v.kind == "date")  # ISO
    time = next(v.norm for v in required_values(app, pay_task) if v.kind == "time")  # 24-hour
    method = pay_task.oracle[0].args["payment_method"].replace("_", " ").title()
    text = f"Please pay my order {other_words(app, pay_task)} {date} {time} using {method}. What payment method is on it now?"
    assert check_rewrite(app, pay_task, Rewrite(instruction=text, name=pay_task.user.name.upper(), role="staff")) == []
    wrong = text.replace(date, date[:-2] + ("01" if date[-2:] != "01" else "02"))
    assert check_rewrite(app, pay_task, Rewrite(instruction=wrong, name=pay_task.user.name, role="staff"))[0].startswith(
        "values of the original"
    )


def test_the_question_and_the_user_are_kept(harbor: tuple[App, ToolGraph], pay_task: Task) -> None:
    app, graph = harbor
    text = texts(app, pay_task)["good"]
    statement = text.split(" Once that's done")[0]
    reasons = check_rewrite(app, pay_task, Rewrite(instruction=statement, name="Someone Else", role="staff", email="x@example.org"))
    assert "it no longer asks for the payment method: the user must still ask for it, as a question" in reasons
    assert any("name must stay" in r for r in reasons)
    assert any("no email" in r for r in reasons) == (pay_task.user.email is None)

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
