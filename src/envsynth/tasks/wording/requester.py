"""Who asks: the requester of a task (a person the task names, or a staff member) and how they open.

Split from :mod:`envsynth.tasks.wording.instruction`, which re-exports these names.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.language import person_name
from envsynth.blueprint.models import Blueprint, Entity, UserRole
from envsynth.tasks.model import UserProfile
from envsynth.tasks.wording.describe import field_words, human, quoted
from envsynth.tasks.wording.words import in_first_person


@dataclass(frozen=True)
class Requester:
    """Who asks: their profile, the table their row is in (None for staff) and how they identify themselves."""

    user: UserProfile
    table: str | None = None
    key: Any = None
    identity: tuple[str, ...] = ()
    made_at: int | None = None  # the step that signs the requester up, when the chain does

    @property
    def staff(self) -> bool:
        return self.table is None


def _role(bp: Blueprint, table: str | None) -> UserRole | None:
    return next((u for u in bp.users if u.entity == table), None)


def profile(
    bp: Blueprint,
    rows: dict[str, list[dict[str, Any]]],
    targets: list[tuple[str, Any]],
    rng: random.Random,
    fake_name: Callable[[], str],
    made: list[tuple[int, str, dict[str, Any], str | None]] | None = None,
) -> Requester:
    """The user: a person the task names (a customer, a member), else a staff member (named by ``fake_name()``).

    ``made`` lists the rows the chain creates, as (step, table, argument values, the action's
    ``say``): a person of a declared role the chain signs up ("sign me up ...") is the one asking. Otherwise the first person among
    the ``targets`` is, people of a declared role (``users``) first. A declared role gives the
    role's words and the values the requester identifies themselves by (``identify_by``); other
    people identify themselves by their unique email or phone, if they have one.
    """
    for step, table, values, say in made or []:
        role = _role(bp, table)
        name_field = person_name(bp.entity(table)) if role else None
        signs_up = say is None or in_first_person(say)  # "sign me up", not "invite {name}"
        if name_field is not None and values.get(name_field) and signs_up:
            return _person(bp, table, values, None, step)
    for table, key in sorted(targets, key=lambda tk: _role(bp, tk[0]) is None):  # declared roles first (a stable sort)
        ent = bp.entity(table)
        if _name_field(bp, ent) is None:
            continue
        row = next((r for r in rows.get(table, []) if r[ent.id_field] == key), None)
        if row is not None:
            return _person(bp, table, row, key, None)
    staff = _role(bp, None)
    role_words = (staff.called or human(staff.role)) if staff else f"{bp.title} staff member"
    return Requester(UserProfile(name=fake_name(), role=role_words, preferences={}))


def identity_fields(bp: Blueprint, ent: Entity) -> set[str]:
    """The fields a person of ``ent`` gives to say who they are: their name and what the app finds them by."""
    name = _name_field(bp, ent)
    return ({name} if name else set()) | set(identify_by(bp, ent))


def identify_by(bp: Blueprint, ent: Entity) -> list[str]:
    """The fields a person of ``ent`` is found by besides their name: their role's ``identify_by``, else a unique email or phone."""
    role = _role(bp, ent.name)
    return role.identify_by if role else [f.name for f in ent.fields if f.unique and f.type in ("email", "phone")]


def _name_field(bp: Blueprint, ent: Entity) -> str | None:
    if _role(bp, ent.name) is not None:
        return person_name(ent)
    label = ent.field(ent.label) if ent.label else None
    return ent.label if label is not None and label.type == "name" else None


def _person(bp: Blueprint, table: str, row: dict[str, Any], key: Any, made_at: int | None) -> Requester:
    """The requester who is ``row`` of ``table`` (an existing row with id ``key``, or one step ``made_at`` creates)."""
    ent = bp.entity(table)
    role = _role(bp, table)
    ident = identify_by(bp, ent)
    user = UserProfile(
        name=row[_name_field(bp, ent) or ""],
        role=(role.called or human(role.role)) if role else human(table),
        email=next((row.get(f.name) for f in ent.fields if f.type == "email"), None),
        phone=next((row.get(f.name) for f in ent.fields if f.type == "phone"), None),
        preferences={f.name: row[f.name] for f in ent.fields if f.type in ("enum", "bool") and row.get(f.name) is not None},
        knows=[f"my {field_words(ent.field(f))} is {quoted(ent.field(f), row[f])}" for f in ident if row.get(f) is not None],
    )
    ids = tuple(quoted(ent.field(f), row[f]) for f in ident if row.get(f) is not None)
    return Requester(user, table, key, ids, made_at)


def greeting(requester: Requester, rng: random.Random) -> str:
    """How a person the task names opens: their name, and what the app finds them by; staff do not introduce themselves."""
    if requester.staff:
        return ""
    name = requester.user.name
    if requester.identity:
        ids = " / ".join(requester.identity)
        return rng.choice((f"Hi, this is {name} ({ids}).", f"Hello, I'm {name}, {ids}.", f"Hi, {name} here ({ids})."))
    return rng.choice((f"Hi, this is {name}.", f"Hello, I'm {name}."))
