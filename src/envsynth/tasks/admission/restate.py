"""Stage 7 for states after the first: state 0's admitted task, carried over to state s's ids.

Every state of a task index shares the request, the chain and (after the variant stages) the
oracle's lookups: state s is state 0's core under fresh ids, with distractors of its own. So
state s needs no routes of its own: :func:`restate` takes state 0's varied oracle, renames the
ids in it, runs its lookups on state s and re-places each row a search lists (``items[k]``:
other distractors list it elsewhere). It checks what :func:`envsynth.tasks.admission.admit.vary`
checks of a task whose only change is its lookups: each lookup, its refs filled in from the
earlier ones, is the call that ran, and every other step, once the lookups fill it in, is the
call of the chain that ran on state s. Such a task scores as that chain does, so its admission
needs no replay beyond the state's own runs.

When that does not hold (a row the search no longer lists on the first page, a lookup that
fails, state 0 checked by a full replay), :func:`restate` returns None and the state goes
through :func:`~envsynth.tasks.admission.admit.admit_state` and the variant stages as state 0 did.
"""

from __future__ import annotations

from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.reward import Effects
from envsynth.tasks.admission.admit import Admitted, admit, nonempty, resolves_to
from envsynth.tasks.admission.baselines import constant_guess, first_candidate_wins
from envsynth.tasks.admission.coherence import first_defect
from envsynth.tasks.admission.routes import run_reads
from envsynth.tasks.building.instantiate import Run
from envsynth.tasks.building.states import TaskStateDraw, remap_call
from envsynth.tasks.model import Call, Ref, TaskState
from envsynth.tasks.planning.oracle import oracle_program
from envsynth.tasks.planning.refs import placed, resolve
from envsynth.tasks.state import count_rows


def restate(app: App, first: Admitted, draw: TaskStateDraw, field: str | None, expected: Effects, answer: Any) -> Admitted | None:
    """State ``draw.index``'s task: ``first`` (state 0's, admitted and through the variant stages) under the state's
    ids, its lookups run on the state; None when the carried oracle would not be checked (see the module).

    Args:
        first: state 0's admitted task, with ``runs`` for its lookups (kept by ``vary``) when it has lookups.
        draw: the state, run (its workspace still open).
        field: the answer's field in this state (a group named by its row takes the state's id).
        expected: the effects the state's ground-truth run had.
        answer: the answer it gave.
    """
    task0, steps = first.task, sorted(first.lookups)
    if len(first.runs) != len(steps) or draw.workspace is None:
        return None
    at = {step: j for j, step in enumerate(steps)}
    ran = [remap_call(app, call, draw.mapping) for call, _ in first.runs]
    results = run_reads(app, draw.full, draw.workspace, ran)
    if isinstance(results, str):
        return None
    oracle = _carried(app, task0.oracle, at, [r for _, r in first.runs], results, draw.mapping)
    if oracle is None or not _checked(oracle, ran, results, draw.calls, at):
        return None
    if first_candidate_wins(oracle, lambda step: results[at[step]] if step in at else None):
        return None  # admitted on its own, it is refused as guessable
    task = task0.model_copy(
        update={
            "id": f"{app.name}-t{task0.coordinates.task:05d}-s{draw.index}",
            "state": TaskState(core=nonempty(draw.core), distractors=nonempty(draw.extra), distractor_depth=draw.per_level),
            "oracle": oracle,
            "oracle_program": oracle_program(oracle, task0.answer_step, field),
            "answer_field": field,
            "expected_answer": answer,
            "expected_effects": expected.to_dict(),
            "coordinates": task0.coordinates.model_copy(update={"state": draw.index}),
            "stats": {**task0.stats, "core_rows": count_rows(draw.core), "distractor_rows": count_rows(draw.extra)},
            "hash": "",
        }
    )
    if constant_guess(app, task) is not None or first_defect(task, app.blueprint) is not None:
        return None  # likewise (an incoherent state is refused there too)
    if draw.check is not draw.run:  # a chain with code of its own: its replay under seed 1 must score as well
        chain = iter(draw.check.results)  # the lookups' results in their places
        replay = Run([results[at[i]] if i in at else next(chain) for i in range(len(oracle))], draw.check.final)
        if admit(app, task, draw.full, replay, None, expected):
            return None
    # else the replay is the ground-truth run: the oracle scores 1 as the chain does, doing nothing scores 0 (the
    # synthesis rejected a state without effects or answer), and the oracle's tools are state 0's, all visible
    return Admitted(task.sealed(), draw.full, lookups=first.lookups)


def _carried(
    app: App, oracle: list[Call], at: dict[int, int], before: list[Any], after: list[Any], mapping: dict[tuple[str, Any], Any]
) -> list[Call] | None:
    """``oracle`` under the state's ids, each ref to a row a search lists pointing at where the state's search lists
    that row (``before``: the lookups' results on state 0, ``after``: on this state); None when it is not listed."""
    out = []
    for call in oracle:
        moved = remap_call(app, call, mapping)
        refs = dict(moved.refs)
        for p, ref in moved.refs.items():
            if ref.item is None or ref.step not in at:
                continue
            j = at[ref.step]
            table = app.spec_by_name[oracle[ref.step].tool].entity
            there = placed(ref, before[j], after[j], lambda key, table=table: mapping.get((table, key)))
            if there is None:
                return None
            refs[p] = there
        out.append(moved.model_copy(update={"refs": refs}) if refs != moved.refs else moved)
    return out


def _checked(oracle: list[Call], ran: list[Call], results: list[Any], chain: list[Call], at: dict[int, int]) -> bool:
    """Whether each lookup of ``oracle``, its refs filled in from ``results``, is the call that ran, and each other step
    makes the call of ``chain`` (the state's oracle before the lookups) that it stands for."""
    for step, j in at.items():
        call = oracle[step]
        if any(r.step not in at for r in call.refs.values()):
            return False
        filled = {**call.args, **{p: resolve(Ref(step=at[r.step], field=r.field, item=r.item), results) for p, r in call.refs.items()}}
        if call.tool != ran[j].tool or filled != ran[j].args:
            return False
    rest = [i for i in range(len(oracle)) if i not in at]
    if len(rest) != len(chain):
        return False
    old_step = {new: old for old, new in enumerate(rest)}
    return all(resolves_to(oracle[new], chain[old], results, at, old_step) for new, old in old_step.items())
