"""Planning never takes back what the same request made: no step ends, closes or leaves a row an earlier step created."""

from __future__ import annotations

import random

from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.tasks.planning.chain import _tools, plan_chain, undoes


def test_a_joined_community_is_never_left_in_the_same_request(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["circle_social"].app
    graph = build_graph(app.specs)
    join = [s.name for s in _tools(app).writes].index("join_community")  # the slot whose chains start with it
    seen_join_chains = 0
    for seed in range(120):
        steps = plan_chain(app, graph, random.Random(seed), "action", slot=join)
        if not steps or steps[0].spec.name != "join_community":
            continue
        seen_join_chains += len(steps) > 1
        for step in steps[1:]:
            takes_made_row = any(ref.step == 0 and ref.field == "membership_id" for ref in step.refs.values())
            assert not (takes_made_row and step.spec.name == "leave_community"), [s.spec.name for s in steps]
    assert undoes(app.spec_by_name["leave_community"], made=True)  # leaving ends the membership the request made
    assert not undoes(app.spec_by_name["leave_community"])  # ... but may follow a step on a membership of before
