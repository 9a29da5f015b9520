"""Multi-goal requests (ScaleEnv's C1..Cn): the goals of one request must be one person's.

A multi-goal chain (:func:`envsynth.tasks.planning.chain.plan_chain` with ``goals`` >= 2) starts every
later goal with a write of its own. "Close my oldest account, then pay out my personal loan" is one
customer's request only when both rows are that customer's. Two parts keep it so:

- while the chain is instantiated, the first step of a later goal is steered to the first goal's person
  (:func:`same_person`): a parameter naming that person's table gets that person, one naming a row that
  belongs to somebody gets one of that person's rows (a try per row, as the solver's attempts go);
- on the instance, :func:`one_person` checks that the rows every goal acts on are, or belong to, one and the
  same person of a declared role (through up to three references: a booking's ticket's listener), or nobody
  (the business's own rows: a store associate ships a customer's order, then restocks a shelf).

A later goal may not start on a pre-existing row of a table an earlier step adds rows to (:func:`confusable_head`):
the row was told apart on the state before the request, not from the row the request adds.

An instance that fails is not worded; synthesis plans the task index again with the leading goals that pass
(:func:`leading_goals`; a chain with fewer goals is the same chain cut short).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, id_fields
from envsynth.tasks.planning.chain import Step
from envsynth.tasks.wording.scenario import acted_for

if TYPE_CHECKING:
    from envsynth.tasks.building.world import Instance

Person = tuple[str, Any]


def people_by_goal(app: App, rows: Rows, steps: list[Step], bound: list[dict[str, Any]], goals: int) -> list[set[Person]]:
    """Per goal, the people (table, id) the pre-existing rows its steps bound are, or belong to, on ``rows``."""
    roles = {u.entity for u in app.blueprint.users if u.entity}
    out: list[set[Person]] = [set() for _ in range(goals)]
    for step, rows_of_step in zip(steps, bound, strict=False):
        for table, key in rows_of_step.values():
            person = (table, key) if table in roles else acted_for(app, rows, [(table, key)])  # a person, or whose row
            if person is not None:
                out[step.goal].add(person)
    return out


def people_of_goals(inst: Instance) -> list[set[Person]]:
    """Per goal of the instance, the people (table, id) the pre-existing rows its steps act on belong to."""
    return people_by_goal(inst.plan.app, inst.s0, inst.plan.steps, inst.bound, inst.plan.goals)


def one_person(inst: Instance) -> bool:
    """Whether the goals of the instance are one person's: every goal acts on one and the same person's rows or on
    nobody's (a store associate ships a customer's order, then restocks a shelf; a staff member's work on the
    business's own rows: a listing, then its stock)."""
    return len(set().union(*people_of_goals(inst))) <= 1


def leading_goals(inst: Instance) -> int:
    """How many goals, from the first, are one person's (see :func:`one_person`) and start on a row no earlier step
    could be taken for (:func:`confusable_head`)."""
    seen: set[Person] = set()
    for n, people in enumerate(people_of_goals(inst)):
        seen |= people
        if len(seen) > 1 or (n and confusable_head(inst, n)):
            return n
    return inst.plan.goals


def confusable_head(inst: Instance, goal: int) -> bool:
    """Whether the first step of ``goal`` acts on a pre-existing row of a table an earlier step of the request adds
    rows to: "book 1 ticket for the concert ..., and cancel the ticket booking for 1 ticket" names a booking that was
    described on the state before the request, which the new booking may now match as well."""
    steps = inst.plan.steps
    head = next(i for i, s in enumerate(steps) if s.goal == goal)
    added = {ef.entity for s in steps[:head] for ef in s.spec.effects if ef.op == "insert"}
    return head < len(inst.bound) and any(table in added for table, _ in inst.bound[head].values())


def same_person(app: App, steps: list[Step], i: int, bound: list[dict[str, Any]], rows: Rows, attempt: int) -> dict[str, Any]:
    """Arguments that put step ``i``, the first step of a later goal, on the first goal's person's rows.

    Empty for any other step, and when the first goal acts on nobody's rows or on several people's. A parameter
    that names a row of the person's table gets the person; one that names a row of a table whose rows belong
    to people gets one of the person's rows there (the ``attempt``-th, in id order), or stays free when the person
    has none.
    """
    step = steps[i]
    if step.goal == 0 or steps[i - 1].goal == step.goal:
        return {}
    zero = [(s, b) for s, b in zip(steps[:i], bound[:i], strict=True) if s.goal == 0]
    first = people_by_goal(app, rows, [s for s, _ in zero], [b for _, b in zero], 1)[0]
    if len(first) != 1:
        return {}
    (table, key), ids = next(iter(first)), id_fields(app.blueprint)
    fixed: dict[str, Any] = {}
    for b in step.spec.bindings:
        if not b.param or b.param in fixed:
            continue
        if b.entity == table:
            fixed[b.param] = key
            continue
        mine = sorted(
            r[ids[b.entity]] for r in rows.get(b.entity, ()) if acted_for(app, rows, [(b.entity, r[ids[b.entity]])]) == (table, key)
        )
        if mine:
            fixed[b.param] = mine[attempt % len(mine)]
    return fixed
