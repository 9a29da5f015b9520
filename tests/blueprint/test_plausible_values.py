"""Values a person would read without wincing: names without titles, no filler text in the catalogue."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from envsynth import catalog
from envsynth.blueprint.values import ValueMaker, email_names
from envsynth.compiler.compile import compile_app
from envsynth.runtime.sampledata import StateBuilder

TITLES = re.compile(r"^(Mr|Mrs|Ms|Miss|Dr|Prof)\.?\s|\s(MD|DDS|DVM|PhD|Jr|Sr|II|III|IV|V)\.?$")


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_person_names_carry_no_title_or_suffix(seed: int) -> None:
    maker = ValueMaker(catalog.load("harbor_market"), seed)
    for _ in range(20):
        name = maker.person_name()
        assert not TITLES.search(name) and len(name.split()) == 2, name


def test_email_names_and_name_fields_of_every_catalogue_app_have_no_titles() -> None:
    assert not [n for n in email_names() if TITLES.search(n)]
    for app_name in catalog.names():
        bp = catalog.load(app_name)
        app = compile_app(bp, 0)
        rows = StateBuilder(bp, 3, app.order).fill()
        for entity in bp.entities:
            names = [f.name for f in entity.fields if f.type == "name" or (f.gen is not None and f.gen.faker == "name")]
            for row in rows.get(entity.name, []):
                for field in names:
                    assert not (isinstance(row[field], str) and TITLES.search(row[field])), (app_name, entity.name, row[field])


def test_no_catalogue_field_draws_filler_text() -> None:
    filler = {"sentence", "paragraph", "text", "catch_phrase", "bs", "word", "words", "paragraphs", "sentences"}
    found = []
    for app_name in catalog.names():
        for entity in catalog.load(app_name).entities:
            for f in entity.fields:
                if f.gen is not None and f.gen.faker in filler:
                    found.append(f"{app_name}.{entity.name}.{f.name}: faker {f.gen.faker}")
    assert not found, found
