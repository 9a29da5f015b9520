"""Distractors never repeat a composite unique key (docs/blueprints.md 11.7): a near-duplicate of a row
that copies every field of a key but one it changes would otherwise break the key's UNIQUE constraint."""

from __future__ import annotations

from pathlib import Path

from envsynth.blueprint.load import load_blueprint
from envsynth.compiler.compile import compile_app
from envsynth.runtime.state import StateBuilder, rows_to_bytes_fast
from envsynth.tasks.building.distractors import add_distractors
from envsynth.tasks.state import merged

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "examples" / "correlated_data.yaml"


def test_near_duplicates_of_a_flight_keep_its_number_and_day_key_unique() -> None:
    app = compile_app(load_blueprint(EXAMPLE))
    for seed in range(12):
        core = StateBuilder(app.blueprint, seed, app.order).fill({"flight": 3})
        targets = [("flight", r["flight_id"]) for r in core["flight"]]
        extra, _ = add_distractors(app.blueprint, app.order, core, targets, depth=3, seed=seed)
        rows = merged(core, extra)
        keys = [(r["flight_number"], r["day"]) for r in rows["flight"]]
        assert len(keys) == len(set(keys)), (seed, keys)
        rows_to_bytes_fast(app.schema, app.order, rows)  # the schema's UNIQUE ("flight_number", "day") holds


def test_a_row_drawn_with_a_given_derived_field_keeps_it() -> None:
    """A near-duplicate copies its target's derived fields (an arrival drawn after the departure): the builder
    takes them as given instead of leaving them out of the row (NOT NULL failures in the task state)."""
    app = compile_app(load_blueprint(EXAMPLE))
    b = StateBuilder(app.blueprint, 0, app.order)
    given = {"day": "2026-03-18", "destination": "ITO", "departure_at": "2026-03-18T16:20:00", "arrival_at": "2026-03-18T17:55:00"}
    row = b.add(app.blueprint.entity("flight"), given)
    assert row is not None and {k: row.get(k) for k in given} == given
