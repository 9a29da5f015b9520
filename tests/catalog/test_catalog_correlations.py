"""Every catalogue app's sample state honours its correlated generators and composite keys
(docs/blueprints.md 11.7), as does the example of that section."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from envsynth import catalog, load_blueprint
from envsynth.blueprint.correlate import derived_order, holds
from envsynth.compiler.compile import sample_state
from envsynth.runtime.state import open_state, read_rows

EXAMPLE = Path(__file__).parents[1] / "data" / "examples" / "correlated_data.yaml"


@pytest.mark.parametrize("name", [*catalog.names(), str(EXAMPLE)])
def test_sample_state_honours_correlations_and_keys(name: str) -> None:
    bp = load_blueprint(name) if name.endswith(".yaml") else catalog.load(name)
    with contextlib.closing(open_state(sample_state(bp, 0))) as conn:
        rows = read_rows(conn, bp)
    for ent in bp.entities:
        for f in derived_order(ent):
            bad = [r[ent.id_field] for r in rows[ent.name] if not holds(f, r)]
            assert not bad, f"{ent.name}.{f.name} breaks its generator in rows {bad[:3]}"
        for key in ent.unique:
            values = [tuple(r[k] for k in key) for r in rows[ent.name] if None not in (r[k] for k in key)]
            assert len(values) == len(set(values)), f"{ent.name}: rows share {key}"
