"""Write tool coverage (issue 11): causes that kept catalogue write tools out of every admitted task.

Each test synthesizes the catalogue task index (seed 0, S=2, D=4) whose chain starts with the
write tool in question, as ``envsynth build -T 40 -S 2 -D 4 --seed 0`` does, and checks that
it is admitted with that tool in its oracle.
"""

from __future__ import annotations

from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, instantiate, synthesize

APP_INDEX = {"northstar_air": 0, "peak_fitness": 2, "relay_chat": 3, "circle_social": 8, "brightline_utilities": 9}
"""The catalogue apps' indexes in a corpus (the order ``envsynth build`` gives them)."""


def _admitted(built: dict[str, BuiltApp], name: str, task_index: int) -> tuple[App, list[Task]]:
    app = built[name].app
    out = synthesize(app, build_graph(app.specs), app_index=APP_INDEX[name], task_index=task_index, states=2, depth=4, seed=0)
    assert not isinstance(out, Rejection), out
    return app, out


def _tools(task: Task) -> list[str]:
    return [c.tool for c in task.oracle]


def test_a_goal_stops_before_a_write_its_earlier_steps_rule_out(built_catalog: dict[str, BuiltApp]) -> None:
    """set_goal then mark_goal_achieved: a goal just set has no progress to mark achieved. The chain was rejected
    (not_instantiable); the task now asks for the goal alone. Likewise suspend (needs an overdue bill) then close
    (needs none)."""
    for name, t, kept, dropped in (
        ("peak_fitness", 31, "set_goal", "mark_goal_achieved"),
        ("brightline_utilities", 10, "suspend_service_account", "close_service_account"),
    ):
        _, tasks = _admitted(built_catalog, name, t)
        for task in tasks:
            assert kept in _tools(task) and dropped not in _tools(task)
            assert task.oracle[-1].tool == kept


def test_a_step_a_policy_rule_governs_is_solved_so_the_policy_allows_it(built_catalog: dict[str, BuiltApp]) -> None:
    """cancel_reservation: the refundable_cancellation rule forbade the oracle's cancellation in every state the
    solver drew (policy_forbids_oracle); the rule's condition is now solved with the tool's pre-conditions."""
    app, tasks = _admitted(built_catalog, "northstar_air", 41)
    assert [c.id for c in instantiate.allowed_pre(app, "cancel_reservation")][-1] == "policy:refundable_cancellation"
    for task in tasks:
        assert "cancel_reservation" in _tools(task)
        assert task.policy is None or task.policy.rule == "refundable_cancellation"


def test_a_row_the_requesters_own_row_refers_to_is_found_through_it(built_catalog: dict[str, BuiltApp]) -> None:
    """join_channel: the channel is named with its workspace, and no tool finds a workspace; the requester's user
    row (found by email) holds the workspace's id, so the request is solvable."""
    _, tasks = _admitted(built_catalog, "relay_chat", 7)
    for task in tasks:
        assert "join_channel" in _tools(task)
        assert "find_user_by_email" in task.visible_tools


def test_a_new_channel_has_its_creator_as_a_member(built_catalog: dict[str, BuiltApp]) -> None:
    """The workflow create_channel -> post_message -> pin_message: posting needs a membership of the new channel,
    which nothing made (a needed channel_membership row refers to a row the chain creates)."""
    _, tasks = _admitted(built_catalog, "relay_chat", 3)
    for task in tasks:
        assert _tools(task)[1:4] == ["create_channel", "post_message", "pin_message"]


def test_a_reaction_to_take_back_can_be_found(built_catalog: dict[str, BuiltApp]) -> None:
    """remove_reaction (relay and circle) takes a reaction id no read tool returned (not_solvable)."""
    for name, t in (("relay_chat", 21), ("circle_social", 15)):
        _, tasks = _admitted(built_catalog, name, t)
        for task in tasks:
            assert "remove_reaction" in _tools(task) and "list_reactions" in task.visible_tools
