"""Bounds a person would say: a search's "at most" and "at least" are round numbers its target row still passes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from envsynth.blueprint.spec import ParamSpec
from envsynth.testing.choose import draw_number, filter_value, round_bound

PASSES = {"gte": lambda x, b: x >= b, "gt": lambda x, b: x > b, "lte": lambda x, b: x <= b, "lt": lambda x, b: x < b}


@given(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False).map(lambda v: round(v, 2)), st.sampled_from(sorted(PASSES)))
def test_a_rounded_money_bound_still_keeps_the_row_and_has_no_cents(v: float, op: str) -> None:
    bound = round_bound(v, op)
    assert PASSES[op](v, bound), (v, op, bound)
    assert bound == int(bound) and isinstance(bound, float)  # "at most $65.00", never "$61.81"
    assert abs(bound - v) <= max(1.0, abs(v) * 0.1) + 100  # near the value it stands for


@given(st.integers(min_value=-100_000, max_value=100_000), st.sampled_from(sorted(PASSES)))
def test_a_rounded_count_bound_is_an_integer_that_keeps_the_row(v: int, op: str) -> None:
    bound = round_bound(v, op)
    assert isinstance(bound, int) and PASSES[op](v, bound)
    if abs(v) < 20 and op in ("gte", "lte"):
        assert bound == v  # "at least 8 seats" stays as it is


def test_round_steps_and_what_is_left_alone() -> None:
    assert round_bound(61.81, "lte") == 65.0 and round_bound(19.99, "lte") == 20.0
    assert round_bound(1288.37, "gte") == 1250.0 and round_bound(7.4, "gte") == 7.0 and round_bound(437, "lte") == 440
    assert round_bound(65.0, "lt") == 70.0 and round_bound(true := True, "lte") is true and round_bound("2026-03-01", "gte") == "2026-03-01"
    flt = SimpleNamespace(field="price", op="lte")
    assert filter_value(flt, {"price": 61.81}, None) == 65.0
    assert filter_value(SimpleNamespace(field="price", op="eq"), {"price": 61.81}, None) == 61.81


def test_no_catalogue_request_states_a_bound_with_cents(tmp_path: Path) -> None:
    from envsynth import catalog
    from envsynth.corpus import build_corpus

    out = tmp_path / "c"
    build_corpus(
        out,
        blueprints=[catalog.load("northwind_bank"), catalog.load("peak_fitness"), catalog.load("tempo_music")],
        tasks_per_app=40,
        distractors=2,
    )
    bounds = []
    for shard in out.glob("tasks/*/shard-*.jsonl"):
        for line in shard.read_text().splitlines():
            text = json.loads(line)["instruction"]
            for phrase in ("at most $", "at least $"):
                at = text.find(phrase)
                while at >= 0:
                    bounds.append(text[at : at + 24].split()[2].rstrip(".,?;"))
                    at = text.find(phrase, at + 1)
    assert bounds, "no request states a money bound"
    assert all(b.endswith(".00") for b in bounds), bounds


def test_a_drawn_amount_is_round_as_a_person_says_it() -> None:
    """A money argument the tester or a task draws is whole dollars ("move $25", not "$2.64"); another number a multiple
    of 0.5 ("2.5 hours"); integers are left as they were."""
    rng = random.Random(0)
    money = ParamSpec(name="amount", type="number", description="", minimum=0.01, semantic="money")
    hours = ParamSpec(name="hours", type="number", description="", minimum=0.5, maximum=8, semantic="float")
    amounts = [draw_number(money, rng) for _ in range(200)]
    assert all(a == int(a) and 1 <= a <= 20 for a in amounts)
    assert len(set(amounts)) >= 15
    assert all((2 * h) == int(2 * h) and 0.5 <= h <= 8 for h in (draw_number(hours, rng) for _ in range(200)))


@given(
    lo=st.floats(min_value=-1000, max_value=1000, allow_nan=False),
    width=st.floats(min_value=0, max_value=100, allow_nan=False),
    money=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_drawn_number_stays_within_its_bounds(lo: float, width: float, money: bool, seed: int) -> None:
    p = ParamSpec(name="x", type="number", description="", minimum=lo, maximum=lo + width, semantic="money" if money else "float")
    v = draw_number(p, random.Random(seed))
    assert lo - 0.005 <= v <= min(lo + width, lo + 40) + 0.005
