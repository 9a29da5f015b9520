"""Near-duplicates (distractor depth 3) obey the rules of the rows they copy (docs/tasks.md 7, "State coherence"): a copy
of a scheduled flight changed to landed departs before the clock (``past_when``), and a copy of a member's active
membership is not added as a second active one (``at_most_one``). Before, the copy kept its target's date and a second
active membership, and admission had to refuse those states."""

from __future__ import annotations

from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.distractors import add_distractors
from envsynth.tasks.state import merged


@cache
def _app(name: str) -> App:
    return compile_app(catalog.load(name), 0)


def test_a_near_duplicate_flight_in_another_state_is_on_its_side_of_the_clock() -> None:
    app = _app("northstar_air")
    clock = app.blueprint.reference_date
    finished = 0
    for seed in range(30):
        core = StateBuilder(app.blueprint, seed, app.order).fill()
        targets = [("flight", r["flight_id"]) for r in core["flight"] if r["status"] in ("scheduled", "delayed")][:3]
        extra, _ = add_distractors(app.blueprint, app.order, core, targets, depth=3, seed=seed)
        for r in extra.get("flight", []):
            if r["status"] in ("departed", "landed"):
                finished += 1
                assert r["departure_date"] < clock, r
            elif r["status"] in ("scheduled", "delayed"):
                assert r["departure_date"] >= clock, r
    assert finished >= 5  # the case happens: copies of scheduled flights changed to landed or departed


def test_a_near_duplicate_never_makes_a_second_active_membership() -> None:
    app = _app("peak_fitness")
    copies = 0
    for seed in range(30):
        core = StateBuilder(app.blueprint, seed, app.order).fill()
        targets = [("membership", r["membership_id"]) for r in core["membership"]][:4]
        extra, _ = add_distractors(app.blueprint, app.order, core, targets, depth=3, seed=seed)
        copies += len(extra.get("membership", []))
        active = [r["member_id"] for r in merged(core, extra)["membership"] if r["status"] == "active"]
        assert len(active) == len(set(active)), seed
    assert copies >= 30
