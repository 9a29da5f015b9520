"""A new row for a refusal task's forbidden request (:mod:`envsynth.tasks.admission.policy`), and the oracle with it in.

The oracle finds the rows it acts on through searches (``items[k]``, :mod:`envsynth.tasks.planning.refs`): a
new row in the state can be listed by such a search too, before the row the oracle means, and move
it. :func:`placed_replay` re-places each such ref where the search on the new rows lists the row the
oracle meant (as :mod:`envsynth.tasks.admission.restate` does for a task's later states), :func:`same_outcome`
checks that the oracle so placed makes the task's effects and answer, and :func:`carried` copies
state 0's new row into another state.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.values import ValueMaker
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.app import App
from envsynth.runtime.episode import SUCCESS, Episode
from envsynth.runtime.reward import Effects, compare, effects_of
from envsynth.runtime.state import Rows, read_rows
from envsynth.tasks.model import Call, Task
from envsynth.tasks.planning.oracle import oracle_program
from envsynth.tasks.planning.refs import MISSING, placed, resolve
from envsynth.tasks.state import merged, rows_bytes


def resolved(call: Call, results: list[Any]) -> dict[str, Any]:
    """The call's arguments with its references to earlier results filled in."""
    args = dict(call.args)
    for p, ref in call.refs.items():
        value = resolve(ref, results)
        args[p] = None if value is MISSING else value
    return args


def replay(ep: Episode, calls: list[Call]) -> list[Any] | None:
    """The results of ``calls`` made in turn on the episode, or None when one fails."""
    results: list[Any] = []
    for c in calls:
        res = ep.call(c.tool, resolved(c, results))
        if res.outcome != SUCCESS:
            return None
        results.append(res.data)
    return results


def oracle_results(app: App, task: Task) -> list[Any] | None:
    """The results of the task's oracle on the task's own state (what its refs were made for)."""
    ep = app.episode(rows_bytes(app, merged(task.state.core, task.state.distractors)))
    try:
        return replay(ep, task.oracle)
    finally:
        ep.close()


def placed_replay(ep: Episode, task: Task, before: list[Any] | None) -> tuple[list[Call], list[Any]] | None:
    """The task's oracle made on the episode (its state with a new row in), each ref to a search's item re-placed where
    the search there lists the row it meant (``before``: the oracle's results on the task's state), and its results;
    None when a call fails or a row is no longer listed (not on the search's first page)."""
    if before is None:
        return None
    oracle: list[Call] = []
    results: list[Any] = []
    for call in task.oracle:
        refs = dict(call.refs)
        for p, ref in call.refs.items():
            there = ref if ref.item is None else placed(ref, before[ref.step], results[ref.step])
            if there is None:
                return None
            refs[p] = there
        call = call.model_copy(update={"refs": refs}) if refs != call.refs else call
        res = ep.call(call.tool, resolved(call, results))
        if res.outcome != SUCCESS:
            return None
        oracle.append(call)
        results.append(res.data)
    return oracle, results


def same_outcome(app: App, task: Task, rows: Rows, ep: Episode, results: list[Any]) -> bool:
    """Whether the oracle's run on ``rows`` (``results``, the episode's state after it) makes the task's effects and answer."""
    answer = None
    if task.answer_step is not None and isinstance(results[task.answer_step], dict):
        answer = answer_in(results[task.answer_step], task.answer_field) if task.answer_field else results[task.answer_step]
    effects = effects_of(app.blueprint, rows, read_rows(ep.db, app.blueprint), now=app.now)
    reward = compare(Effects.from_dict(task.expected_effects), effects, expected_answer=task.expected_answer, answer=answer)
    return bool(reward.passed)


def with_oracle(task: Task, oracle: list[Call]) -> dict[str, Any]:
    """The update that gives ``task`` the re-placed ``oracle`` (nothing when it is the task's own)."""
    if oracle == task.oracle:
        return {}
    return {"oracle": oracle, "oracle_program": oracle_program(oracle, task.answer_step, task.answer_field)}


def carried(bp: Blueprint, rows0: Rows, rows: Rows, ent: Any, row0: dict[str, Any]) -> dict[str, Any] | None:
    """A copy of ``row0`` (a new row of state 0) for another state: a fresh id, and each reference to the
    row of this state that has the same values as the row it named in state 0 (None when there is none)."""
    row = dict(row0)
    taken = {r[ent.id_field] for r in rows.get(ent.name, [])} | {r[ent.id_field] for r in rows0.get(ent.name, [])}
    row[ent.id_field] = ValueMaker(bp, len(taken)).new_id(ent, taken)
    for f in ent.fields:
        if f.type != "ref" or row0.get(f.name) is None:
            continue
        target = bp.entity(f.ref or "")
        old = next((r for r in rows0.get(target.name, []) if r[target.id_field] == row0[f.name]), None)
        if old is None:
            return None
        same = [r for r in rows.get(target.name, []) if _same_values(target, r, old)]
        if len(same) != 1:
            return None
        row[f.name] = same[0][target.id_field]
    return row


def _same_values(ent: Any, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two rows hold the same values but for their id and references (one row, its ids renamed)."""
    return all(a.get(f.name) == b.get(f.name) for f in ent.fields[1:] if f.type != "ref")
