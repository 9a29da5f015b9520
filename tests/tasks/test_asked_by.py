"""Who may ask (an action's ``asked_by``): a customer never approves their own return, staff never write a customer's review."""

from __future__ import annotations

from envsynth import catalog
from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize


def test_every_task_comes_from_someone_who_may_ask_for_all_of_it(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    graph = build_graph(app.specs)
    bp = app.blueprint
    role_of_words = {u.called or u.role.replace("_", " "): u.role for u in bp.users}
    restricted = {a.name: set(a.asked_by) for a in bp.actions if a.asked_by}
    seen: dict[str, set[str]] = {}
    for index in range(40):
        out = synthesize(app, graph, app_index=catalog.names().index("harbor_market"), task_index=index, states=1, depth=0)
        if isinstance(out, Rejection):
            continue
        task = out[0]
        role = role_of_words.get(task.user.role)
        for call in task.oracle:
            if call.tool in restricted:
                assert role in restricted[call.tool], (task.user.role, call.tool, task.instruction)
                seen.setdefault(call.tool, set()).add(role or "")
    assert {"approve_return", "add_product"} & set(seen) and "write_review" in seen  # both kinds were planned, each by its own
    assert seen["write_review"] == {"customer"}
