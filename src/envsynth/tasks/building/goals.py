"""Multi-goal requests (ScaleEnv's C1..Cn): the goals of one request must be one person's.

A multi-goal chain (:func:`envsynth.tasks.planning.chain.plan_chain` with ``goals`` = 2) starts its
second goal with a write of its own, on a row the instance drew for it. "Close my oldest account,
then pay out my personal loan" is one customer's request only when both rows are that customer's:
this stage checks, on the instance, that the rows every goal acts on are, or belong to, one and the
same person of a declared role (through up to three references: a booking's ticket's listener), or
that no goal acts on anybody's rows (a staff member's work on the business's own). An instance that
fails is not worded; synthesis plans the task index again as one goal.
"""

from __future__ import annotations

from typing import Any

from envsynth.tasks.building.world import Instance
from envsynth.tasks.wording.scenario import acted_for


def people_of_goals(inst: Instance) -> list[set[tuple[str, Any]]]:
    """Per goal of the instance, the people (table, id) the pre-existing rows its steps act on belong to."""
    app, steps = inst.plan.app, inst.plan.steps
    roles = {u.entity for u in app.blueprint.users if u.entity}
    out: list[set[tuple[str, Any]]] = [set() for _ in range(inst.plan.goals)]
    for step, bound in zip(steps, inst.bound, strict=False):
        for table, key in bound.values():
            person = (table, key) if table in roles else acted_for(app, inst.s0, [(table, key)])  # a person, or whose row
            if person is not None:
                out[step.goal].add(person)
    return out


def one_person(inst: Instance) -> bool:
    """Whether the goals of the instance are one person's: every goal acts on the same one person's rows, or none
    acts on anybody's (a staff member's work on the business's own rows: a listing, then its stock)."""
    people = people_of_goals(inst)
    return len(people[0]) <= 1 and all(later == people[0] for later in people[1:])
