"""A staff request names the person a row belongs to once: "hand over the oldest order of fan X to the same fan", not
"... of fan X to fan X"; "offer the seats to fan X from the most recent waitlist place of that fan", not "... of fan X";
"close the seat hold of fan X" without "for fan X" after it."""

from __future__ import annotations

import re

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize

NAME = "encore_box_office"
FAN = re.compile(r"\bfan ([A-Z][a-z]+ [A-Z][a-z]+)")


def test_a_fan_a_row_belongs_to_is_named_once_in_a_staff_request() -> None:
    app = compile_app(catalog.load(NAME), 0)
    graph = build_graph(app)
    staff, back = 0, 0
    for t in range(50):
        made = synthesize(app, graph, app_index=catalog.names().index(NAME), task_index=t, states=1, depth=4)
        if isinstance(made, Rejection) or made[0].user.role == "fan":
            continue
        text = made[0].instruction
        staff += 1
        names = FAN.findall(text)
        assert len(names) == len(set(names)), text
        back += bool(re.search(r"\bof fan [A-Z].*\b(?:to|for) (?:that|the same) fan\b|\bof (?:that|the same) fan\b", text))
    assert staff >= 15
    assert back >= 3  # the case happens: a fan named as a row's owner, then referred back to
