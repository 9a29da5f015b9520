"""Task text in the blueprint's words: say phrases, nouns, labels, descriptions and who asks."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import yaml

from envsynth.blueprint import from_dict
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import Blueprint
from envsynth.tasks.model import Call, Ref
from envsynth.tasks.wording.describe import Description, describe, render
from envsynth.tasks.wording.instruction import Phraser, greeting, plural, profile

ALICE = {"customer_id": "cus_100001", "full_name": "Alice Moreau", "email": "alice@example.net", "tier": "member", "status": "active"}
BOOK = {"book_id": "boo_100001", "title": "The Silent Garden", "author": "Ann Lee", "genre": "fiction", "price": 12.5, "stock": 4}


@pytest.fixture
def bookshop(bookshop_blueprint_path: Path) -> Blueprint:
    d = yaml.safe_load(bookshop_blueprint_path.read_text())
    d = copy.deepcopy(d)
    d["users"] = [{"role": "customer", "entity": "customer", "identify_by": ["email"]}, {"role": "staff", "called": "bookseller"}]
    for a in d["actions"]:
        if a["name"] == "place_purchase":
            a["say"] = "order {quantity} copies of {book}"
        if a["name"] == "cancel_purchase":
            a["say"] = "cancel {purchase}"
        if a["name"] == "count_purchases":
            a["say"] = "how many of my purchases are {status}?"
    for e in d["entities"]:
        if e["name"] == "purchase":
            e.update(called="order", known_by=["placed_at"], never_describe=["quantity"])
        if e["name"] == "book":
            e["never_describe"] = ["stock"]
    return from_dict(d, "bookshop.yaml")


def _phraser(bp: Blueprint, me: Description | None = None) -> Phraser:
    return Phraser(bp, {s.name: s for s in expand(bp)}, random.Random(0), me)


def test_a_say_phrase_fills_rows_and_values_and_implies_the_requester(bookshop: Blueprint) -> None:
    me = Description("customer", {"full_name": "Alice Moreau"})
    book = Description("book", {"title": "The Silent Garden"})
    call = Call(tool="place_purchase", args={"customer_id": "cus_100001", "book_id": "boo_100001", "quantity": 2})
    text = _phraser(bookshop, me).clause(0, [call], {"customer_id": me, "book_id": book})
    assert text == 'order 2 copies of the book "The Silent Garden"'


def test_a_row_made_earlier_in_the_request_is_the_new_one(bookshop: Blueprint) -> None:
    me = Description("customer", {"full_name": "Alice Moreau"})
    place = Call(tool="place_purchase", args={"customer_id": "cus_100001", "book_id": "boo_100001", "quantity": 1})
    cancel = Call(tool="cancel_purchase", args={}, refs={"purchase_id": Ref(step=0, field="purchase_id")})
    text = _phraser(bookshop, me).clause(1, [place, cancel], {})
    assert text in ("cancel that order", "cancel the new order", "cancel the same order")  # the called noun, not 'purchase'


def test_a_question_phrase_and_the_fallback_without_one(bookshop: Blueprint) -> None:
    count = Call(tool="count_purchases", args={"customer_id": "cus_100001", "status": "paid"})
    mine = Phraser(bookshop, {s.name: s for s in expand(bookshop)}, random.Random(0), me_key="cus_100001")
    assert mine.question(count, "value", {}, [count]) == "How many of my purchases are paid?"  # the requester's id is implied
    everyone = Call(tool="count_purchases", args={"status": "paid"})
    text = mine.question(everyone, "value", {}, [everyone])
    assert "my" not in text.split() and "orders" in text  # a first-person phrase never describes other people's rows
    no_phrase = bookshop.model_copy(update={"actions": [a.model_copy(update={"say": None}) for a in bookshop.actions]})
    text = _phraser(no_phrase).question(everyone, "value", {}, [everyone])
    assert "records" not in text and "orders" in text  # about things, in the entity's own noun


def test_descriptions_use_known_by_first_and_never_a_never_describe_field(bookshop: Blueprint) -> None:
    twin = {**BOOK, "book_id": "boo_100002", "title": "The Silent Garden", "price": 20.0, "stock": 9, "author": "Bo Tan"}
    rows = {"book": [BOOK, twin]}
    for seed in range(20):
        d = describe(bookshop, rows, "book", BOOK, random.Random(seed))
        assert d is not None and "stock" not in d.facts and d.count(bookshop, rows) == 1
    orders = [
        {
            "purchase_id": f"pur_10000{i}",
            "customer_id": "cus_100001",
            "book_id": "boo_100001",
            "quantity": 1 + i,
            "status": "placed",
            "placed_at": f"2026-03-0{i + 1}T10:00:00",
        }
        for i in range(3)
    ]
    for order in orders:
        d = describe(bookshop, {"purchase": orders}, "purchase", order, random.Random(1))
        assert d is not None and list(d.facts) == ["placed_at"]
        assert render(bookshop, d).startswith("the order placed on March")


def test_who_asks_is_identified_by_the_role_the_blueprint_declares(bookshop: Blueprint) -> None:
    rows = {"customer": [ALICE]}
    asker = profile(bookshop, rows, [("customer", "cus_100001")], random.Random(0), lambda: "Sam Staff")
    assert asker.user.role == "customer" and asker.table == "customer" and asker.identity == ("alice@example.net",)
    assert "my email is alice@example.net" in asker.user.knows
    for seed in range(6):
        text = greeting(asker, random.Random(seed))
        assert "Alice Moreau" in text and "alice@example.net" in text
    staff = profile(bookshop, {}, [("book", "boo_100001")], random.Random(0), lambda: "Sam Staff")
    assert staff.staff and staff.user.role == "bookseller" and greeting(staff, random.Random(0)) == ""


def test_plural() -> None:
    assert [plural(w) for w in ("order", "entry", "day", "class", "box", "match", "gift card")] == [
        "orders",
        "entries",
        "days",
        "classes",
        "boxes",
        "matches",
        "gift cards",
    ]


def test_a_list_argument_is_no_row_of_the_requester(bookshop: Blueprint) -> None:
    phraser = Phraser(bookshop, {s.name: s for s in expand(bookshop)}, random.Random(0), me_key="cus_100001", mine=frozenset({"pur_1"}))
    count = Call(tool="count_purchases", args={"customer_id": "cus_100001", "status": ["paid", "shipped"]})
    assert phraser.question(count, "value", {}, [count]).startswith("How many of my purchases are paid or shipped")


def test_a_row_is_named_in_full_once_then_as_that_row(bookshop: Blueprint) -> None:
    book = Description("book", {"title": "The Silent Garden"})
    first = Call(tool="restock_book", args={"book_id": "boo_100001", "copies": 2})
    again = Call(tool="restock_book", args={"book_id": "boo_100001", "copies": 3})
    phraser = _phraser(bookshop)
    one = phraser.clause(0, [first, again], {"book_id": book})
    two = phraser.clause(1, [first, again], {"book_id": book})
    assert '"The Silent Garden"' in one and '"The Silent Garden"' not in two
    assert "that book" in two or "the same book" in two


def test_chains_never_take_back_their_own_steps() -> None:
    from envsynth import catalog
    from envsynth.tasks.planning.chain import _reverses, moves, undoes

    specs = {s.name: s for s in expand(catalog.load("northwind_bank"))}
    assert moves(specs["lock_card"]) == (frozenset({"active"}), "locked")
    assert _reverses(specs["lock_card"], specs["unlock_card"]) and not _reverses(specs["lock_card"], specs["report_card_lost"])
    fitness = {s.name: s for s in expand(catalog.load("peak_fitness"))}
    assert undoes(fitness["decline_pt_session"], made=True) and not undoes(fitness["decline_pt_session"])
    assert undoes(specs["cancel_scheduled_payment"]) and not undoes(specs["pay_scheduled_payment_now"])
