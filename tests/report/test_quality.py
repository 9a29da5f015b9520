"""The task quality linter: each defect is found in a task that has it and not in one without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envsynth import catalog
from envsynth.blueprint.expand import expand
from envsynth.corpus import build_corpus
from envsynth.corpus.load import load_corpus
from envsynth.report import DEFECTS, AppView, lint_corpus, lint_task
from envsynth.tasks.model import Call, Coordinates, Ref, Task, TaskState, UserProfile

BP = catalog.load("harbor_market")
APP = AppView(BP, expand(BP))

ANNA = {
    "customer_id": "cus_100001",
    "full_name": "Anna Weber",
    "email": "anna.weber@example.net",
    "phone": "+1-555-0100",
    "loyalty_tier": "gold",
    "store_credit": 12.5,
    "status": "active",
    "joined_on": "2024-05-02",
}
ANNA_TWIN = {**ANNA, "customer_id": "cus_100002", "email": "a.weber@example.org", "phone": "+1-555-0199"}
HOME = {
    "address_id": "adr_100001",
    "customer_id": "cus_100001",
    "kind": "home",
    "street": "12 Elm Street",
    "city": "Springfield",
    "state": "IL",
    "postal_code": "62701",
    "is_default": True,
}
STOCK = {"inventory_id": "inv_100001", "product_id": "prd_1", "warehouse_id": "wh_1", "stocked": 40, "allocated": 3, "reorder_level": 5}


def task(instruction: str, oracle: list[Call], *, kind: str = "action", answer: Any = None, rows: dict | None = None) -> Task:
    return Task(
        id="harbor_market-t00000-s0",
        app="harbor_market",
        kind=kind,  # type: ignore[arg-type]
        instruction=instruction,
        user=UserProfile(name="Anna Weber", role="customer", email=ANNA["email"]),
        state=TaskState(core=rows if rows is not None else {"customer": [ANNA], "address": [HOME]}),
        oracle=oracle,
        oracle_program="",
        expected_answer=answer,
        expected_effects={},
        visible_tools=[c.tool for c in oracle],
        coordinates=Coordinates(app=0, task=0, state=0, distractors=0),
        seed=0,
    )


def defects(t: Task) -> list[str]:
    return lint_task(t, APP).defects


UPDATE = Call(tool="update_customer", args={"customer_id": "cus_100001", "phone": "+1-555-0142"})
DELETE_ADDRESS = Call(tool="delete_address", args={"address_id": "adr_100001"})
CLEAN = "Hi, Anna Weber here (anna.weber@example.net). I got a new number, +1-555-0142; please put it on my account."


def test_a_request_a_person_would_make_has_no_defect() -> None:
    assert defects(task(CLEAN, [UPDATE])) == []
    two = "Hi, Anna Weber here (anna.weber@example.net). New number +1-555-0142, and please forget my Elm Street address."
    assert defects(task(two, [UPDATE, DELETE_ADDRESS])) == []


@pytest.mark.parametrize(
    ("text", "defect"),
    [
        ("Anna Weber here. Please update customer for me: phone +1-555-0142.", "tool_name_verbatim"),
        ("Anna Weber here. Update the customer records of mine: phone +1-555-0142.", "records"),
        ("Anna Weber here. Update the record of my account: phone +1-555-0142.", "records"),
        ("Anna Weber here. Update the customer whose loyalty tier is gold: phone +1-555-0142.", "field_names"),
        ("Anna Weber here. Update the customer: set its store credit to nothing.", "field_names"),
        ("Please change my phone number to +1-555-0142.", "missing_identity"),
        ("Hi, Anna Weber here. Set the customer with store credit $12.50 to phone +1-555-0142.", "counter_descriptor"),
    ],
)
def test_each_wording_defect_is_found(text: str, defect: str) -> None:
    assert defect in defects(task(text, [UPDATE]))


@pytest.mark.parametrize(
    ("text", "defect"),
    [
        ("Hi, Anna Weber here (anna.weber@example.net). Please please put +1-555-0142 on my account.", "doubled_word"),
        (
            "Hi, Anna Weber here (anna.weber@example.net). Update my account; the new phone is +1-555-0142 and the vip is yes.",
            "yes_no_value",
        ),
        ("Hi, Anna Weber here (anna.weber@example.net). Put +1-555-0142 on my account; the newsletter are no.", "yes_no_value"),
        ("Hi, Anna Weber here (anna.weber@example.net). Put +1-555-0142 on my order with 1 gift boxes.", "one_plural"),
        ("Hi, Anna Weber here (anna.weber@example.net). Put +1-555-0142 on my order estimated at 1 hours.", "one_plural"),
    ],
)
def test_each_phrasing_defect_is_found(text: str, defect: str) -> None:
    assert defect in defects(task(text, [UPDATE]))


@pytest.mark.parametrize(
    "text",
    [
        'Hi, Anna Weber here (anna.weber@example.net). Post "so so good" on my account with +1-555-0142.',  # quoted: the row's text
        "Hi, Anna Weber here (anna.weber@example.net). I no longer use +1-555-0142; there is no need for it.",
        "Hi, Anna Weber here (anna.weber@example.net). Book 1 business seat and 1 ticket; it was 1 class, +1-555-0142.",
        "Hi, Anna Weber here (anna.weber@example.net). Make sure my order is not gift-wrapped; +1-555-0142 is mine.",
    ],
)
def test_phrasing_defects_are_not_found_in_ordinary_text(text: str) -> None:
    assert not {"doubled_word", "yes_no_value", "one_plural"} & set(defects(task(text, [UPDATE])))


def test_record_as_a_verb_is_not_records() -> None:
    assert "records" not in defects(task("Anna Weber here (anna.weber@example.net). Please record my new phone, +1-555-0142.", [UPDATE]))


def test_first_person_inside_quotes_is_the_rows_text_not_the_user() -> None:
    t = task('Please add a review saying "my favourite mug" to the Blue Mug.', [UPDATE])
    assert "missing_identity" not in defects(t)
    assert "missing_identity" not in defects(task("Tell me how many orders there are.", [UPDATE]))


def test_a_namesake_is_a_defect_unless_the_text_tells_them_apart() -> None:
    rows = {"customer": [ANNA, ANNA_TWIN], "address": [HOME]}
    assert "namesake" in defects(task("Hi, I'm Anna Weber. New number +1-555-0142, please.", [UPDATE], rows=rows))
    assert "namesake" not in defects(task(CLEAN, [UPDATE], rows=rows))  # the email is only hers


def test_create_then_undo_and_erased_effects() -> None:
    add = Call(tool="add_address", args={"customer_id": "cus_100001", "kind": "home", "street": "1 Oak Road"})
    undo = Call(tool="delete_address", args={}, refs={"address_id": Ref(step=0, field="address_id")})
    assert {"create_then_undo", "erased_effect"} <= set(defects(task(CLEAN, [add, undo])))
    update_address = Call(tool="update_customer", args={"customer_id": "cus_100001", "phone": "+1-555-0142"})
    erase = Call(tool="delete_address", args={"address_id": "adr_100001"})
    touch = Call(tool="add_address", args={"customer_id": "cus_100001", "kind": "home", "street": "adr_100001"})
    assert "erased_effect" not in defects(task(CLEAN, [update_address, erase]))  # different rows
    assert "erased_effect" in defects(task(CLEAN, [touch, erase]))


def test_a_made_row_ended_later_and_an_erased_row_named_by_a_ref() -> None:
    circle = catalog.load("circle_social")
    view = AppView(circle, expand(circle))
    join = Call(tool="join_community", args={"community_id": "cmy_1", "profile_id": "pro_1"})
    role = Call(tool="change_member_role", args={"role": "moderator"}, refs={"membership_id": Ref(step=0, field="membership_id")})
    leave = Call(tool="leave_community", args={}, refs={"membership_id": Ref(step=0, field="membership_id")})
    rows: dict = {"profile": []}
    assert "create_then_undo" in lint_task(task(CLEAN, [join, role, leave], rows=rows), view).defects  # joined, then left
    assert "create_then_undo" not in lint_task(task(CLEAN, [join, role], rows=rows), view).defects
    # a row found by a lookup, changed, then deleted: the same place in the lookup's result names it twice
    find = Call(tool="list_customer_addresses", args={"customer_id": "cus_100001"})
    edit = Call(tool="place_order", args={"customer_id": "cus_100001"}, refs={"address_id": Ref(step=0, field="address_id")})
    drop = Call(tool="delete_address", args={}, refs={"address_id": Ref(step=0, field="address_id")})
    assert "erased_effect" in defects(task(CLEAN, [find, edit, drop]))
    assert "erased_effect" not in defects(task(CLEAN, [find, edit]))


def test_a_value_the_request_gave_then_changed_is_an_erased_effect() -> None:
    made = {"customer_id": Ref(step=0, field="customer_id")}
    register = Call(tool="register_customer", args={"full_name": "Anna Weber", "email": "anna.weber@example.net", "phone": "+1-555-0100"})
    rephone = Call(tool="update_customer", args={"phone": "+1-555-0142"}, refs=made)
    tier = Call(tool="update_customer", args={"loyalty_tier": "gold"}, refs=made)
    assert "erased_effect" in defects(task(CLEAN, [register, rephone]))  # registered with one number, then changed it
    assert "erased_effect" not in defects(task(CLEAN, [register, tier]))  # a field the registration did not give
    twice = Call(tool="update_customer", args={"customer_id": "cus_100001", "phone": "+1-555-0177"})
    assert "erased_effect" in defects(task(CLEAN, [UPDATE, twice]))  # the same row's phone, set twice
    assert "erased_effect" not in defects(task(CLEAN, [UPDATE, UPDATE]))  # the same value again changes nothing
    relay = catalog.load("relay_chat")
    view = AppView(relay, expand(relay))
    reply = Call(tool="reply_in_thread", args={"parent_message_id": "msg_1", "author_id": "usr_1", "text": "See you at 3"})
    edit = Call(tool="edit_message", args={"text": "See you at 4"}, refs={"message_id": Ref(step=0, field="message_id")})
    rows: dict = {"user": []}
    assert "erased_effect" in lint_task(task(CLEAN, [reply, edit], rows=rows), view).defects  # a transition that sets the text


def test_an_answer_stated_or_set_in_the_question() -> None:
    ask = Call(tool="get_customer", args={"customer_id": "cus_100001"})
    stated = "Anna Weber here (anna.weber@example.net): my store credit is $12.50, right? What is it?"
    assert "answer_in_question" in defects(task(stated, [ask], kind="info", answer=12.5))
    fair = "Anna Weber here (anna.weber@example.net). How much store credit do I have left?"
    assert "answer_in_question" not in defects(task(fair, [ask], kind="info", answer=12.5))
    set_then_asked = [UPDATE, Call(tool="get_customer", args={"customer_id": "cus_100001"})]
    assert "answer_in_question" in defects(task(fair, set_then_asked, kind="mixed", answer="+1-555-0142"))


def test_steps_on_unrelated_rows_are_disconnected() -> None:
    other = {**HOME, "address_id": "adr_200002", "customer_id": "cus_200002"}
    stranger = {**ANNA, "customer_id": "cus_200002", "full_name": "Ben Ode", "email": "ben@example.org"}
    rows = {"customer": [ANNA, stranger], "address": [HOME, other]}
    related = [UPDATE, Call(tool="delete_address", args={"address_id": "adr_100001"})]  # her own address
    unrelated = [UPDATE, Call(tool="delete_address", args={"address_id": "adr_200002"})]
    assert "disconnected" not in defects(task(CLEAN, related, rows=rows))
    assert "disconnected" in defects(task(CLEAN, unrelated, rows=rows))


def test_a_built_corpus_report_adds_up(tmp_path: Path) -> None:
    summary = build_corpus(tmp_path / "c", blueprints=[BP], tasks_per_app=6, states=1, distractors=1, seed=0)
    corpus = load_corpus(summary.path)
    app = corpus.apps["harbor_market"]
    report = lint_corpus(corpus.tasks, {"harbor_market": AppView(app.blueprint, app.specs)})
    linted = [lint_task(t, AppView(app.blueprint, app.specs)) for t in corpus.tasks]
    assert report.tasks == len(corpus.tasks) > 0
    for d in DEFECTS:
        assert report.counts[d] == sum(d in t.defects for t in linted)
        assert report.rates[d] == pytest.approx(report.counts[d] / report.tasks)
    called = {c.tool for t in corpus.tasks for c in t.oracle}
    cov = report.coverage["harbor_market"]
    assert set(cov.uncovered) == {s.name for s in app.specs} - called
    assert 0 < cov.writes <= 1 and 0 <= cov.reads <= 1
    assert sum(report.roles.values()) == pytest.approx(1.0)
