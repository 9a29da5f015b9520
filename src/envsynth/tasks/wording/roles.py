"""Who may ask for an action: the ``asked_by`` roles of a blueprint's actions (docs/blueprints.md 10.4).

An action that names the roles asking for it (``asked_by: [staff]``: adding a product to the
catalogue, banning a member) is never the request of another role's user. A chain keeps to
actions one role asks for (the planner offers no step of a role the chain's steps exclude), and
the requester of a chain of staff actions is staff acting on their own authority (the request
names no person they help).
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.models import Blueprint

Roles = frozenset[str] | None
"""A set of roles of ``users``; None: any role."""


def asked_by(bp: Blueprint, tool: str) -> Roles:
    """The roles that ask for ``tool`` (None: any; a tool that is no action of the blueprint has no limit)."""
    action = bp.index.actions.get(tool)
    roles = getattr(action, "asked_by", None)
    return frozenset(roles) if roles else None


def joint(a: Roles, b: Roles) -> Roles:
    """The roles both allow (None when neither limits them)."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def chain_roles(bp: Blueprint, tools: list[str]) -> Roles:
    """The roles that may ask for every tool of a chain (an empty set when none may)."""
    roles: Roles = None
    for tool in tools:
        roles = joint(roles, asked_by(bp, tool))
    return roles


def fits(bp: Blueprint, roles: Roles, tool: str) -> bool:
    """Whether a user of one of ``roles`` may also ask for ``tool``."""
    return joint(roles, asked_by(bp, tool)) != frozenset()


def staff_only(bp: Blueprint, roles: Roles) -> bool:
    """Whether only staff (roles without an entity) may ask: nobody the rows belong to is the requester."""
    return roles is not None and not any(u.entity for u in bp.users if u.role in roles)


def on_own_authority(bp: Blueprint, writes: list[str]) -> bool:
    """Whether a chain's write tools are all ones only staff ask for (adding a product, banning a member): the staff
    member acts for the business, for nobody the rows belong to."""
    return bool(writes) and all(staff_only(bp, asked_by(bp, tool)) for tool in writes)


def people_for(bp: Blueprint, roles: Roles, people: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The candidate requesters ``people`` ((table, key) of rows that are persons) of the tables of ``roles``."""
    if roles is None:
        return people
    tables = {u.entity for u in bp.users if u.role in roles and u.entity}
    return [p for p in people if p[0] in tables]
