"""Tool coverage: reads that follow up on the row a request acted on, lookups of described rows."""

from __future__ import annotations

import random
from typing import Any

from envsynth.agents.oracle_code import oracle_code as oracle_code_program
from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.answerpath import answer_expr, answer_in, group_field, has_answer
from envsynth.tasks.chain import _reads_of, _tools, plan_chain
from envsynth.tasks.plan import kind_and_turn, plan_task


def _tasks(app: App, app_index: int, task_index: int) -> list[Task]:
    out = synthesize(app, build_graph(app.specs), app_index=app_index, task_index=task_index, states=2, depth=4)
    assert not isinstance(out, Rejection), out
    return out


def test_a_chain_can_end_with_a_count_over_the_row_it_acted_on(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["northwind_bank"].app
    follow = {(s.name, how, param) for s, how, param, _ in _reads_of(app, app.spec_by_name["lock_card"])}
    assert ("search_card_transactions", "pin", "card_id") in follow


def test_the_follow_up_count_names_the_same_row_in_every_state(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["northwind_bank"].app
    for task in _tasks(app, 1, 14):  # lock a card, ..., then "how many charges does that card have?"
        last = task.oracle[task.answer_step or 0]
        assert last.tool == "search_card_transactions"
        acted = next(c for c in task.oracle if app.spec_by_name[c.tool].mode == "write")
        assert last.refs["card_id"] == acted.refs["card_id"]  # the card the request acted on, as the oracle found it
        assert set(last.args) == {"limit", "offset"}  # no filter the user never asked for
        assert "charges does that card have?" in task.instruction or "charges does the same card have?" in task.instruction


def test_a_row_named_by_a_unique_value_is_looked_up_by_it_first(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    for task in _tasks(app, 7, 23):  # "apply the coupon "HARBOR34" to my order ..."
        lookup, apply = task.oracle[0], next(c for c in task.oracle if c.tool == "apply_coupon")
        assert lookup.tool == "get_coupon_by_code" and lookup.args["code"] in task.instruction
        assert apply.tool == "apply_coupon" and "coupon_id" not in apply.args
        assert apply.refs["coupon_id"].step == 0 and apply.refs["coupon_id"].field == "coupon_id"
        assert "get_coupon_by_code" in task.visible_tools


def test_information_tasks_first_go_round_the_reads_no_mixed_task_ends_with(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["taskboard"].app
    graph = build_graph(app.specs)
    writes = [s for s in app.specs if s.mode == "write"]
    followed = {g.name for w in writes for g, _, _, _ in _reads_of(app, w)}
    others = [s.name for s in _tools(app).reads if s.name not in followed]  # the reads an information task may start with
    first = []
    for slot in range(len(others)):
        steps = plan_chain(app, graph, random.Random(slot), "info", slot=slot)
        assert steps is not None
        first.append(steps[0].spec.name)
    assert first and not set(first) & followed  # a get by id that mixed tasks end with comes later in the round
    assert len(set(first)) == len(first)


def test_a_total_whose_field_says_total_is_not_said_twice(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    for task in _tasks(app, 7, 22):  # cancel my order ...; what is the line total of the items of that order now?
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
    for task in _tasks(app, 7, 14):  # "How many orders are there that are paid?" (the status is the task's own)
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
            assert task.instruction.rstrip().endswith("?") and " now?" not in task.instruction
    assert found
