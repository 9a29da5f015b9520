"""Who asks and why: the requester's rows, their reason and the scenario a task carries.

The requester is chosen by :func:`envsynth.tasks.wording.instruction.profile`; this module finds
the people a request concerns besides the rows it names (a search's person filter, the
owner of a named row), which named rows are the requester's own, the reason they give,
and the tau2-style :class:`~envsynth.tasks.model.Scenario`.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, id_fields, ref_fields
from envsynth.tasks.model import Call, Scenario
from envsynth.tasks.wording.describe import Description, noun, render, without_owner
from envsynth.tasks.wording.instruction import Requester, refers_to

_WORD = re.compile(r"[a-z]+")


def reason_for(app: App, calls: list[Call], requester: Requester, rng: random.Random) -> str | None:
    """Why a person asks: a reason of the first action of the request that has reasons they could give.

    The reasons an action gives for the parameters the call passes (``reasons_for``: a new email
    is "I changed my email address") come before its other reasons, so a reason never claims a
    change the request does not make.

    Staff give none. A reason that speaks of a third party in a user role's words ("the
    customer says the parcel has arrived", "members have asked") is a staff member's and
    is not given by the person asking.
    """
    if requester.staff:
        return None
    others = {w for u in app.blueprint.users if u.entity for w in ((u.called or u.role).lower(), u.role.lower())}
    others |= {w + "s" for w in others} | {"they", "their", "them"}
    actions = app.blueprint.index.actions
    for c in calls:
        action = actions.get(c.tool)
        given = [r for p, rs in action.reasons_for.items() if p in c.args for r in rs] if action is not None else []
        if action is None or not (given or action.reasons):
            continue
        own = [r for r in given or action.reasons if not others & set(_WORD.findall(r.lower()))]  # "they're" is "they"
        return rng.choice(own) if own else None
    return None


def scenario_of(
    app: App,
    requester: Requester,
    reason: str | None,
    descs: dict[tuple[str, Any], Description],
    mine: frozenset[Any],
    instruction: str,
    kind: str,
    style: str,
    client: str | None = None,
) -> Scenario:
    """The task as the requester brings it: who they are, why, what they can tell and what they cannot.

    ``client`` is whom a staff member acts for, as the request names them ("the customer Ann Lee (ann@example.com)").
    """
    bp = app.blueprint
    user = requester.user
    persona = f"{user.name}, {'a ' if not requester.staff else ''}{user.role} {'of' if not requester.staff else 'at'} {bp.title}"
    if client is not None:
        persona += f", acting for {client}"
    rows = [
        render(bp, without_owner(bp, d, requester.table), possessive="my") if k in mine else render(bp, d)
        for (_t, k), d in descs.items()
        if (_t, k) != (requester.table, requester.key)
    ]
    nouns = sorted({noun(bp.entity(t)) for t, _k in descs})
    unknowns = [f"the internal id of any {n} (they know it only as described)" for n in nouns]
    if kind != "action":
        unknowns.append("the answer to their question: that is what they want to find out")
    return Scenario(
        persona=persona,
        identity=list(requester.identity),
        style=style,
        reason=reason,
        knows=[*user.knows, *([f"I act for {client}"] if client else []), *(f"I mean {r}" for r in rows)],  # as the user says it
        unknowns=unknowns,
        request=instruction,
    )


def people_in_filters(app: App, calls: list[Call]) -> list[tuple[str, Any]]:
    """(table, id) of the people of a declared role whose id a call passes as a plain value (a search's customer filter)."""
    roles = {u.entity for u in app.blueprint.users if u.entity}
    out = []
    for c in calls:
        spec = app.spec_by_name[c.tool]
        bound = {b.param for b in spec.bindings}
        for p in spec.params:
            entity = refers_to(app.blueprint, p)
            if entity in roles and p.name not in bound and isinstance(c.args.get(p.name), str):
                out.append((entity, c.args[p.name]))
    return out


def owners(app: App, rows: Rows, targets: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """(table, id) of the people of a declared role whom the named rows refer to (the customer of an order)."""
    roles = {u.entity for u in app.blueprint.users if u.entity}
    ids = id_fields(app.blueprint)
    out: list[tuple[str, Any]] = []
    for t, k in targets:
        row = next((r for r in rows.get(t, ()) if r[ids[t]] == k), None)
        for f, target in ref_fields(app.blueprint.entity(t)) if row is not None else ():
            if target in roles and row.get(f) is not None and (target, row[f]) not in out:  # type: ignore[union-attr]
                out.append((target, row[f]))  # type: ignore[index]
    return out


def owned(app: App, rows: Rows, table: str, key: Any, requester: Requester) -> bool:
    """Whether row ``key`` of ``table`` refers to the requester (their order, their account)."""
    ids = id_fields(app.blueprint)
    row = next((r for r in rows.get(table, ()) if r[ids[table]] == key), None)
    return row is not None and any(t == requester.table and row.get(f) == requester.key for f, t in ref_fields(app.blueprint.entity(table)))


def acted_for(app: App, rows: Rows, targets: list[tuple[str, Any]], hops: int = 3) -> tuple[str, Any] | None:
    """(table, id) of the person of a declared role the named rows belong to, through up to ``hops`` references.

    A staff member acts for this person (the customer whose card they lock); None when the
    rows belong to nobody (the store's own catalogue).
    """
    roles = {u.entity for u in app.blueprint.users if u.entity}
    ids = id_fields(app.blueprint)
    level = list(targets)
    for _ in range(hops):
        parents: list[tuple[str, Any]] = []
        for t, k in level:
            row = next((r for r in rows.get(t, ()) if r[ids[t]] == k), None)
            for f, target in ref_fields(app.blueprint.entity(t)) if row is not None else ():
                if row.get(f) is not None:  # type: ignore[union-attr]
                    parents.append((target, row[f]))  # type: ignore[index]
        hit = next((p for p in parents if p[0] in roles), None)
        if hit is not None:
            return hit
        level = parents
    return None
