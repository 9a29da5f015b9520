"""The task contract over every catalogue app: admitted tasks are solvable and graded by state."""

from __future__ import annotations

from typing import Any

import pytest

from envsynth import catalog
from envsynth.compiler.build import BuiltApp
from envsynth.graph import build_graph
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.state import id_fields
from envsynth.tasks import Rejection, Task, TaskEpisode, state_bytes, synthesize
from envsynth.tasks.admission.coherence import first_defect
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.wording.instruction import leaks_id

PER_APP = 3
STATES = 2
DEPTH = 2


def _tasks_for(built: BuiltApp, seed: int = 0, per_app: int = PER_APP) -> list[list[Task]]:
    graph = build_graph(built.app)
    out: list[list[Task]] = []
    for t in range(40):
        res = synthesize(built.app, graph, app_index=0, task_index=t, states=STATES, depth=DEPTH, seed=seed)
        if not isinstance(res, Rejection):
            out.append(res)
        if len(out) == per_app:
            break
    return out


@pytest.fixture(scope="module")
def corpus(built_catalog: dict[str, BuiltApp]) -> dict[str, list[list[Task]]]:
    return {name: _tasks_for(b) for name, b in built_catalog.items()}


def run_oracle(ep: TaskEpisode, task: Task, extra_reads: bool = False, results: list[Any] | None = None) -> Any:
    results = [] if results is None else results
    if task.clarify:  # a must-ask task's user is asked first, as the oracle agent asks (tasks/admission/clarify.py)
        ep.call("ask_user", {"question": "What does my request leave out?"})
    for c in task.oracle:
        args = dict(c.args)
        for p, ref in c.refs.items():
            args[p] = resolve(ref, results)
        res = ep.call(c.tool, args)
        assert res.ok, (task.id, c.tool, res.content)
        results.append(res.data)
        if extra_reads:  # harmless reads never change the reward
            for tool in task.visible_tools:
                spec = ep._app.spec_by_name[tool]
                if spec.kind == "search":
                    ep.call(tool, {"limit": 3})
                    break
    return answer_in(results[task.answer_step], task.answer_field) if task.answer_step is not None else None


@pytest.mark.parametrize("name", catalog.names())
def test_every_task_is_admitted_honestly(name: str, built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    app = built_catalog[name].app
    groups = corpus[name]
    assert len(groups) == PER_APP, f"{name}: too few admitted tasks"
    for states in groups:
        assert len(states) == STATES
        assert len({t.instruction for t in states}) == 1, "one instruction over the S states"
        assert len({t.expected_effects.__repr__() + repr(t.expected_answer) for t in states}) >= 1
        for task in states:
            assert task.hash == task.content_hash()
            assert not leaks_id(task.instruction), task.instruction
            assert "{" not in task.instruction and "None" not in task.instruction and "  " not in task.instruction
            assert " of it" not in task.instruction and " for it" not in task.instruction, task.instruction  # every row is named
            assert {c.tool for c in task.oracle} <= set(task.visible_tools)
            assert len(task.visible_tools) >= min(20, len(app.specs))
            assert first_defect(task, app.blueprint) is None, task.id  # the state linter finds nothing odd (admission)
            s0 = state_bytes(app, task)
            # the oracle scores 1.0
            ep = TaskEpisode(app, task, s0, seed=3)
            answer = run_oracle(ep, task)
            reward = ep.finish(answer)
            assert reward.score == 1.0, (task.id, reward.feedback)
            # a do-nothing agent scores 0.0
            assert TaskEpisode(app, task, s0).finish(None).score == 0.0
            # the agent never sees anything beyond the visible tools
            names = {t["function"]["name"] for t in TaskEpisode(app, task, s0).tools}
            assert names == set(task.visible_tools) | {"complete_task"} | ({"ask_user"} if task.clarify else set())


def test_every_id_the_oracle_passes_is_found_by_a_lookup(built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    """An agent is told names, never ids: the oracle takes the id of every row of s0 it passes from an earlier result
    (a lookup through the visible tools), unless the request itself states that id."""
    literal = []
    for name, task in _all_tasks(corpus):
        ids = id_fields(built_catalog[name].app.blueprint)
        rows = [*task.state.core.items(), *task.state.distractors.items()]
        existing = {r[ids[table]] for table, rs in rows for r in rs}
        for c in task.oracle:
            values = [x for v in c.args.values() for x in (v if isinstance(v, list) else [v])]
            literal += [(task.id, c.tool, v) for v in values if isinstance(v, str) and v in existing and v not in task.instruction]
    assert literal == []


def test_same_seed_same_hashes(built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    name = catalog.names()[0]
    again = _tasks_for(built_catalog[name])
    assert [[t.hash for t in g] for g in again] == [[t.hash for t in g] for g in corpus[name]]
    other = _tasks_for(built_catalog[name], seed=1)
    assert [[t.hash for t in g] for g in other] != [[t.hash for t in g] for g in corpus[name]]


def _all_tasks(corpus: dict[str, list[list[Task]]]) -> list[tuple[str, Task]]:
    return [(name, t) for name, groups in corpus.items() for g in groups for t in g]


def test_extra_reads_do_not_change_the_reward(built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    for name, task in _all_tasks(corpus):
        app = built_catalog[name].app
        ep = TaskEpisode(app, task, state_bytes(app, task))
        assert ep.finish(run_oracle(ep, task, extra_reads=True)).score == 1.0


def test_extra_harmful_write_scores_zero_and_is_named(built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    checked = 0
    more = {"brightline_utilities": _tasks_for(built_catalog["brightline_utilities"], per_app=6)[PER_APP:]}  # one starts with a create
    for name, task in _all_tasks(corpus) + _all_tasks(more):
        app = built_catalog[name].app
        first = next((c for c in task.oracle if app.spec_by_name[c.tool].kind == "create"), None)
        if first is None or any(app.spec_by_name[task.oracle[r.step].tool].mode == "write" for r in first.refs.values()):
            continue  # (a create whose arguments come from a lookup, such as the requester's, is made again the same way)
        ep = TaskEpisode(app, task, state_bytes(app, task))
        results: list[Any] = []
        answer = run_oracle(ep, task, results=results)
        args = {**first.args, **{p: resolve(r, results) for p, r in first.refs.items()}}
        if not ep.call(first.tool, args).ok:  # the same create once more: one row too many
            continue
        reward = ep.finish(answer)
        assert reward.score == 0.0
        assert any(m.kind == "extra_row" and m.table == app.spec_by_name[first.tool].entity for m in reward.breakdown), reward.feedback
        checked += 1
    assert checked >= 1


def test_wrong_answer_scores_zero(built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]) -> None:
    checked = 0
    for name, task in _all_tasks(corpus):
        if task.answer_step is None:
            continue
        app = built_catalog[name].app
        ep = TaskEpisode(app, task, state_bytes(app, task))
        run_oracle(ep, task)
        reward = ep.finish("certainly not the answer")
        assert reward.score == 0.0
        assert any(m.kind == "wrong_answer" for m in reward.breakdown)
        checked += 1
    assert checked >= 3


def test_another_valid_order_scores_one(built_catalog: dict[str, BuiltApp]) -> None:
    """Steps that do not depend on each other, done in reverse order (with the ids the lookups find), still score 1.0."""
    checked = 0
    for built in built_catalog.values():
        app, graph = built.app, build_graph(built.app)
        for t in range(60):
            res = synthesize(app, graph, app_index=0, task_index=t, states=1, depth=1, seed=0)
            if isinstance(res, Rejection):
                continue
            task = res[0]
            acts = [c for c in task.oracle if app.spec_by_name[c.tool].mode == "write"]
            if len(acts) < 2 or task.answer_step is not None:
                continue
            if any(app.spec_by_name[task.oracle[r.step].tool].mode == "write" for c in acts for r in c.refs.values()):
                continue  # a step takes what an earlier one made
            writes = [{(t, f) for t, fs in app.spec_by_name[c.tool].writes.items() for f in fs} for c in acts]
            if any(a & b for i, a in enumerate(writes) for b in writes[i + 1 :]):
                continue  # two steps write the same field (interest on a balance, then a transfer): order matters
            results: list[Any] = []
            run_oracle(TaskEpisode(app, task, state_bytes(app, task)), task, results=results)  # the ids the lookups find
            args = [{**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}} for c in acts]
            ep = TaskEpisode(app, task, state_bytes(app, task))
            if task.clarify:  # a must-ask task: asking before writing is part of every valid order
                ep.ask_user({"question": "What do you need me to know?"})
            if not all(ep.call(c.tool, a).ok for c, a in reversed(list(zip(acts, args, strict=True)))):
                continue  # this order is not valid for this chain (a step needs an earlier one)
            assert ep.finish(None).score == 1.0, task.id
            checked += 1
            break
    assert checked >= 1


def test_the_answer_in_a_sentence_scores_one_and_a_hedge_zero(
    built_catalog: dict[str, BuiltApp], corpus: dict[str, list[list[Task]]]
) -> None:
    """Every catalogue answer, written as a person writes it, is graded as the bare value is (issue 24)."""
    from envsynth.grading import answer_spec

    checked = 0
    for name, task in _all_tasks(corpus):
        if task.answer_step is None:
            continue
        app = built_catalog[name].app
        value = task.expected_answer
        for said, ok in ((f"I looked it up: it is {value}.", True), (f"It is not {value}.", False), ("", False)):
            ep = TaskEpisode(app, task, state_bytes(app, task))
            run_oracle(ep, task)
            reward = ep.finish(said)
            assert reward.passed is ok, (task.id, said, reward.to_dict().get("answer"))
            assert reward.part("answer") is not None and reward.part("answer").passed is ok
        spec = answer_spec(app, task)
        assert spec.kind != "text" or isinstance(value, str), (task.id, spec)
        checked += 1
    assert checked >= 3
