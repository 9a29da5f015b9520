"""Stage 7, admit: a task state and its request -> a sealed Task, admitted or rejected with the reason.

After admission, variant stages (:data:`envsynth.tasks.synth.VARIANTS`) may turn the
admitted task into a variant (each is admitted again on its own state before it is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.reward import Effects, compare, effects_of
from envsynth.runtime.state import Rows
from envsynth.tasks.admission.baselines import first_candidate_wins, guessed_by
from envsynth.tasks.admission.coherence import first_defect
from envsynth.tasks.admission.findable import requester_findable
from envsynth.tasks.admission.solvable import Route
from envsynth.tasks.building.instantiate import ChainFailed, Run, Workspace, execute
from envsynth.tasks.building.states import Descriptions, TaskStateDraw
from envsynth.tasks.building.world import Instance
from envsynth.tasks.model import Call, Ref, Rejection, RejectionReason, Task, TaskState
from envsynth.tasks.planning.answer import Question, extract
from envsynth.tasks.planning.oracle import oracle_program
from envsynth.tasks.planning.refs import MISSING, resolve
from envsynth.tasks.state import count_rows
from envsynth.tasks.wording.request import Request


@dataclass(frozen=True)
class Admitted:
    """An admitted task and the full initial state (core plus distractors) it was admitted on.

    Attributes:
        task: the task.
        state: its full initial state.
        descs: the request's description of each row it names, by the row's key in this state.
        routes: the route that finds each of those rows, when known (state 0's, found by the scenario stage).
        lookups: the oracle steps the variants added to find rows (reads of s0, see :func:`vary`).
        runs: per lookup step, in order, the call as run (refs filled in) and its result on ``state``, when the
            variant that made the lookups ran them in ``workspace`` (so :func:`vary` need not run them again).
        workspace: one with ``state`` loaded, while :func:`vary` runs (the variants may run reads in it).
    """

    task: Task
    state: Rows
    descs: Descriptions = field(default_factory=dict)
    routes: dict[tuple[str, Any], Route] = field(default_factory=dict)
    lookups: tuple[int, ...] = ()
    workspace: Workspace | None = None
    runs: tuple[tuple[Call, Any], ...] = ()


Variant = Callable[[App, Admitted], "Admitted | Rejection"]
"""A stage after admission: an admitted task -> a variant of it (admitted anew when its task changed), or a Rejection."""


def admit_state(
    inst: Instance, draw: TaskStateDraw, question: Question, request: Request, expected: Effects, answer: Any
) -> Admitted | Rejection:
    """The task of one state, admitted (see :func:`admit`; :func:`vary` seals it)."""
    plan = inst.plan
    task = _task(inst, draw, question, request, expected, answer)
    problem = admit(plan.app, task, draw.full, draw.check, expected if draw.check is draw.run else None, expected)
    if problem:  # an incoherent state's rejection says what the linter found (attempts.jsonl's detail)
        return plan.reject(problem, (first_defect(task, plan.app.blueprint) or "") if problem == "incoherent_state" else "")
    descs = dict(zip(draw.targets, draw.descs.values(), strict=True))
    return Admitted(task, draw.full, descs, request.routes if draw.index == 0 else {})


def branch_of(admitted: Admitted, cond: Any, index: int) -> Admitted:
    """A conditional goal's task of state ``index`` (building/conditional.py): its branch in ``stats`` (``act`` or
    ``tell``), and a telling state's task an information task (the oracle reads; the answer is the row's state)."""
    acts = cond.acts(index)
    update: dict[str, Any] = {"stats": {**admitted.task.stats, "conditional": "act" if acts else "tell"}}
    if not acts:
        update["kind"] = "info"
    return replace(admitted, task=admitted.task.model_copy(update=update))


def vary(app: App, admitted: Admitted, variants: tuple[Variant, ...], workspace: Workspace | None = None) -> Admitted | Rejection:
    """``admitted`` through each of ``variants``, sealed (:meth:`Task.sealed`: the task is hashed once, here); a task
    some variant changed must pass :func:`admit` on its state (once, after the last variant; run in ``workspace`` when
    given, which must have that state loaded, else in a workspace of its own: no other workspace may be open then).
    """
    original = admitted.task
    admitted = replace(admitted, workspace=workspace)
    changed: list[str] = []
    for variant in variants:
        out = variant(app, admitted)
        if isinstance(out, Rejection):
            return out
        if out.task is not admitted.task and out.task != admitted.task:  # a variant that changes nothing returns its input
            changed.append(getattr(variant, "__name__", str(variant)))
        admitted = out
    task = admitted.task.sealed()
    if not changed or admitted.task == original:
        return Admitted(task, admitted.state, admitted.descs, lookups=admitted.lookups)
    found = _looks_up(app, original, task, admitted, workspace) if workspace is not None else None
    if found is not None:
        by_step = dict(zip(sorted(admitted.lookups), (result for _, result in found), strict=True))
        if first_candidate_wins(task.oracle, by_step.get):
            return Rejection(app=app.name, coordinates=task.coordinates, reason="guessable", detail="first candidate")
    if found is None:
        problem = admit(app, task, admitted.state, workspace=workspace)
        if problem:
            return Rejection(app=app.name, coordinates=task.coordinates, reason=problem, detail=f"variant {', '.join(changed)}")
        return Admitted(task, admitted.state, admitted.descs, lookups=admitted.lookups)
    return Admitted(task, admitted.state, admitted.descs, lookups=admitted.lookups, runs=found)


def _looks_up(app: App, original: Task, varied: Task, admitted: Admitted, workspace: Workspace) -> tuple[tuple[Call, Any], ...] | None:
    """Whether ``varied`` is the admitted ``original`` with lookups at oracle steps ``admitted.lookups``: generated reads
    (they write and draw nothing) of tables no earlier call of the original writes, whose refs point at earlier lookups,
    and that, run on the state loaded in ``workspace`` (or as ``admitted.runs`` records), give the ids the original calls
    pass, with the same expected outcome and every oracle tool visible. Such a task scores as the original does, so it
    needs no replay of its own.

    Returns:
        when it is: per lookup, in order, the call as it ran (refs filled in) and its result; else None.
    """
    steps = admitted.lookups
    looks = sorted(steps)
    rest = [i for i in range(len(varied.oracle)) if i not in steps]
    if not looks or len(rest) != len(original.oracle) or looks[-1] >= len(varied.oracle):
        return None
    answer_step = None if original.answer_step is None else rest[original.answer_step]
    same_outcome = (varied.answer_step, varied.answer_field, varied.expected_answer, varied.expected_effects) == (
        answer_step,
        original.answer_field,
        original.expected_answer,
        original.expected_effects,
    )
    if not same_outcome or not {c.tool for c in varied.oracle} <= set(varied.visible_tools):
        return None
    at = {step: j for j, step in enumerate(looks)}  # a lookup's place among the lookups
    lookups = _reads_of_s0(app, varied.oracle, at, rest)
    if lookups is None:
        return None
    results = _lookup_results(lookups, admitted.runs, workspace)
    if results is None:
        return None
    old_step = {new: old for old, new in enumerate(rest)}
    if not all(resolves_to(varied.oracle[new], original.oracle[old], results, at, old_step) for new, old in old_step.items()):
        return None
    ran = [Call(tool=c.tool, args={**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}}) for c in lookups]
    return tuple(zip(ran, results, strict=True))


def _reads_of_s0(app: App, oracle: list[Call], at: dict[int, int], rest: list[int]) -> list[Call] | None:
    """The lookups of ``oracle`` (step -> place: ``at``), their refs moved to their places among them, or None unless
    each is a generated read, refers only to earlier lookups, and follows no call that writes a table it reads."""
    lookups = []
    for step in at:
        c, spec = oracle[step], app.spec_by_name[oracle[step].tool]
        if spec.code is not None or spec.mode != "read" or any(r.step not in at or r.step >= step for r in c.refs.values()):
            return None
        if any(written_tables(app, oracle[i].tool) & {spec.entity, *spec.reads} for i in rest if i < step):
            return None  # an earlier write could change what it finds: not a read of s0
        moved = {p: Ref(step=at[r.step], field=r.field, item=r.item) for p, r in c.refs.items()}
        lookups.append(c.model_copy(update={"refs": moved}) if moved else c)
    return lookups


def _lookup_results(lookups: list[Call], runs: tuple[tuple[Call, Any], ...], workspace: Workspace) -> list[Any] | None:
    """What ``lookups`` (refs to their own places) return on the loaded state: ``runs``' results when each lookup, its
    refs filled in from them, is the call run there; else run in ``workspace``; None when a lookup fails."""
    results = [r for _, r in runs]
    if len(runs) == len(lookups) and all(
        c.tool == ran.tool and {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}} == ran.args
        for c, (ran, _) in zip(lookups, runs, strict=True)
    ):
        return results
    try:
        return workspace.run(lookups, seed=1).results
    except ChainFailed:
        return None


def written_tables(app: App, tool: str) -> set[str]:
    """The tables a call of ``tool`` may change (all of them for a tool with code of its own)."""
    spec = app.spec_by_name[tool]
    if spec.code is not None:
        return {e.name for e in app.blueprint.entities}
    return {*spec.writes, *spec.creates, *spec.deletes}


def resolves_to(new: Call, old: Call, lookups: list[Any], at: dict[int, int], old_step: dict[int, int]) -> bool:
    """Whether ``new`` makes the same call as ``old`` once the lookups' results (``at``: step -> place) fill it in and
    its other refs point back at the original's steps (``old_step``)."""
    args = dict(new.args)
    later = {}
    for p, ref in new.refs.items():
        if ref.step in at:
            value = resolve(Ref(step=at[ref.step], field=ref.field, item=ref.item), lookups)
            if value is MISSING:
                return False
            args[p] = value
        elif ref.step in old_step:
            later[p] = Ref(step=old_step[ref.step], field=ref.field, item=ref.item)
        else:
            return False
    return new.tool == old.tool and args == old.args and later == dict(old.refs)


def _task(inst: Instance, draw: TaskStateDraw, question: Question, request: Request, expected: Effects, answer: Any) -> Task:
    plan, calls = inst.plan, draw.calls
    app, s = plan.app, draw.index
    extra = draw.extra
    return Task(
        id=f"{app.name}-t{plan.coords.task:05d}-s{s}",
        app=app.name,
        kind=plan.kind,
        instruction=request.instruction,
        user=request.user,
        scenario=request.scenario,
        state=TaskState(core=nonempty(draw.core), distractors=nonempty(extra), distractor_depth=draw.per_level),
        oracle=calls,
        oracle_program=oracle_program(calls, question.step, question.field),
        answer_step=question.step,
        answer_field=question.field,
        expected_answer=answer,
        expected_effects=expected.to_dict(),
        visible_tools=request.visible,
        coordinates=plan.coords.model_copy(update={"state": s}),
        seed=plan.base,
        stats={
            "chain_length": len(calls),
            "writes": sum(app.spec_by_name[c.tool].mode == "write" for c in calls),
            "core_rows": count_rows(draw.core),
            "distractor_rows": count_rows(extra),
            "visible_tools": len(request.visible),
        },
    )  # sealed by vary(), after the variant stages


def nonempty(rows: Rows) -> Rows:
    """``rows`` without its empty tables."""
    return {k: v for k, v in rows.items() if v}


def admit(
    app: App,
    task: Task,
    s0: Rows,
    replay: Run | None = None,
    replay_effects: Effects | None = None,
    expected: Effects | None = None,
    workspace: Workspace | None = None,
) -> RejectionReason | None:
    """The admission rule; None when admitted, else the reason.

    The verifier must fail on s0 (a do-nothing agent scores 0), the requester must be findable
    (:mod:`envsynth.tasks.admission.findable`), no other guessing baseline
    may score 1 (:mod:`envsynth.tasks.admission.baselines`), every oracle tool must be
    visible, and the oracle, replayed with another episode seed than the one the chain
    was built with (so generated ids differ, and an oracle that hard-codes an id the
    chain itself created fails), must score 1.0. ``replay`` is that run when the caller
    already made it (seed 1 on s0; for a chain that draws no ids, any seed's run), and
    ``replay_effects`` its effects on s0 when those are known too. ``expected`` is the
    task's expected effects as :class:`Effects`, when the caller has them at hand.
    ``workspace`` is one with s0 loaded to replay in (else s0 is loaded anew).
    """
    if expected is None:
        expected = Effects.from_dict(task.expected_effects)
    # doing nothing scores 0 exactly when some effect or an answer is expected (see runtime.reward.compare)
    if not expected and task.expected_answer is None:
        return "verifier_passes_on_s0"
    if not {c.tool for c in task.oracle} <= set(task.visible_tools):
        return "tool_not_visible"
    if first_defect(task, app.blueprint) is not None:
        return "incoherent_state"  # the state linter finds a row a reader would find odd (envsynth.tasks.admission.coherence)
    if not requester_findable(app.blueprint, task, s0):
        return "requester_not_findable"  # namesakes of the requester, nothing said tells them apart (admission/findable.py)
    run = replay
    if run is None:
        try:
            run = workspace.run(list(task.oracle), seed=1) if workspace is not None else execute(app, s0, list(task.oracle), seed=1)
        except ChainFailed:
            return "oracle_fails"
    actual = replay_effects if replay_effects is not None and replay is not None else effects_of(app.blueprint, s0, run.final, now=app.now)
    answer = extract(run.results, task.answer_step, task.answer_field)
    if compare(expected, actual, expected_answer=task.expected_answer, answer=answer).score != 1.0:
        return "oracle_not_rewarded"
    if guessed_by(app, task, lambda step: run.results[step]) is not None:
        return "guessable"  # a guessing baseline scores 1 (tasks/admission/baselines.py)
    return None
