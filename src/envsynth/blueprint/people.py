"""The people every app draws the rows of its users from, so that one person is a customer of two apps.

SynthAPI's apps and Gaia2's scenarios share their people: the customer of a shop is the account
holder of a bank and a member of a gym, under the same name and email. Every app's user tables
(the ``entity`` of a ``users`` role: customers, members, listeners) draw their rows' name, email and
phone from one fixed list of :data:`PEOPLE` persons, each person once per state. Two apps of a
corpus with 40 users each then share about 40 * 40 / PEOPLE of them. Staff tables (instructors,
agents) and a field with its own generator are drawn as before.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache

from envsynth.blueprint.models import Blueprint, FieldDef

PEOPLE = 240
"""How many persons the shared list holds: more than any catalogue app has users, few enough that apps
share some."""
SHARED_TYPES = frozenset(("name", "email", "phone"))
"""The field types a user row takes from its person."""
_SEED = 5309
_DOMAINS = ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com")
_NOT_LOCAL = re.compile(r"[^a-z]")


@dataclass(frozen=True)
class Person:
    """One person of the shared list: the same name, email and phone in every app they use."""

    name: str
    email: str
    phone: str


@lru_cache(maxsize=1)
def people() -> tuple[Person, ...]:
    """The shared persons, the same list in every process (a fixed seed), each name and email once."""
    from faker import Faker

    fake, rng = Faker("en_US"), random.Random(_SEED)
    out: list[Person] = []
    names: set[str] = set()
    while len(out) < PEOPLE:
        fake.seed_instance(rng.getrandbits(32))
        first, last = fake.first_name(), fake.last_name()
        name = f"{first} {last}"
        if name in names:
            continue
        names.add(name)
        local = f"{_NOT_LOCAL.sub('', first.lower())}.{_NOT_LOCAL.sub('', last.lower())}{rng.randint(1, 99)}"
        phone = f"+1-{rng.randint(200, 989)}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}"
        out.append(Person(name, f"{local}@{rng.choice(_DOMAINS)}", phone))
    return tuple(out)


@lru_cache(maxsize=1)
def by_name() -> dict[str, Person]:
    """The shared persons by name."""
    return {p.name: p for p in people()}


def shared_fields(bp: Blueprint) -> dict[int, str]:
    """The fields (by ``id``) whose values come from a person, with each one's type: the name, email and
    phone fields drawn without a generator of their own (:func:`_shared`) of every table a ``users`` role is a row of."""
    tables = {u.entity for u in bp.users if u.entity is not None}
    return {id(f): f.type for e in bp.entities if e.name in tables for f in e.fields if _shared(f)}


def _shared(f: FieldDef) -> bool:
    """Whether ``f`` is drawn as a plain name, email or phone (no generator, or a name's ``faker: name``)."""
    if f.type not in SHARED_TYPES:
        return False
    g = f.gen
    return g is None or (f.type == "name" and g.faker == "name" and not g.args and g.kind == "faker" and not g.when)
