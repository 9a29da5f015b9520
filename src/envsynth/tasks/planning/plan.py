"""Stage 1, plan: a task index of an app -> the kind of task and its chain of tool calls."""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from envsynth.blueprint.models import Workflow
from envsynth.graph.model import ToolGraph
from envsynth.runtime.app import App
from envsynth.tasks.model import Coordinates, Rejection, RejectionReason, TaskKind
from envsynth.tasks.planning.chain import Step, plan_chain, plan_workflow

KINDS: tuple[tuple[TaskKind, float], ...] = (("action", 0.5), ("info", 0.25), ("mixed", 0.25))
BLOCK = 20  # task indexes per block of kinds: each kind's share of a block is exact


def task_seed(seed: int, app_index: int, task_index: int) -> int:
    """The seed every random choice of one task index of one app derives from."""
    return (seed * 1_000_003 + app_index) * 1_000_033 + task_index


MULTI_GOAL = 0.9
"""The share of the tasks that start with a write whose request holds further goals of the same user (ScaleEnv's C1..Cn)."""


def goals_of(base: int, kind: TaskKind) -> int:
    """How many goals the request of a task of seed ``base`` holds: 2 to 8 for a share :data:`MULTI_GOAL` of the tasks
    that start with a write (2 in a third of them; 3, 4, 6 or 8 in a sixth each: the long-horizon requests), else 1.
    Drawn from a stream of its own, so a one-goal task's chain is the one it always was."""
    rng = random.Random(base * 7 + 3)
    return rng.choice((2, 2, 3, 4, 6, 8)) if kind != "info" and rng.random() < MULTI_GOAL else 1


def kind_and_turn(seed: int, app_index: int, task_index: int) -> tuple[TaskKind, int]:
    """The kind of a task, and how many earlier task indexes of the app start their chain the same way.

    Kinds come in blocks of 20 task indexes holding each kind in its share of :data:`KINDS`
    (10 action, 5 info, 5 mixed), shuffled per block. The turn counts the earlier tasks that
    start with a write (action and mixed), or for an information task the earlier information
    tasks: the first tool of a chain goes round the app's tools by it, so the n-th task that
    starts with a write starts with the n-th write tool. O(1) in the task index.
    """
    block, pos = divmod(task_index, BLOCK)
    kinds = _block_kinds(seed, app_index, block)
    kind = kinds[pos]
    same = [(k == "info") == (kind == "info") for k in kinds]
    return kind, block * sum(same) + sum(same[:pos])


@lru_cache(maxsize=64)
def _block_kinds(seed: int, app_index: int, block: int) -> tuple[TaskKind, ...]:
    """The kinds of a block of task indexes, in order (one shuffle per block; the consecutive indexes of a block share it)."""
    kinds = [k for k, w in KINDS for _ in range(round(w * BLOCK))]
    random.Random(task_seed(seed, app_index, block) * 2 + 1).shuffle(kinds)
    return tuple(kinds)


@dataclass
class Plan:
    """A planned task: its kind, its chain, and the random stream later stages draw from.

    ``rng`` is the task's stream (the kind, the chain, the question and the visible tools
    are drawn from it in that order); ``base`` is the task seed the other streams derive from.
    ``workflow`` is the declared workflow the chain follows, if any (its goal is the request's).
    """

    app: App
    graph: ToolGraph
    kind: TaskKind
    steps: list[Step]
    rng: random.Random
    base: int
    coords: Coordinates
    workflow: Workflow | None = None

    @property
    def goals(self) -> int:
        """How many goals the request holds (a multi-goal request's later steps carry their goal's index)."""
        return 1 + max((s.goal for s in self.steps), default=0)

    def reject(self, reason: RejectionReason, detail: str = "") -> Rejection:
        """A rejection of this task index with ``reason`` (and a detail, cut to 300 characters)."""
        return Rejection(app=self.app.name, coordinates=self.coords, reason=reason, detail=detail[:300])


def plan_task(
    app: App, graph: ToolGraph, *, app_index: int, task_index: int, depth: int, seed: int, goals: int | None = None
) -> Plan | Rejection:
    """Draw the task's kind and plan its chain on the tool graph (reason ``no_chain`` when none fits; a mixed
    task whose first write no read follows up on is planned as an action task).

    ``goals`` is how many goals the request holds (default: :func:`goals_of`; a declared workflow is one goal).
    """
    base = task_seed(seed, app_index, task_index)
    rng = random.Random(base)
    coords = Coordinates(app=app_index, task=task_index, state=0, distractors=depth)
    kind, turn = kind_and_turn(seed, app_index, task_index)
    goals = goals_of(base, kind) if goals is None else goals
    flow = _workflow(app, kind, turn)
    steps = plan_workflow(app, graph, rng, kind, flow.steps) if flow is not None else None
    if steps is None:
        flow = None
        steps = plan_chain(app, graph, rng, kind, slot=turn, goals=goals)
    if steps is None and kind == "mixed":  # no read follows up on what this write touches: the write alone is the task
        kind = "action"
        steps = plan_chain(app, graph, rng, kind, slot=turn, goals=goals)
    plan = Plan(app, graph, kind, steps or [], rng, base, coords, flow)
    return plan if steps else plan.reject("no_chain", f"no {kind} chain")


def _workflow(app: App, kind: TaskKind, turn: int) -> Workflow | None:
    """The declared workflow that starts with the write tool whose turn it is (for a task that starts with a write)."""
    if kind == "info" or not app.blueprint.workflows:
        return None
    writes = app.index.of(_write_tools, app)
    first = writes[turn % len(writes)]
    return next((w for w in app.blueprint.workflows if w.steps[0] == first), None)


def _write_tools(app: App) -> list[str]:
    return [s.name for s in app.specs if s.mode == "write"]
