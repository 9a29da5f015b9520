"""Synthesis as stages: the composition is pure per seed, and a variant stage after admission is one entry in VARIANTS."""

from __future__ import annotations

from collections import Counter

import pytest

from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.app import App
from envsynth.tasks import Rejection, Task, synth, synthesize
from envsynth.tasks.admission import admit as admission
from envsynth.tasks.admission.admit import Admitted
from envsynth.tasks.building.world import instantiate_plan
from envsynth.tasks.model import Call
from envsynth.tasks.planning import chain
from envsynth.tasks.planning.plan import kind_and_turn, plan_task
from envsynth.tasks.state import merged
from envsynth.tasks.wording.request import _set_by_request, says_answer


def _first_tasks(app: App, *, start: int = 0) -> tuple[int, list[Task]]:
    graph = build_graph(app.specs)
    for t in range(start, start + 40):
        out = synthesize(app, graph, app_index=0, task_index=t, states=2, depth=2)
        if not isinstance(out, Rejection):
            return t, out
    raise AssertionError("no task admitted")


def _polite(app: App, admitted: Admitted) -> Admitted:
    """A variant that changes what the user says (the oracle still solves it)."""
    task = admitted.task.model_copy(update={"instruction": admitted.task.instruction + " Thanks!"}).sealed()
    return Admitted(task, admitted.state)


def _hollow(app: App, admitted: Admitted) -> Admitted:
    """A variant nothing could grade: no effect and no answer expected (a do-nothing agent would pass)."""
    task = admitted.task.model_copy(update={"expected_effects": {}, "expected_answer": None}).sealed()
    return Admitted(task, admitted.state)


def test_the_stages_compose_to_the_same_tasks_per_seed(built_catalog: dict[str, BuiltApp]) -> None:
    app = built_catalog["harbor_market"].app
    t, first = _first_tasks(app)
    _, again = _first_tasks(app, start=t)
    assert [x.hash for x in first] == [x.hash for x in again]
    plan = plan_task(app, build_graph(app.specs), app_index=0, task_index=t, depth=2, seed=0)
    assert not isinstance(plan, Rejection)
    inst = instantiate_plan(plan)
    assert not isinstance(inst, Rejection)
    inst.ws0.close()
    tools = [c.tool for c in first[0].oracle]
    assert tools[len(tools) - len(inst.calls) :] == [c.tool for c in inst.calls]  # after the requester's lookup, if any


def test_a_variant_in_variants_turns_every_admitted_state_into_its_variant(
    built_catalog: dict[str, BuiltApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = built_catalog["harbor_market"].app
    t, plain = _first_tasks(app)
    monkeypatch.setattr(synth, "VARIANTS", (*synth.VARIANTS, _polite))
    _, varied = _first_tasks(app, start=t)
    assert [x.instruction for x in varied] == [x.instruction + " Thanks!" for x in plain]
    assert all(x.hash == x.content_hash() for x in varied)


def test_a_variant_that_fails_admission_rejects_the_task(built_catalog: dict[str, BuiltApp], monkeypatch: pytest.MonkeyPatch) -> None:
    app = built_catalog["harbor_market"].app
    t, _ = _first_tasks(app)
    monkeypatch.setattr(synth, "VARIANTS", (*synth.VARIANTS, _hollow))
    out = synthesize(app, build_graph(app.specs), app_index=0, task_index=t, states=2, depth=2)
    assert isinstance(out, Rejection)
    assert (out.reason, out.detail) == ("verifier_passes_on_s0", "variant _hollow")


def test_kinds_come_in_exact_shares_and_turns_count_the_tasks_that_start_alike() -> None:
    kinds, turns = zip(*(kind_and_turn(5, 3, t) for t in range(200)), strict=True)
    for block in range(10):
        assert Counter(kinds[block * 20 : block * 20 + 20]) == {"action": 10, "info": 5, "mixed": 5}
    info = [turn for k, turn in zip(kinds, turns, strict=True) if k == "info"]
    writes = [turn for k, turn in zip(kinds, turns, strict=True) if k != "info"]
    assert info == list(range(50)) and writes == list(range(150))
    assert kind_and_turn(5, 3, 10**9) == kind_and_turn(5, 3, 10**9)  # no walk over the earlier indexes
    assert [kind_and_turn(6, 3, t)[0] for t in range(20)] != list(kinds[:20])  # another seed, another order


def test_the_tasks_that_start_with_a_write_go_round_the_write_tools(built_catalog: dict[str, BuiltApp]) -> None:
    """The n-th task starting with a write starts with the n-th write tool, the n-th information task reads the n-th read
    (of the reads information tasks go round: first those no mixed task ends with)."""
    app = built_catalog["relay_chat"].app
    graph = build_graph(app.specs)
    writes = [s.name for s in app.specs if s.mode == "write"]
    reads = [s.name for s in chain._info_reads(app)]
    checked = {True: 0, False: 0}
    for t in range(60):
        plan = plan_task(app, graph, app_index=3, task_index=t, depth=0, seed=5)
        if isinstance(plan, Rejection):
            continue
        kind, turn = kind_and_turn(5, 3, t)
        tools = reads if kind == "info" else writes
        assert plan.steps[0].spec.name == tools[turn % len(tools)], t
        assert plan.kind == kind or (kind, plan.kind) == ("mixed", "action"), t  # a write no read can follow up is a task alone
        checked[kind == "info"] += 1
    assert checked[False] > len(writes) and checked[True] >= 10


@pytest.mark.parametrize(
    ("text", "answer", "says"),
    [
        ("Tell me the status of my message sent on March 7, 2026 at 9:15 AM.", "sent", True),
        ("Hand my tasks over to team member Nathan Baker. Tell me the role of my account.", "member", True),
        ("What is the due date of the bill issued on January 2, 2026?", "2026-01-02", True),
        ("What does the order placed at $1,234.50 come to?", 1234.5, True),
        ("What is the status of my order placed on March 3, 2026?", "shipped", False),
        ("How many orders of 12.50 each?", 12, False),
        ("Tell me the count of my 3 orders.", 3, False),  # one digit: too often part of a date or a count
        ("Is the card locked?", True, False),
    ],
)
def test_a_request_that_states_its_answer_is_told(text: str, answer: object, says: bool) -> None:
    assert says_answer(text, answer) is says


def test_an_answer_the_request_itself_passes_to_a_call_is_told() -> None:
    calls = [Call(tool="gift_pt_credits", args={"from_member_id": "mem_1", "amount": 3}), Call(tool="get_member", args={})]
    assert _set_by_request(calls, 3) and not _set_by_request(calls, 4) and not _set_by_request(calls, None)


def test_the_oracle_first_looks_up_the_requester_by_the_email_they_give(built_catalog: dict[str, BuiltApp]) -> None:
    """A customer who gives their email is found with find_customer_by_email; the calls on their row use its result.

    A store associate acting for a customer gives the customer's email: the lookup uses that one."""
    app = built_catalog["harbor_market"].app
    graph = build_graph(app.specs)
    seen = 0
    for t in range(60):
        tasks = synthesize(app, graph, app_index=1, task_index=t, states=2, depth=2)
        if isinstance(tasks, Rejection) or tasks[0].oracle[0].tool != "find_customer_by_email":
            continue
        for task in tasks:
            lookup, rest = task.oracle[0], task.oracle[1:]
            assert set(lookup.args) == {"email"} and lookup.args["email"] in task.instruction
            assert task.user.email == lookup.args["email"] if task.user.role == "customer" else task.user.email is None
            assert any(r.step == 0 and r.field == "customer_id" for c in rest for r in c.refs.values())
            assert all(r.step >= 0 for c in rest for r in c.refs.values())
            assert "find_customer_by_email" in task.visible_tools
            assert task.answer_step is None or task.oracle_program.endswith(f"return r{task.answer_step}[{task.answer_field!r}]\n")
        seen += 1
    assert seen >= 3


def test_a_task_two_variants_change_is_admitted_once(built_catalog: dict[str, BuiltApp], monkeypatch: pytest.MonkeyPatch) -> None:
    app = built_catalog["harbor_market"].app
    _, plain = _first_tasks(app)
    calls = []
    real = admission.admit

    def counting(*args: object, **kwargs: object) -> str | None:
        calls.append(args[1])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(admission, "admit", counting)
    out = admission.vary(app, Admitted(plain[0], merged(plain[0].state.core, plain[0].state.distractors)), (_polite, _polite))
    assert not isinstance(out, Rejection) and out.task.instruction.endswith("Thanks! Thanks!")
    assert len(calls) == 1 and calls[0] == out.task  # the final task, checked once
