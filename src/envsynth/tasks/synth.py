"""Task synthesis: one task index of an app -> S admitted tasks, or a Rejection with the reason.

The stages, each a function from typed artifacts to typed artifacts (or a Rejection):

1. plan (:mod:`~envsynth.tasks.planning.plan`): the task's kind and chain of tool calls;
2. instantiate (:mod:`~envsynth.tasks.building.world`): a small world, the oracle's arguments and s0;
3. core (:mod:`~envsynth.tasks.building.core`, :mod:`~envsynth.tasks.planning.answer`, :mod:`~envsynth.tasks.building.visible`):
   the rows the chain needs, the rows the request names, the question, the visible tools;
4. states and distractors (:mod:`~envsynth.tasks.building.states`): per state, distractors the chain runs on;
5. describe (:mod:`~envsynth.tasks.wording.request`): a unique description of every named row (judges state 0);
6. scenario (:mod:`~envsynth.tasks.wording.request`): who asks, in their words, solvable from what they state;
7. admit (:mod:`~envsynth.tasks.admission.admit`): the sealed task, admitted, then through its variants; a later
   state takes state 0's admitted oracle under its own ids when that checks (:mod:`~envsynth.tasks.admission.restate`);
   a task a guess would pass is refused (:mod:`~envsynth.tasks.admission.baselines`), and every admitted task is
   rated (:mod:`~envsynth.tasks.admission.difficulty`). Count questions get rows that spread their count
   (:mod:`~envsynth.tasks.building.matches`) before they are asked.

A task index planned with 2-8 goals (:func:`~envsynth.tasks.planning.plan.goals_of`) whose goals are not one
person's (:mod:`~envsynth.tasks.building.goals`) is planned again with the leading goals that are; one any other
stage refuses, with one goal fewer.
One whose first goal is a lone write is first made as that one goal: when the write becomes a for-each or
conditional goal (which only a lone write does), that task is kept.

``synthesize`` is pure and deterministic in its arguments.
"""

from __future__ import annotations

from typing import Any

from envsynth.graph.model import ToolGraph
from envsynth.runtime.app import App
from envsynth.runtime.reward import effects_of
from envsynth.tasks.admission.admit import Admitted, Variant, admit, admit_state, branch_of, vary
from envsynth.tasks.admission.clarify import ask_for_value
from envsynth.tasks.admission.difficulty import rated
from envsynth.tasks.admission.lookup import look_up_requester
from envsynth.tasks.admission.policy import shape as shape_policy
from envsynth.tasks.admission.restate import restate
from envsynth.tasks.admission.routes import look_up_rows
from envsynth.tasks.building.conditional import make_conditional, telling_question
from envsynth.tasks.building.core import core_of
from envsynth.tasks.building.foreach import expand_for_each
from envsynth.tasks.building.goals import leading_goals
from envsynth.tasks.building.matches import spread_count
from envsynth.tasks.building.siblings import add_siblings
from envsynth.tasks.building.states import TaskStateDraw, draw_state
from envsynth.tasks.building.visible import MIN_VISIBLE, visible_tools
from envsynth.tasks.building.world import STEP_ATTEMPTS, WORLD_ROWS, Instance, instantiate_plan, staff_names, value_pool
from envsynth.tasks.model import Rejection, Task
from envsynth.tasks.planning.answer import Question, ask
from envsynth.tasks.planning.plan import KINDS, Plan, task_seed
from envsynth.tasks.planning.plan import plan_task as plan_task
from envsynth.tasks.wording.questions import unfiltered
from envsynth.tasks.wording.request import Request, describer, request_of

VARIANTS: tuple[Variant, ...] = (look_up_requester, look_up_rows, ask_for_value)
"""The variant stages every admitted task goes through, in order: a new kind of task derived from an admitted one is one entry here."""

__all__ = ["KINDS", "MIN_VISIBLE", "STEP_ATTEMPTS", "WORLD_ROWS", "admit", "staff_names", "synthesize", "task_seed", "value_pool"]


def synthesize(
    app: App, graph: ToolGraph, *, app_index: int, task_index: int, states: int = 1, depth: int = 0, seed: int = 0
) -> list[Task] | Rejection:
    """Synthesize the S states of task ``task_index`` of an app.

    Returns:
        S admitted tasks (``coordinates.state`` = 0..S-1, one instruction), or a Rejection.
    """
    coords = {"app_index": app_index, "task_index": task_index, "depth": depth, "seed": seed}
    plan = plan_task(app, graph, **coords)
    if isinstance(plan, Rejection):
        return plan
    alone: list[Task] | Rejection | None = None  # the task as its first goal alone, once made
    if plan.goals > 1 and plan.kind == "action" and sum(s.goal == 0 for s in plan.steps) == 1:
        one = plan_task(app, graph, **coords, goals=1)
        alone = one if isinstance(one, Rejection) else _planned(one, states)[0]
        if isinstance(alone, list) and {"for_each", "conditional"} & set(alone[0].constructs):
            return alone  # the first goal's lone write makes a for-each or conditional goal (only a lone write can)
    made, goals = _planned(plan, states)
    while isinstance(made, Rejection) and goals >= 1:  # a multi-goal request that cannot be made: fewer goals
        if goals == 1 and alone is not None:
            return alone
        again = plan_task(app, graph, **coords, goals=goals)
        made, goals = (again, 0) if isinstance(again, Rejection) else _planned(again, states)
    return made


def _planned(plan: Plan, states: int) -> tuple[list[Task] | Rejection, int]:
    """The S admitted tasks of a planned task index, or a Rejection and how many goals to plan the index with next
    (0: none; a multi-goal plan is tried again with fewer goals: those that are one person's, else one fewer)."""
    inst = instantiate_plan(plan)
    if isinstance(inst, Rejection):
        return inst, plan.goals - 1
    goals = inst.plan.goals  # (an instance may cut a chain short)
    if goals > 1 and (kept := leading_goals(inst)) < goals:  # "close my oldest account, then ..." on another's loan
        inst.ws0.close()
        detail = f"goal {kept + 1} acts on another person's rows, or starts on a row like one an earlier goal adds"
        return plan.reject("not_instantiable", detail), max(kept, 1)
    try:
        made = _tasks(inst, states)
    finally:
        if inst.ws0.conn is not None:
            inst.ws0.close()
    shaped = shape_policy(plan.app, made, plan.base)  # policy tasks (tasks/admission/policy.py); a no-op without agent-obeyed rules
    if isinstance(shaped, Rejection):
        return shaped, goals - 1
    if goals > 1:
        shaped = [t.model_copy(update={"stats": {**t.stats, "goals": goals}}) for t in shaped]
    return [rated(plan.app, t).sealed() for t in shaped], 0  # difficulty, tier and constructs (tasks/admission/difficulty.py)


def _tasks(inst: Instance, states: int) -> list[Task] | Rejection:
    """Core -> S task states -> the request (made on state 0) -> S admitted tasks."""
    plan = inst.plan
    core = core_of(inst)
    question = ask(inst, core.rows, core.targets)
    inst.for_each = expand_for_each(inst, core, question)  # "cancel all my pending orders" (tasks/building/foreach.py)
    made_conditional = make_conditional(inst, core, question) if inst.for_each is None else None
    if made_conditional is not None:  # "cancel it if it is still pending; otherwise tell me its status" (building/conditional.py)
        inst.conditional, question = made_conditional
    spread_count(inst, core, question)  # a count reaches a number drawn for it (tasks/building/matches.py)
    if question.step is not None and unfiltered(
        plan.app.spec_by_name[inst.calls[question.step].tool], inst.calls[question.step], question.field
    ):
        return plan.reject("question_without_filter", inst.calls[question.step].tool)  # "How many payments are there?"
    visible = visible_tools(plan.graph, [c.tool for c in inst.calls], plan.rng)
    if any(c.tool not in visible for c in inst.calls):
        return plan.reject("tool_not_visible")
    judge = describer(plan.app, question, add_siblings(inst, core))  # "my most recent order" (tasks/building/siblings.py)
    descs = None  # state 0's descriptions: the later states keep them
    request: Request | None = None
    varied: list[Admitted | Rejection] = []
    for s in range(states):
        draw = draw_state(inst, core, s, descs, judge, question.avoid)
        if isinstance(draw, Rejection):
            return draw
        try:
            descs = draw.descs
            first = varied[0] if varied and _same_branch(inst, s) else None  # a telling state has an oracle of its own
            made = _state_task(inst, draw, _state_question(inst, question, s), visible, request, first)
        finally:
            draw.close()
        if isinstance(made, Rejection):
            return made
        request, task = made
        varied.append(task)
    rejected = next((v for v in varied if isinstance(v, Rejection)), None)
    if rejected is not None:
        return rejected
    return _compared([v.task for v in varied if not isinstance(v, Rejection)], inst, descs)


def _compared(tasks: list[Task], inst: Instance, descs: Any) -> list[Task]:
    """``tasks`` with ``stats.comparison`` (``max``: most recent, ``min``: oldest) when the request names a row by comparison."""
    cmp = inst.comparison
    d = descs.get((cmp.table, cmp.key)) if cmp is not None and descs else None
    if d is None or d.most is None:
        return tasks
    return [t.model_copy(update={"stats": {**t.stats, "comparison": d.most[1]}}) for t in tasks]


def _same_branch(inst: Instance, index: int) -> bool:
    """Whether state ``index`` has state 0's oracle (for a conditional goal: the states of its branch)."""
    return inst.conditional is None or inst.conditional.acts(index)


def _state_question(inst: Instance, question: Question, index: int) -> Question:
    """The question of state ``index``: the task's, or a telling state's of a conditional goal (the row's state)."""
    cond = inst.conditional
    return question if cond is None or cond.acts(index) else telling_question(cond, question)


def _state_task(
    inst: Instance, draw: TaskStateDraw, question: Question, visible: list[str], request: Request | None, first: Admitted | Rejection | None
) -> tuple[Request, Admitted | Rejection] | Rejection:
    """One drawn state's task, while its workspace is loaded: the request (made on state 0), then the task admitted and
    through the variant stages, or carried over from state 0's (``first``). A Rejection returned ends the task index at
    once; one in the pair (a variant's) counts after every state's own checks.
    """
    plan = inst.plan
    asked = question.in_state(plan.app, draw.calls, draw.targets)  # a group named by its row: under this state's ids
    expected = effects_of(plan.app.blueprint, draw.full, draw.run.final, now=plan.app.now)
    answer = asked.answer(draw.run.results)
    if asked.step is not None and answer is None:
        return plan.reject("empty_answer")
    if not expected and asked.step is None:
        return plan.reject("no_effect")
    if request is None:
        made = request_of(inst, draw, asked, visible, answer)
        if isinstance(made, Rejection):
            return made
        request = made
    if isinstance(first, Admitted):
        carried = restate(plan.app, first, draw, asked.field, expected, answer)  # state 0's oracle under this state's ids
        if carried is not None:
            return request, carried
    made_task = admit_state(inst, draw, asked, request, expected, answer)
    if isinstance(made_task, Rejection):
        return made_task
    if inst.conditional is not None:
        made_task = branch_of(made_task, inst.conditional, draw.index)
    return request, vary(plan.app, made_task, VARIANTS, draw.workspace)
