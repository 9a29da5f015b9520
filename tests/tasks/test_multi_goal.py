"""Multi-goal requests: two to eight goals of the same person in one request, each goal's writes in the oracle."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator

import pytest

from envsynth.graph import build_graph
from envsynth.tasks import Rejection, Task, TaskEpisode, state_bytes, synthesize
from envsynth.tasks.building.goals import confusable_head, leading_goals, one_person, people_by_goal, people_of_goals, same_person
from envsynth.tasks.building.world import Instance, instantiate_plan
from envsynth.tasks.planning.chain import plan_chain
from envsynth.tasks.planning.plan import MULTI_GOAL, goals_of, plan_task, task_seed
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.wording.frames import FRAMES, framed
from envsynth.tasks.wording.scenario import acted_for
from task_samples import compiled, synthesized

APPS = ("tempo_music", "juniper_goods", "northwind_bank")


def _multi(name: str) -> list[list[Task]]:
    return [made for made in synthesized(name, states=2) if made[0].stats.get("goals", 1) >= 2]


def _instances(name: str, app_index: int, goals: int, indexes: int) -> Iterator[tuple[int, Instance]]:
    """(task index, instance) of the first ``indexes`` task indexes of an app planned with ``goals`` goals whose plan
    keeps two or more; each instance's workspace is closed (its rows stay in memory)."""
    app = compiled(name)
    graph = build_graph(app)
    for t in range(indexes):
        plan = plan_task(app, graph, app_index=app_index, task_index=t, depth=0, seed=0, goals=goals)
        if isinstance(plan, Rejection) or plan.goals < 2:
            continue
        inst = instantiate_plan(plan)
        if isinstance(inst, Rejection):
            continue
        inst.ws0.close()
        yield t, inst


def test_the_share_of_multi_goal_tasks_follows_its_setting_and_never_an_information_task() -> None:
    bases = [task_seed(0, 0, t) for t in range(2000)]
    drawn = Counter(goals_of(b, "action") for b in bases)
    assert abs(1 - drawn[1] / len(bases) - MULTI_GOAL) < 0.05
    assert set(drawn) == {1, 2, 3, 4, 6, 8} and drawn[2] > drawn[3] > 0  # two goals most often; up to eight (long horizon)
    assert all(goals_of(b, "info") == 1 for b in bases)


def test_a_second_goal_starts_with_a_write_of_its_own_after_the_first_goal() -> None:
    app = compiled("tempo_music")
    graph = build_graph(app)
    seen = 0
    for s in range(40):
        steps = plan_chain(app, graph, random.Random(s), "action", slot=s, goals=2)
        assert steps is not None
        goals = [st.goal for st in steps]
        assert goals == sorted(goals) and goals[0] == 0  # the first goal's steps, then the second's
        if 1 in goals:
            seen += 1
            head = steps[goals.index(1)]
            assert head.spec.mode == "write" and not head.refs and not head.pins
            assert head.spec.name not in {st.spec.name for st in steps[: goals.index(1)]}
    assert seen >= 30


def test_one_goal_plans_the_chain_it_always_did() -> None:
    app = compiled("juniper_goods")
    graph = build_graph(app)
    for t in range(30):
        one = plan_task(app, graph, app_index=1, task_index=t, depth=0, seed=0, goals=1)
        if goals_of(one.base, one.kind) == 1:  # the default plan of a one-goal task is the same plan
            again = plan_task(app, graph, app_index=1, task_index=t, depth=0, seed=0)
            assert [s.spec.name for s in again.steps] == [s.spec.name for s in one.steps]
        assert one.goals == 1


@pytest.mark.parametrize("name", APPS)
def test_multi_goal_tasks_are_one_persons_and_their_oracle_scores_one(name: str) -> None:
    app = compiled(name)
    found = _multi(name)
    assert found, name
    for states in found:
        task = states[0]
        assert "multi_goal" in task.constructs and 2 <= task.stats["goals"] <= 8
        writes = [c for c in task.oracle if app.spec_by_name[c.tool].mode == "write"]
        assert len(writes) >= task.stats["goals"] and len({c.tool for c in writes}) >= task.stats["goals"]
        for t in states:
            ep = TaskEpisode(app, t, state_bytes(app, t))
            if t.clarify:  # a must-ask task: the user is asked first
                ep.ask_user({"question": "What else do you need from me?"})
            results: list = []
            for c in t.oracle:
                out = ep.call(c.tool, {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}})
                assert out.outcome == "success", (t.id, c.tool, out)
                results.append(out.data)
            answer = results[t.answer_step][t.answer_field] if t.answer_step is not None else None
            assert ep.finish(answer=answer).score == 1.0, t.id


@pytest.mark.parametrize("name", APPS)
def test_doing_only_the_first_goal_scores_zero(name: str) -> None:
    app = compiled(name)
    for states in _multi(name):
        task = states[0]
        first = next(i for i, c in enumerate(task.oracle) if app.spec_by_name[c.tool].mode == "write")
        # the calls up to and including the first write: at least one write of the request is left undone
        ep = TaskEpisode(app, task, state_bytes(app, task))
        results: list = []
        for c in task.oracle[: first + 1]:
            results.append(ep.call(c.tool, {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}}).data)
        assert ep.finish(answer=None).score == 0.0, task.id


def test_a_multi_goal_instance_of_two_people_is_refused_and_planned_again_with_fewer_goals() -> None:
    app = compiled("tempo_music")
    graph = build_graph(app)
    refused = kept = 0
    for t, inst in _instances("tempo_music", app_index=0, goals=2, indexes=60):
        people, ok, lead = people_of_goals(inst), one_person(inst), leading_goals(inst)
        assert ok == (len(set().union(*people)) <= 1) and (ok or lead < inst.plan.goals)
        assert len(set().union(*people[:lead])) <= 1  # the goals kept are one person's
        refused += not ok
        kept += ok
        if not ok and goals_of(inst.plan.base, inst.plan.kind) == 2:  # synthesis falls back to the task as one goal
            made = synthesize(app, graph, app_index=0, task_index=t, states=1, depth=0)
            assert isinstance(made, Rejection) or made[0].stats.get("goals", 1) == 1
    assert refused and kept


def test_a_further_goal_is_framed_as_something_else_asked_for() -> None:
    for style, frames in FRAMES.items():
        out = framed(["cancel my order", "unfollow the artist", "delete the playlist"], None, random.Random(0), style, frozenset({1}))
        starts = [f.split("{x}")[0] for f in frames.also]
        assert any(out[1].startswith(s) for s in starts), (style, out)
        assert not any(out[0].startswith(s) for s in starts if s) or style == "brief"


def test_a_later_goal_starts_on_the_first_goals_persons_rows() -> None:
    """The first step of a later goal is steered to the first goal's person: the person, or one of their rows."""
    app = compiled("northwind_bank")
    steered = 0
    for _, inst in _instances("northwind_bank", app_index=2, goals=2, indexes=60):
        steps, bound = inst.plan.steps, inst.bound  # the chain as instantiated (a step that cannot be made is cut)
        if inst.plan.goals < 2:
            continue
        head = next(i for i, s in enumerate(steps) if s.goal == 1)
        assert all(same_person(app, steps, i, bound, inst.s0, 0) == {} for i in range(len(bound)) if i != head)
        first = people_by_goal(app, inst.s0, steps[:head], bound[:head], 1)[0]
        fixed = same_person(app, steps, head, bound, inst.s0, 0)
        if len(first) != 1:
            assert fixed == {}
            continue
        (table, key) = next(iter(first))
        for param, value in fixed.items():
            entity = next(b.entity for b in steps[head].spec.bindings if b.param == param)
            assert (entity, value) == (table, key) or acted_for(app, inst.s0, [(entity, value)]) == (table, key)
        steered += bool(fixed)
        if fixed and head < len(bound):  # the instance took what it was steered to
            assert all(inst.calls[head].args.get(p, v) == v for p, v in fixed.items() if p not in steps[head].refs)
    assert steered >= 5


def test_further_goals_take_frames_no_earlier_goal_took() -> None:
    for style, frames in FRAMES.items():
        out = framed(["a", "b", "c", "d"], None, random.Random(3), style, frozenset({1, 2, 3}))
        starts = [next(f.split("{x}")[0] for f in frames.also if s.startswith(f.split("{x}")[0])) for s in out[1:4]]
        assert len(set(starts)) == min(3, len(frames.also)), (style, out)


def test_a_later_goal_never_starts_on_a_row_like_one_the_request_adds() -> None:
    """ "Book 1 ticket for the concert ..., and cancel the ticket booking for 1 ticket": the booking named was told
    apart on the state before the request, not from the booking the request adds. A later goal that starts on a
    pre-existing row of a table an earlier step adds rows to is cut off, with the goals after it."""
    cut = 0
    for name in ("tempo_music", "harbor_market"):
        for t, inst in _instances(name, app_index=0, goals=4, indexes=40):
            steps, kept = inst.plan.steps, leading_goals(inst)
            for goal in range(1, inst.plan.goals):
                head = next(i for i, s in enumerate(steps) if s.goal == goal)
                added = {ef.entity for s in steps[:head] for ef in s.spec.effects if ef.op == "insert"}
                clash = any(table in added for table, _ in inst.bound[head].values())
                assert clash == confusable_head(inst, goal)
                if goal < kept:
                    assert not clash, (name, t, goal)
                elif goal == kept and clash:
                    cut += 1
    assert cut >= 1
