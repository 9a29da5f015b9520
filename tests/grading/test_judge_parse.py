"""Reading a judge's reply (as capable models write them: fenced, chatty, loose), and simulated-user failures."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envsynth.grading.judge import JudgeCase, parse_verdict
from envsynth.grading.userfail import user_failure
from envsynth.tasks.model import Coordinates, Scenario, Task, TaskState, UserProfile


@pytest.mark.parametrize(
    ("reply", "passed"),
    [
        ('{"verdict": "pass", "explanation": "The order was cancelled."}', True),
        ('```json\n{"verdict": "FAIL", "explanation": "Wrong row."}\n```', False),
        ('Sure! Here is my grading:\n{"verdict": "correct", "explanation": "ok"}\nHope this helps.', True),
        ('{"passed": false, "reason": "the answer hedges between 3 and 4"}', False),
        ('{"result": "Passed."}', True),
        ("PASS\nThe assistant updated the email as asked.", True),
        ("**FAIL**: the tier was not changed.", False),
    ],
)
def test_verdicts_are_read_from_the_forms_models_write(reply: str, passed: bool) -> None:
    got = parse_verdict(reply)
    assert got is not None and got[0] is passed


@pytest.mark.parametrize(
    "reply",
    ["", "   ", "I think the assistant did a reasonable job overall.", '{"verdict": "maybe"}', "[1, 2]", '{"explanation": "no verdict"'],
)
def test_a_reply_without_a_verdict_is_none(reply: str) -> None:
    assert parse_verdict(reply) is None


def test_the_explanation_travels_with_the_verdict() -> None:
    assert parse_verdict('{"verdict": "fail", "explanation": "The  refund went\\n to the wrong card."}') == (
        False,
        "The refund went to the wrong card.",
    )


@given(st.text(max_size=300))
def test_parsing_never_raises(text: str) -> None:
    got = parse_verdict(text)
    assert got is None or isinstance(got[0], bool)


def test_the_case_digest_changes_with_what_the_judge_sees() -> None:
    case = JudgeCase("How many?", 3, {}, {}, [], "3", None)
    other = JudgeCase("How many?", 3, {}, {}, [], "4", None)
    assert case.digest("m") == case.digest("m") != other.digest("m")
    assert case.digest("m") != case.digest("n")
    assert "Expected answer: 3" in case.prompt() and '"3"' in case.prompt()


def _task(answer: object = None, email: str | None = "ann.lee@example.com") -> Task:
    request = "How many open tickets do I have?" if answer is not None else "Please cancel order ORD-7781 for me."
    return Task(
        id="t1",
        app="shop",
        kind="info" if answer is not None else "action",
        instruction=request,
        user=UserProfile(name="Ann Lee", role="customer", email=email, phone="+1-724-746-1698"),
        scenario=Scenario(persona="Ann Lee", request=request, knows=[f"my email is {email}"] if email else []),
        state=TaskState(core={}),
        oracle=[],
        oracle_program="",
        expected_answer=answer,
        expected_effects={},
        visible_tools=[],
        coordinates=Coordinates(app=0, task=0, state=0, distractors=0),
        seed=0,
    )


def _conv(*turns: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": "system", "content": "s"}] + [
        {"role": "user" if who == "user" else "assistant", "content": text} for who, text in turns
    ]


def test_a_user_who_states_the_answer_it_asked_for_is_a_user_failure() -> None:
    msgs = _conv(("user", "Hi, I have 4 open tickets, can you confirm how many I have?"), ("agent", "You have 4 open tickets."))
    assert "stated the answer 4" in (user_failure(_task(4), msgs, "user_stop") or "")


def test_the_user_repeating_what_the_agent_said_is_fine() -> None:
    msgs = _conv(("user", "How many open tickets do I have?"), ("agent", "You have 4 open tickets."), ("user", "Great, 4 it is."))
    assert user_failure(_task(4), msgs, "user_stop") is None


def test_an_internal_id_the_user_cannot_know() -> None:
    msgs = _conv(("user", "Cancel my order, it is ord_55120."))
    assert "internal id 'ord_55120'" in (user_failure(_task(), msgs, "final_message", state_ids=["ord_55120", "7"]) or "")
    said_by_agent = _conv(("user", "Cancel my order."), ("agent", "Is it ord_55120?"), ("user", "Yes, ord_55120."))
    assert user_failure(_task(), said_by_agent, "final_message", state_ids=["ord_55120"]) is None


def test_ending_in_the_opening_message_is_a_user_failure() -> None:
    assert "ended the conversation" in (user_failure(_task(), _conv(("user", "Never mind, bye.")), "user_stop") or "")
    assert user_failure(_task(), _conv(("user", "Please cancel order ORD-7781.")), "final_message") is None


def test_contact_details_other_than_its_own() -> None:
    msgs = _conv(("user", "Cancel ORD-7781 please."), ("agent", "Your email?"), ("user", "It's ann.lee@gmail.com"))
    assert "ann.lee@gmail.com" in (user_failure(_task(), msgs, "user_stop") or "")
    own = _conv(("user", "Cancel ORD-7781 please."), ("agent", "Your email and phone?"), ("user", "ann.lee@example.com, (724) 746-1698"))
    assert user_failure(_task(), own, "user_stop") is None
    wrong_phone = _conv(("user", "Cancel ORD-7781."), ("agent", "Phone?"), ("user", "+1 415 555 0100"))
    assert "phone number" in (user_failure(_task(), wrong_phone, "user_stop") or "")
    dates = _conv(("user", "Cancel ORD-7781, placed 2026-03-05, total 1234.50"))
    assert user_failure(_task(), dates, "final_message") is None


def test_the_request_may_hold_a_new_email() -> None:
    t = _task()
    t = t.model_copy(update={"instruction": "Change my email to ann.new@example.org."})
    msgs = _conv(("user", "Change my email to ann.new@example.org please."))
    assert user_failure(t, msgs, "final_message") is None
    assert json.dumps(t.user.model_dump())
