"""Write tool coverage (issue 11): causes that kept catalogue write tools out of every admitted task.

Each test synthesizes the first catalogue task indexes (seed 0, S=2, D=4) whose chain starts with
the write tool in question, as ``envsynth build -T 40 -S 2 -D 4 --seed 0`` does, and checks that
one is admitted with that tool in its oracle.
"""

from __future__ import annotations

import random
import re

from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.building import instantiate
from envsynth.tasks.building.world import STEP_ATTEMPTS, WORLD_ROWS, value_pool, world_tables
from envsynth.tasks.planning.chain import plan_workflow
from envsynth.tasks.planning.plan import plan_task
from envsynth.tasks.wording.roles import chain_roles

APP_INDEX = {
    "northstar_air": 0,
    "northwind_bank": 1,
    "peak_fitness": 2,
    "relay_chat": 3,
    "tempo_music": 4,
    "taskboard": 5,
    "juniper_goods": 6,
    "harbor_market": 7,
    "circle_social": 8,
    "brightline_utilities": 9,
}
"""The catalogue apps' indexes in a corpus (the order ``envsynth build`` gives them)."""


def _admitted(built: dict[str, BuiltApp], name: str, tool: str, then: str | None = None, tries: int = 3) -> tuple[App, list[Task]]:
    """The first admitted task among the first ``tries`` task indexes whose planned chain starts with ``tool``
    (and has ``then`` among its steps): the tasks a corpus would try for that tool."""
    app = built[name].app
    graph = build_graph(app.specs)
    out: list[Task] | Rejection | None = None
    for t in range(400):
        plan = plan_task(app, graph, app_index=APP_INDEX[name], task_index=t, depth=4, seed=0)
        steps = [] if isinstance(plan, Rejection) else [st.spec.name for st in plan.steps]
        if not steps or steps[0] != tool or (then is not None and then not in steps):
            continue
        out = synthesize(app, graph, app_index=APP_INDEX[name], task_index=t, states=2, depth=4, seed=0)
        if not isinstance(out, Rejection):
            return app, out
        tries -= 1
        if not tries:
            break
    raise AssertionError(f"no {tool} task admitted: {out}")


def _tools(task: Task) -> list[str]:
    return [c.tool for c in task.oracle]


def test_a_goal_stops_before_a_write_its_earlier_steps_rule_out(built_catalog: dict[str, BuiltApp]) -> None:
    """set_goal then mark_goal_achieved: a goal just set has no progress to mark achieved. The chain was rejected
    (not_instantiable); the task now asks for the goal alone. Likewise suspend (needs an overdue bill) then close
    (needs none)."""
    for name, kept, dropped in (
        ("peak_fitness", "set_goal", "mark_goal_achieved"),
        ("brightline_utilities", "suspend_service_account", "close_service_account"),
    ):
        _, tasks = _admitted(built_catalog, name, kept, then=dropped, tries=3)  # (a candidate a guess would pass is refused)
        app = built_catalog[name].app
        for task in tasks:
            assert kept in _tools(task) and dropped not in _tools(task)
            assert [c.tool for c in task.oracle if app.spec_by_name[c.tool].mode == "write"][-1] == kept


def test_a_step_a_policy_rule_governs_is_solved_so_the_policy_allows_it(built_catalog: dict[str, BuiltApp]) -> None:
    """cancel_reservation: the refundable_cancellation rule forbade the oracle's cancellation in every state the
    solver drew (policy_forbids_oracle); the rule's condition is now solved with the tool's pre-conditions."""
    app, tasks = _admitted(built_catalog, "northstar_air", "cancel_reservation", tries=8)  # (coherent dates make fewer fit)
    assert [c.id for c in instantiate.allowed_pre(app, "cancel_reservation")][-1] == "policy:refundable_cancellation"
    for task in tasks:
        assert "cancel_reservation" in _tools(task)
        assert task.policy is not None and (task.policy.refusal or task.policy.rule == "refundable_cancellation")


def test_a_new_channel_has_its_creator_as_a_member(built_catalog: dict[str, BuiltApp]) -> None:
    """The workflow create_channel -> post_message: posting needs a membership of the new channel, which nothing made
    (a needed channel_membership row refers to a row the chain creates). The creator is its first member now."""
    app = built_catalog["relay_chat"].app
    graph = build_graph(app.specs)
    made = 0
    for seed in range(12):  # the solver may pick another author, who is no member: some seeds fail, never all
        steps = plan_workflow(app, graph, random.Random(seed), "action", ["create_channel", "post_message"])
        assert steps is not None
        world = StateBuilder(app.blueprint, seed, app.order).use_pool(value_pool(app))
        world = world.fill(dict.fromkeys(world_tables(app, steps), WORLD_ROWS))
        try:
            _, calls, _ = instantiate.instantiate(app, steps, world, seed, attempts=STEP_ATTEMPTS, pool=value_pool(app))
        except instantiate.ChainFailed:
            continue
        assert [c.tool for c in calls] == ["create_channel", "post_message"]
        assert calls[1].refs["channel_id"].step == 0  # posted in the channel the request made
        made += 1
    assert made


def test_a_reaction_to_take_back_can_be_found(built_catalog: dict[str, BuiltApp]) -> None:
    """remove_reaction (relay and circle) takes a reaction id no read tool returned (not_solvable)."""
    for name in ("relay_chat", "circle_social"):
        _, tasks = _admitted(built_catalog, name, "remove_reaction")
        for task in tasks:
            assert "remove_reaction" in _tools(task) and "list_reactions" in task.visible_tools


def test_a_write_whose_list_names_rows_starts_a_task(built_catalog: dict[str, BuiltApp]) -> None:
    """book_reservation (a list of flights, a list of passengers) and return_order_items (a list of order lines)
    were never planned; the request names every row of the list and says every list item in words."""
    _, tasks = _admitted(built_catalog, "juniper_goods", "return_order_items")
    for task in tasks:
        call = next(c for c in task.oracle if c.tool == "return_order_items")
        assert len(call.args["line_ids"]) == 2 and task.instruction.count("the item bought for") >= 2
    _, tasks = _admitted(built_catalog, "northstar_air", "book_reservation")
    for task in tasks:
        call = next(c for c in task.oracle if c.tool == "book_reservation")
        first, *_, last = call.args["passengers"]
        assert f"{first['full_name']} (birth date " in task.instruction and f" and {last['full_name']} (birth date " in task.instruction
        assert "{" not in task.instruction


def test_handing_over_open_tasks_is_asked_of_a_member_who_has_some(built_catalog: dict[str, BuiltApp]) -> None:
    """reassign_open_tasks changed nothing when the member had no unfinished task (no_effect); the tool now
    refuses that, so the solver gives the member one."""
    _, tasks = _admitted(built_catalog, "taskboard", "reassign_open_tasks", tries=1)
    for task in tasks:
        assert task.expected_effects and task.oracle[-1].tool == "reassign_open_tasks"


def test_a_person_signing_up_gives_their_own_email_in_their_words(built_catalog: dict[str, BuiltApp]) -> None:
    """A registration drew the email apart from the name ("I'm Rebecca Williams ... email jon.case18@...") and was
    said in derived words ("register a customer with full name ..."), not the action's first-person phrase."""
    for name, tool, words in (
        ("brightline_utilities", "register_customer", "register me as a new"),
        ("harbor_market", "register_customer", "open an account for me"),
    ):
        _, tasks = _admitted(built_catalog, name, tool)
        for task in tasks:
            args = next(c.args for c in task.oracle if c.tool == tool)
            local = args["email"].split("@")[0]
            assert all(word in local for word in re.findall("[a-z]+", args["full_name"].lower())), args
            assert words in task.instruction


def test_a_chain_keeps_to_the_actions_one_role_asks_for(built_catalog: dict[str, BuiltApp]) -> None:
    """harbor's add_product was followed by write_review, so a customer added a product to the catalogue, or a store
    associate wrote a customer's review; circle's ban_member was asked for by the member banned."""
    for name in ("harbor_market", "circle_social"):
        app = built_catalog[name].app
        graph = build_graph(app.specs)
        for t in range(60):
            plan = plan_task(app, graph, app_index=APP_INDEX[name], task_index=t, depth=4, seed=0)
            if not isinstance(plan, Rejection):
                assert chain_roles(app.blueprint, [st.spec.name for st in plan.steps]) != frozenset(), (t, plan.steps)
    _, tasks = _admitted(built_catalog, "harbor_market", "add_product")
    for task in tasks:  # (a later goal of the same request may be a customer's, whom the associate then helps)
        assert task.user.role == "store associate" and ("helping" not in task.instruction or task.stats.get("goals", 1) > 1)


def test_moderators_ban_members_and_labels_come_off_tasks_in_words(built_catalog: dict[str, BuiltApp]) -> None:
    """ "Could you ban my community membership as member?" (the member asking) and "remove the task label of the
    label "bug"" now read as a moderator's and a member's requests."""
    _, tasks = _admitted(built_catalog, "circle_social", "ban_member")
    for task in tasks:
        assert task.user.role == "Circle moderator"
        assert re.search(r'ban the member "[^"]+" from the community', task.instruction), task.instruction
    _, tasks = _admitted(built_catalog, "taskboard", "remove_label_from_task")
    for task in tasks:
        assert re.search(r'take the label "[^"]+" off the task "[^"]+"', task.instruction, re.IGNORECASE), task.instruction


def test_no_question_follows_up_on_a_row_the_request_deleted(built_catalog: dict[str, BuiltApp]) -> None:
    """delete_draft, then "how many reports does that post have?": nothing is left of the post to ask about (the task
    was rejected as answer_in_question). The draft's deletion is its goal; a later goal is about other rows."""
    _, tasks = _admitted(built_catalog, "circle_social", "delete_draft", tries=1)
    for task in tasks:
        at = _tools(task).index("delete_draft")
        deleted = task.oracle[at].refs["post_id"]
        later = task.oracle[at + 1 :]
        assert all(ref != deleted for c in later for ref in c.refs.values()), _tools(task)
        assert all("post_id" not in c.args and c.tool not in ("get_post", "search_posts") for c in later), _tools(task)


def test_staff_actions_are_asked_for_by_staff(built_catalog: dict[str, BuiltApp]) -> None:
    """A customer approved their own loan, a listener suspended their own account, a member deactivated a teammate:
    the catalogue now says who asks for these (asked_by)."""
    for name, tool, role in (
        ("northwind_bank", "approve_loan", "bank officer"),
        ("tempo_music", "suspend_listener", "Tempo support agent"),
        ("taskboard", "deactivate_member", "Taskboard admin"),
    ):
        _, tasks = _admitted(built_catalog, name, tool)
        assert all(task.user.role == role for task in tasks), (tool, [t.user.role for t in tasks])
