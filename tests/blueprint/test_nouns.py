"""English words from names: one plural for every text envsynth derives (blueprint/nouns.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envsynth.blueprint.nouns import IRREGULAR, UNCOUNTABLE, plural, row_noun, words


@pytest.mark.parametrize(
    ("noun", "many"),
    [
        ("order", "orders"),
        ("category", "categories"),
        ("entry", "entries"),
        ("day", "days"),
        ("status", "statuses"),
        ("address", "addresses"),
        ("box", "boxes"),
        ("match", "matches"),
        ("wish", "wishes"),
        ("quiz", "quizzes"),
        ("person", "people"),
        ("child", "children"),
        ("analysis", "analyses"),
        ("equipment", "equipment"),
        ("inventory", "inventory"),
        ("information", "information"),
        ("staff", "staff"),
        ("data", "data"),
        ("idea", "ideas"),
        ("menu", "menus"),
        ("gift card", "gift cards"),
        ("inventory item", "inventory items"),
        ("song on a playlist", "songs on a playlist"),
        ("piece of equipment", "pieces of equipment"),
        ("Person", "People"),
        ("settings", "settings"),
    ],
)
def test_english_plurals(noun: str, many: str) -> None:
    assert plural(noun) == many


@pytest.mark.parametrize(
    ("table", "noun"),
    [
        ("customer_order", "customer order"),
        ("inventory", "inventory item"),
        ("support_staff", "support staff member"),
        ("gym_equipment", "piece of gym equipment"),
        ("data", "data record"),
        ("category", "category"),
    ],
)
def test_the_noun_of_a_row_is_countable(table: str, noun: str) -> None:
    assert row_noun(table) == noun


def test_names_become_words() -> None:
    assert words("unit_price") == "unit price"
    assert words("a__b_") == "a b"


_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True)
_WORDS = st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzAEIOUY _-'0123456789"), min_size=1, max_size=30)


@given(_WORDS)
def test_plural_never_crashes_and_is_never_empty(noun: str) -> None:
    many = plural(noun)
    assert isinstance(many, str)
    assert many.strip() or not noun.strip()


@given(_NAMES)
def test_labels_are_idempotent(name: str) -> None:
    assert words(words(name)) == words(name)
    assert row_noun(words(name)) == row_noun(name)
    assert row_noun(row_noun(name)) == row_noun(name)
    assert plural(row_noun(name)).strip()


@given(st.sampled_from(sorted(UNCOUNTABLE)), st.sampled_from(["", "old ", "spare "]))
def test_an_uncountable_noun_has_no_plural_but_its_row_has(noun: str, before: str) -> None:
    assert plural(before + noun) == before + noun
    one = row_noun((before + noun).replace(" ", "_"))
    assert plural(one) != one


@given(st.from_regex(r"[a-z]{2,12}", fullmatch=True))
def test_a_plural_stays_plural(word: str) -> None:
    many = plural(word)
    # "menus" looks like "status", "gas" like the plural of "ga" and "-sis" like "basis": only the known ones are listed
    assert plural(many) == many or word.endswith(("u", "si")) or many in IRREGULAR
