"""The language keys of a blueprint: accepted when they name real things, refused with a located error otherwise."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.language import slots


@pytest.fixture
def data(bookshop_blueprint_path: Path) -> dict:
    return yaml.safe_load(bookshop_blueprint_path.read_text())


def _action(d: dict, name: str) -> dict:
    return next(a for a in d["actions"] if a["name"] == name)


def _entity(d: dict, name: str) -> dict:
    return next(e for e in d["entities"] if e["name"] == name)


def test_slots_are_plain_names_in_order() -> None:
    assert slots("move {amount} from {source} to {target}") == ["amount", "source", "target"]
    assert slots("no slot here") == []
    for bad in ("cancel {order", "cancel {order:>3}", "cancel {order!r}", "cancel {}", "cancel {a.b}"):
        with pytest.raises(ValueError):
            slots(bad)


def test_language_keys_load_and_are_kept(data: dict) -> None:
    d = copy.deepcopy(data)
    d["users"] = [
        {"role": "customer", "entity": "customer", "identify_by": ["email"]},
        {"role": "staff", "called": "bookseller"},
    ]
    _entity(d, "book").update(called="book", known_by=["title"], never_describe=["stock"])
    _entity(d, "customer")["fields"][1]["label"] = "name"
    _action(d, "cancel_purchase").update(say="cancel {purchase}", reasons=["I ordered the wrong edition"], asked_by=["customer"])
    bp = from_dict(d, "shop.yaml")
    assert [u.role for u in bp.users] == ["customer", "staff"] and bp.users[0].identify_by == ["email"]
    assert bp.entity("book").known_by == ["title"] and bp.entity("book").never_describe == ["stock"]
    cancel = next(a for a in bp.actions if a.name == "cancel_purchase")
    assert cancel.say == "cancel {purchase}" and cancel.reasons == ["I ordered the wrong edition"] and cancel.asked_by == ["customer"]


Mutation = Callable[[dict], Any]


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda d: _action(d, "cancel_purchase").update(say="cancel {purchse}"), "say", "slot {purchse} names nothing; use one of"),
        (lambda d: _action(d, "cancel_purchase").update(say="cancel {purchase"), "say", "is not a slot template"),
        (lambda d: _action(d, "cancel_purchase").update(say="cancel\n{purchase}"), "say", "is not one line of text"),
        (lambda d: _entity(d, "book").update(known_by=["colour"]), "entities[1]", "'colour' is not a field of this entity"),
        (lambda d: _entity(d, "book").update(never_describe=["title"]), "entities[1]", "the label 'title'"),
        (lambda d: _entity(d, "book").update(known_by=["stock"], never_describe=["stock"]), "entities[1]", "both in known_by"),
        (lambda d: _entity(d, "book").update(known_by=["book_id"]), "entities[1]", "is the id"),
        (lambda d: d.update(users=[{"role": "customer", "entity": "shopper"}]), "users[0].entity", "unknown entity 'shopper'"),
        (lambda d: d.update(users=[{"role": "customer", "entity": "gift_card"}]), "users[0].entity", "has no field of type name"),
        (lambda d: _entity(d, "book")["fields"][2].update(say="by {author}"), "entities[1].fields[2].say", "exactly one {value} slot"),
        (
            lambda d: d.update(users=[{"role": "customer", "entity": "customer", "identify_by": ["phone"]}]),
            "users[0].identify_by[0]",
            "not a field",
        ),
        (lambda d: d.update(users=[{"role": "staff"}, {"role": "staff"}]), "users[1].role", "duplicate role"),
        (
            lambda d: (d.update(users=[{"role": "staff"}]), _action(d, "cancel_purchase").update(asked_by=["clerk"])),
            "asked_by[0]",
            "'clerk' is not a role of users; use one of ['staff']",
        ),
        (lambda d: d.update(users=[{"role": "staff", "identify_by": ["email"]}]), "users[0]", "set 'entity' too"),
        (lambda d: _action(d, "cancel_purchase").update(reasons_for={"colour": ["x y z"]}), "reasons_for", "'colour' is not a parameter"),
        (lambda d: _entity(d, "book")["fields"][2].update(say_true="is signed"), "entities[1].fields[2]", "say_true and say_false go"),
    ],
)
def test_language_mistakes_are_located(data: dict, mutate: Mutation, path: str, words: str) -> None:
    d = copy.deepcopy(data)
    mutate(d)
    with pytest.raises(BlueprintError) as info:
        from_dict(d, "shop.yaml")
    message = str(info.value)
    assert message.startswith("shop.yaml: ") and path in message and words in message, message


def test_identify_by_must_be_unique(data: dict) -> None:
    d = copy.deepcopy(data)
    fields = _entity(d, "customer")["fields"]
    name_field = next(f for f in fields if f["type"] == "name")
    fields.append({"name": "nickname", "type": "string", "nullable": True})
    d["users"] = [{"role": "customer", "entity": "customer", "identify_by": ["nickname"]}]
    with pytest.raises(BlueprintError, match=r"users\[0\]\.identify_by\[0\]: customer\.nickname is not unique"):
        from_dict(d, "shop.yaml")
    assert name_field
