"""Stages 5 and 6, describe and scenario: the targets of state 0 -> descriptions, then the request.

Describe names every row the request must name by facts no other row of the state shares
(it judges state 0's draws of distractors, see :mod:`envsynth.tasks.building.states`). Scenario
finds who is asking, phrases the request in their words, checks that the agent can solve
it from what it states (:mod:`envsynth.tasks.admission.solvable`), and writes the tau2-style scenario.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from envsynth.runtime.answerpath import group_of
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, id_fields
from envsynth.tasks.admission.solvable import Route, lookups
from envsynth.tasks.building.core import row_asked_of
from envsynth.tasks.building.states import Describer, Descriptions, TaskStateDraw
from envsynth.tasks.building.world import Instance, staff_names
from envsynth.tasks.model import Call, Rejection, Scenario, UserProfile
from envsynth.tasks.planning.answer import Question
from envsynth.tasks.wording.conditional import conditional_clause
from envsynth.tasks.wording.describe import Description, describe
from envsynth.tasks.wording.foreach import for_each_clause, said_of_many
from envsynth.tasks.wording.frames import STYLES
from envsynth.tasks.wording.instruction import Phraser, Requester, compose, greeting, leaks_id, profile
from envsynth.tasks.wording.roles import chain_roles, on_own_authority, people_for
from envsynth.tasks.wording.scenario import acted_for, owned, owners, people_in_filters, reason_for, scenario_of


@dataclass(frozen=True)
class Request:
    """What the user asks: the instruction, who they are, their scenario, the tools the agent sees, and the route
    that finds each row it names in state 0 (:mod:`envsynth.tasks.admission.solvable`)."""

    instruction: str
    user: UserProfile
    scenario: Scenario
    visible: list[str]
    routes: dict[tuple[str, Any], Route] = field(default_factory=dict)


def describer(app: App, question: Question, by_comparison: Mapping[tuple[str, Any], str] | None = None) -> Describer:
    """The describe stage for :func:`~envsynth.tasks.building.states.draw_state`: a description per target, or None.

    ``by_comparison``: targets to name as the most recent or oldest of their owner's rows where that singles them out
    (the rows :mod:`envsynth.tasks.building.siblings` gave siblings), each with the reference to that owner.
    """
    by_comparison = by_comparison or {}

    def describe_targets(full: Rows, targets: list[tuple[str, Any]], rng: random.Random) -> Descriptions | None:
        ids = id_fields(app.blueprint)
        descs: Descriptions = {}
        for t, k in targets:
            row = next(r for r in full[t] if r[ids[t]] == k)
            d = describe(app.blueprint, full, t, row, rng, avoid=question.avoid.get((t, k), ()), most_by=by_comparison.get((t, k)))
            if d is None:
                return None
            descs[(t, k)] = d
        return descs

    return describe_targets


def request_of(inst: Instance, draw: TaskStateDraw, question: Question, visible: list[str], answer: Any = None) -> Request | Rejection:
    """The request of state 0: who asks, in their words, solvable from what it states (or why not).

    ``answer`` is the answer to the request's question (None for none); a request that says it is rejected.
    """
    plan, calls, full, rng = inst.plan, inst.calls, draw.full, draw.rng
    app, descs, targets = plan.app, draw.descs, draw.targets
    # "my orders": a search or count over a person's rows, then the owners of the rows the request names
    roles = chain_roles(app.blueprint, [c.tool for c in calls])  # an action only staff ask for: staff asks
    people = people_for(app.blueprint, roles, targets + people_in_filters(app, calls) + owners(app, full, targets))
    made = [m for m in _made(app, calls) if people_for(app.blueprint, roles, [(m[1], None)])]
    requester = profile(app.blueprint, full, people, rng, lambda: random.Random(plan.base).choice(staff_names(app)), made)
    me = descs.get((requester.table, requester.key)) if not requester.staff else None
    mine = frozenset(k for t, k in targets if requester.key is not None and owned(app, full, t, k, requester))
    phraser = Phraser(app.blueprint, app.spec_by_name, rng, me, requester.key, requester.made_at, mine, requester.table)
    helped = _client_row(app, full, targets, requester, calls)
    if helped is not None:  # named in the opening ("I'm helping our fan X"): the clauses say "that fan"
        phraser.told(helped, full)
    params = _param_descriptions(app, calls, descs)
    _add_asked_rows(inst, calls, question, targets, descs, params)
    n_writes = len(calls) - (1 if question.step is not None else 0)
    fe = inst.for_each
    if fe is not None:  # "cancel all my pending orders" (tasks/wording/foreach.py)
        each = for_each_clause(phraser, fe, calls, params[fe.write]) if requester.key == fe.owner else None
        if each is None:
            return plan.reject("target_not_describable", "the rows of a for-each goal")
        clauses = [each]
    elif inst.conditional is not None:  # the read is implied: "cancel ... if it is still pending; otherwise ..."
        clause = phraser.clause(1, calls, params[1])
        clauses = [conditional_clause(app.blueprint, inst.conditional, clause, rng.randrange(3))]
    else:
        clauses = [phraser.clause(i, calls, params[i]) for i in range(n_writes)]
    asked = phraser.question(calls[question.step], question.field, params[question.step], calls) if question.step is not None else None
    opening, reason, client = _opening(inst, full, helped, requester, rng)
    style = rng.choice(STYLES)
    starts = frozenset(i for i in range(1, len(clauses)) if i < len(plan.steps) and plan.steps[i].goal > plan.steps[i - 1].goal)
    instruction = compose(clauses, asked, rng, opening.strip(), style, starts)
    if leaks_id(instruction):
        return plan.reject("id_in_instruction", instruction)
    if says_answer(instruction, answer) or _set_by_request(calls, answer):
        return plan.reject("answer_in_question", instruction)
    found = lookups(app, full, descs, requester)
    if found.lost:
        return plan.reject("not_solvable", f"nothing the request states finds {found.lost[0]}")
    visible = [*visible, *(t for t in found.tools if t not in visible)]  # the tools that find them are visible
    scenario = scenario_of(app, requester, reason, descs, mine, instruction, plan.kind, style, client[1] if client else None)
    user = requester.user.model_copy(update={"knows": [instruction, *requester.user.knows]})
    return Request(instruction, user, scenario, visible, found.routes)


def says_answer(text: str, answer: Any) -> bool:
    """Whether ``text`` states ``answer`` (a text of 3+ characters, a date, or a number of 2+ digits, as a person writes it)."""
    if isinstance(answer, bool) or answer is None:
        return False
    if isinstance(answer, (float, int)):
        forms = [str(answer), f"{answer:,}", f"{answer:,.2f}"] if abs(answer) >= 10 else []
    elif isinstance(answer, str) and len(answer) >= 3:
        forms = [answer, answer.replace("_", " ")]
        with contextlib.suppress(ValueError):  # a date is written as a person writes it
            day = date.fromisoformat(answer[:10])
            forms.append(f"{day:%B} {day.day}, {day.year}")
    else:
        return False
    low = text.lower()
    return any(_stated_in(low, f.lower()) for f in forms)


def _stated_in(text: str, form: str) -> bool:
    r"""Whether ``form`` occurs in ``text`` on its own: what ``re.search(rf"(?<![\w.,]){re.escape(form)}(?![\w]|[.,]\d)", text)``
    finds (no word character, ``.`` or ``,`` just before; no word character, nor ``.`` or ``,`` then a digit, just after),
    without compiling a pattern per answer."""
    n = len(form)
    at = text.find(form)
    while at >= 0:
        before, after = text[at - 1 : at], text[at + n : at + n + 2]
        if not (at and (_word(before) or before in ".,")) and not (
            after and (_word(after[0]) or (after[0] in ".," and after[1:].isdecimal()))
        ):
            return True
        at = text.find(form, at + 1)
    return False


def _word(ch: str) -> bool:
    r"""Whether the character ``ch`` is one ``\w`` matches (in a str pattern)."""
    return ch.isalnum() or ch == "_"


def _set_by_request(calls: list[Call], answer: Any) -> bool:
    """Whether the answer is a value the request itself passes to a call (the 3 credits it gives)."""
    if answer is None or isinstance(answer, (bool, list, dict)):
        return False
    return any(v == answer and not isinstance(v, bool) for c in calls for v in c.args.values())


def _opening(
    inst: Instance, full: Rows, helped: tuple[str, Any] | None, requester: Requester, rng: random.Random
) -> tuple[str, str | None, tuple[str, str] | None]:
    """How the request opens (who asks, why, for whom, the goal of a workflow), the reason and the client (see :func:`_client`;
    ``helped``: the person a staff member acts for, :func:`_client_row`)."""
    app, flow = inst.plan.app, inst.plan.workflow
    if flow is not None and flow.reasons and not requester.staff:
        reason: str | None = rng.choice(flow.reasons)
    else:
        reason = reason_for(app, inst.calls, requester, rng)
    if inst.for_each is not None and reason is not None and not said_of_many(reason):
        reason = None  # "I'd like to stop it before it ships" is said of one order, not of all of them
    client = None if helped is None else _client(app, full, helped, rng)
    opening = greeting(requester, rng) + (f" {reason[0].upper()}{reason[1:]}." if reason else "")
    opening += f" I'm helping {client[0]}." if client is not None else ""
    opening += f" I'd like to {flow.name}." if flow is not None else ""
    return opening, reason, client


def _client_row(app: App, full: Rows, targets: list[tuple[str, Any]], requester: Requester, calls: list[Call]) -> tuple[str, Any] | None:
    """(table, id) of the person the opening says a staff member acts for (:func:`_client`), or None."""
    writes = [c.tool for c in calls if app.spec_by_name[c.tool].mode == "write"]
    if not requester.staff or on_own_authority(app.blueprint, writes):
        return None
    return acted_for(app, full, targets)


def _client(app: App, full: Rows, owner: tuple[str, Any], rng: random.Random) -> tuple[str, str]:
    """Whom a staff member acts for, ``owner`` (:func:`_client_row`), as (the words the request uses, the scenario's words):
    the person of a declared role the named rows belong to, named with what the app finds them by.
    """
    person = profile(app.blueprint, full, [owner], rng, lambda: "")
    role = next(u for u in app.blueprint.users if u.entity == owner[0])
    who = f"{role.called or role.role.replace('_', ' ')} {person.user.name}"
    ids = f" ({' / '.join(person.identity)})" if person.identity else ""
    return f"our {who}{ids}", f"the {who}{ids}"


def _made(app: App, calls: list[Call]) -> list[tuple[int, str, dict[str, Any], Any]]:
    """(step, entity, arguments, the action's words) of the calls that create a row."""
    actions = app.blueprint.index.actions
    return [
        (i, app.spec_by_name[c.tool].entity, c.args, actions[c.tool].say if c.tool in actions else None)
        for i, c in enumerate(calls)
        if app.spec_by_name[c.tool].kind == "create"
    ]


def _add_asked_rows(
    inst: Instance,
    calls: list[Call],
    question: Question,
    targets: list[tuple[str, Any]],
    descs: dict[tuple[str, Any], Description],
    params: list[dict[str, Description]],
) -> None:
    """Add to the calls' ``params`` the descriptions of the rows their questions are about: the row a count of its rows
    names (under its filter parameter: "the playlist ..."), and the row an asked group is of (under the grouping field)."""
    for i, st in enumerate(inst.plan.steps):
        asked_of = row_asked_of(inst.plan.app, st, calls[i]) if i < len(calls) else None
        if asked_of is not None and asked_of[1:] in descs:
            params[i][asked_of[0]] = descs[asked_of[1:]]
    group = group_of(question.field) if question.field else None
    if question.step is not None and group is not None and question.group_row is not None and targets[question.group_row] in descs:
        params[question.step][group[0]] = descs[targets[question.group_row]]


def _param_descriptions(app: App, calls: list[Call], descs: dict[tuple[str, Any], Description]) -> list[dict[str, Description]]:
    """Per call, the description of each pre-existing row an id parameter names."""
    out = []
    for c in calls:
        spec = app.spec_by_name[c.tool]
        d = {}
        for b in spec.bindings:
            if b.param and not b.many and b.param in c.args and (b.entity, c.args[b.param]) in descs:
                d[b.param] = descs[(b.entity, c.args[b.param])]
            elif b.many and b.item is None and isinstance(ids := c.args.get(b.param or ""), list) and ids:
                if all((b.entity, k) in descs for k in ids):  # a list of ids: every row it names, described
                    d[b.param or ""] = [descs[(b.entity, k)] for k in ids]  # type: ignore[assignment]
        out.append(d)
    return out
