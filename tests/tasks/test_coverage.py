"""Tool coverage: reads that follow up on the row a request acted on, lookups of described rows."""

from __future__ import annotations

import random
from typing import Any

from envsynth import catalog
from envsynth.agents.oracle_code import oracle_code as oracle_code_program
from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.answerpath import answer_expr, answer_in, group_field, has_answer
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.planning.chain import _reads_of, _tools, plan_chain
from envsynth.tasks.planning.plan import kind_and_turn, plan_task


def _tasks(app: App, app_index: int, task_index: int) -> list[Task]:
    out = synthesize(app, build_graph(app.specs), app_index=app_index, task_index=task_index, states=2, depth=4)
    assert not isinstance(out, Rejection), out
    return out


def _first_where(app: App, app_index: int, wanted: Any) -> list[Task]:
    """The tasks of the first admitted task index (depth 4) whose plan ``wanted(plan)`` accepts, synthesized at S=2
    (one a guessing baseline would solve is refused: the next such index is taken)."""
    graph = build_graph(app.specs)
    for t in range(400):
        plan = plan_task(app, graph, app_index=app_index, task_index=t, depth=4, seed=0)
        if not isinstance(plan, Rejection) and wanted(plan):
            out = synthesize(app, graph, app_index=app_index, task_index=t, states=2, depth=4)
            if isinstance(out, Rejection) and out.reason in (
                "guessable",
                "target_not_describable",
                "policy_forbids_oracle",
                "empty_answer",
            ):
                continue  # (a guess would pass it; a row named by comparison found no words in this state; the app's policy;
                # a total over the lines of an order its state gave none)
            assert not isinstance(out, Rejection), out
            return out
    raise AssertionError("no such task index")


def _source(call: Any, param: str) -> Any:
    """Where a call's argument comes from: its literal value, or (step, field, item) of the result it is taken from."""
    ref = call.refs.get(param)
    return (ref.step, ref.field, ref.item) if ref is not None else call.args.get(param)


def test_a_chain_can_end_with_a_count_over_the_row_it_acted_on(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["northwind_bank"].app
    follow = {(s.name, how, param) for s, how, param, _ in _reads_of(app, app.spec_by_name["lock_card"])}
    assert ("search_card_transactions", "pin", "card_id") in follow


def test_the_follow_up_count_names_the_same_row_in_every_state(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["northwind_bank"].app

    def lock_then_count(plan: Any) -> bool:
        tools = [s.spec.name for s in plan.steps]
        return plan.kind == "mixed" and tools[0] == "lock_card" and tools[-1] == "search_card_transactions"

    for task in _first_where(app, 1, lock_then_count):  # lock a card, ..., then "how many charges does that card have?"
        last = task.oracle[task.answer_step or 0]
        lock = next(c for c in task.oracle if c.tool == "lock_card")
        assert last.tool == "search_card_transactions"
        assert _source(last, "card_id") == _source(lock, "card_id")  # the card the request acted on, remapped with it
        assert set(last.args) | set(last.refs) == {"card_id", "limit", "offset"}  # no filter the user never asked for
        assert "charges does that card have?" in task.instruction or "charges does the same card have?" in task.instruction


def test_a_row_named_by_a_unique_value_is_looked_up_by_it_first(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    for task in _first_where(app, 7, lambda plan: plan.steps[0].spec.name == "apply_coupon"):  # "apply the coupon "HARBOR34" ..."
        apply = next(c for c in task.oracle if c.tool == "apply_coupon")
        lookup = task.oracle[apply.refs["coupon_id"].step]
        assert lookup.tool == "get_coupon_by_code" and lookup.args["code"] in task.instruction
        assert "coupon_id" not in apply.args and apply.refs["coupon_id"].field == "coupon_id"
        assert task.oracle.index(lookup) < task.oracle.index(apply) and "get_coupon_by_code" in task.visible_tools


def test_information_tasks_first_go_round_the_reads_no_mixed_task_ends_with(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["taskboard"].app
    graph = build_graph(app.specs)
    writes = [s for s in app.specs if s.mode == "write"]
    followed = {g.name for w in writes for g, _, _, _ in _reads_of(app, w)}
    acted_on = {p.ref for w in writes for p in w.params if p.ref}
    finds = {s.name for s in _tools(app).reads if s.kind == "search" and s.query and s.query.entity in acted_on}  # the oracle's lookups
    others = [s.name for s in _tools(app).reads if s.name not in followed | finds]  # what information tasks start with first
    first = []
    for slot in range(len(others)):
        steps = plan_chain(app, graph, random.Random(slot), "info", slot=slot)
        assert steps is not None
        first.append(steps[0].spec.name)
    assert first and not set(first) & followed  # a get by id that mixed tasks end with comes later in the round
    assert len(set(first)) == len(first)


def test_a_total_whose_field_says_total_is_not_said_twice(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    # cancel my order ...; what is the line total of the items of that order now?
    for task in _first_where(
        app, catalog.names().index("harbor_market"), lambda plan: len(plan.steps) > 1 and plan.steps[-1].spec.name == "order_total"
    ):
        assert task.oracle[-1].tool == "order_total"
        assert "total line total" not in task.instruction and "line total of the items of" in task.instruction


def test_a_mixed_task_whose_write_no_read_follows_up_is_planned_as_an_action(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["peak_fitness"].app
    graph = build_graph(app.specs)
    fallen = []
    for t in range(60):
        kind, _ = kind_and_turn(0, 2, t)
        plan = plan_task(app, graph, app_index=2, task_index=t, depth=0, seed=0)
        assert not isinstance(plan, Rejection) or plan.reason != "no_chain", t
        if kind == "mixed" and plan.kind == "action":
            fallen.append(plan)
    assert fallen
    assert all(all(s.spec.mode == "write" for s in p.steps) for p in fallen)


def test_a_grouped_count_answers_with_one_groups_value(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    asks = lambda plan: plan.kind == "info" and plan.steps[-1].spec.name == "count_orders_by_status"  # noqa: E731
    for task in _first_where(app, 7, asks):  # "How many orders are there that are paid?" (the status is the task's own)
        last = task.oracle[task.answer_step or 0]
        assert last.tool == "count_orders_by_status"
        status = next(s for s in ("pending", "paid", "shipped", "delivered", "cancelled") if task.answer_field == group_field("status", s))
        assert "orders" in task.instruction and status in task.instruction and "each" not in task.instruction
        namespace: dict[str, Any] = {}
        exec(task.oracle_program, namespace)  # the program reads the group's value from the result
        other = "pending" if status != "pending" else "paid"
        result = {"groups": [{"status": other, "value": 7}, {"status": status, "value": task.expected_answer}]}
        assert namespace["solve"](type("Env", (), {"call": staticmethod(lambda name, args, r=result: r)})) == task.expected_answer
        code = oracle_code_program(task)
        assert "next(g['value'] for g in r" in code and f"if g['status'] == {status!r}" in code


def test_an_answer_path_reads_a_field_or_a_group() -> None:
    grouped = {"groups": [{"currency": "USD", "value": 10.5}, {"currency": "EUR", "value": 3.0}]}
    assert answer_in(grouped, group_field("currency", "EUR")) == 3.0
    assert answer_in(grouped, group_field("currency", "GBP")) is None and not has_answer(grouped, group_field("currency", "GBP"))
    assert answer_in({"total": 4}, "total") == 4 and has_answer({"total": 4}, "total")
    assert eval(answer_expr("r0", group_field("currency", "USD")), {"r0": grouped}) == 10.5  # the line the code oracle runs


def test_now_is_said_only_when_the_request_changes_the_rows_it_counts(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["tempo_music"].app
    graph = build_graph(app.specs)
    found = 0
    for t in range(60):  # e.g. register, follow an artist, then "how many concerts does that artist have?"
        out = synthesize(app, graph, app_index=4, task_index=t, states=2, depth=4)
        if isinstance(out, Rejection) or out[0].kind != "mixed":
            continue
        last = app.spec_by_name[out[0].oracle[-1].tool]
        if last.query is None or last.query.op != "search":
            continue
        if any(app.spec_by_name[c.tool].writes.get(last.query.entity) for c in out[0].oracle[:-1]):
            continue  # the request changes the rows it counts: "now" may be said
        found += 1
        for task in out:
            assert "?" in task.instruction and " now?" not in task.instruction  # (a sign-off may follow the question)
    assert found
