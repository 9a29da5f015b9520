"""A list-of-ids parameter is not an id input one earlier result can fill: no data edge and no chain pin into it."""

from __future__ import annotations

from pathlib import Path

from envsynth import build_app, load_blueprint
from envsynth.graph import build_graph

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "list_effects.yaml"


def test_no_data_edge_fills_a_list_of_ids(tmp_path: Path) -> None:
    app = build_app(load_blueprint(EXAMPLE), tmp_path / "skyhop").app
    g = build_graph(app)
    into_lists = [(s, t, d) for s, t, _, d in g.edges("data", target="book_reservation") if d.get("param") == "flight_ids"]
    assert into_lists == []
    assert g.has_edge("find_customer", "book_reservation", kind="data", param="customer_id")


def test_no_chain_step_fills_a_list_of_ids_from_one_row(tmp_path: Path) -> None:
    import random

    from envsynth import catalog
    from envsynth.tasks import synth
    from envsynth.tasks.planning.chain import plan_chain

    app = build_app(catalog.load("northstar_air"), tmp_path / "air").app  # schedule_flight -> book_reservation(flight_ids)
    g = build_graph(app)
    lists = {(s.name, p.name) for s in app.specs for p in s.params if p.type == "array"}
    into_lists = []
    for slot in range(60):
        rng = random.Random(slot)
        for kind, _ in synth.KINDS:
            for step in plan_chain(app, g, rng, kind, slot=slot) or []:
                into_lists += [(step.spec.name, p) for p in [*step.refs, *step.pins] if (step.spec.name, p) in lists]
    assert into_lists == []


def test_tools_whose_lists_name_rows_only_start_chains(tmp_path: Path) -> None:
    """A request names each row of a list ("book flights NS101 and NS204 for Kim Lee"): such a tool starts a chain,
    where the request names every row it lists, and never follows an earlier step (whose rows a list could not name)."""
    import random

    from envsynth import catalog
    from envsynth.tasks import synth
    from envsynth.tasks.planning.chain import plan_chain

    app = build_app(catalog.load("northstar_air"), tmp_path / "air").app
    g = build_graph(app)
    planned, later = set(), set()
    for slot in range(120):
        rng = random.Random(slot)
        for kind, _ in synth.KINDS:
            steps = plan_chain(app, g, rng, kind, slot=slot) or []
            planned |= {step.spec.name for step in steps}
            later |= {step.spec.name for step in steps[1:]}
    assert "book_reservation" in planned and "book_reservation" not in later
    assert {"cancel_reservation", "add_checked_bags", "change_to_business"} <= planned
