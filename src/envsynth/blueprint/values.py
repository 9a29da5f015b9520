"""Synthetic values for blueprint fields: seeded Faker plus the blueprint's generators."""

from __future__ import annotations

import datetime as dt
import random
import re
from functools import lru_cache
from typing import Any

from envsynth.blueprint.models import Blueprint, Entity, FieldDef, Generator
from envsynth.blueprint.people import PEOPLE, by_name, people, shared_fields

_OFFSET = re.compile(r"^([+-]?\d+)([dwmy])$")
_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
_DIGITS = "0123456789"
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"
# free mail domains for emails made from a person's name (what Faker's free_email_domain offers for en_US)
_EMAIL_DOMAINS = ("gmail.com", "yahoo.com", "hotmail.com")


@lru_cache(maxsize=1)
def _faker_instance() -> Any:
    from faker import Faker

    return Faker("en_US")


_NOT_LOCAL = re.compile(r"[^a-z.]")
_DOTS = re.compile(r"\.{2,}")
EMAIL_NAMES = 128


@lru_cache(maxsize=1)
def email_names() -> tuple[str, ...]:
    """Person names for emails of rows that name nobody (drawn once per process with a fixed seed:
    the same list everywhere; a Faker email per value is slow)."""
    rng = random.Random(7727)
    fake = _faker_instance()
    names = []
    for _ in range(EMAIL_NAMES):
        fake.seed_instance(rng.getrandbits(32))
        names.append(f"{fake.first_name()} {fake.last_name()}")
    return tuple(names)


def faker_provider_exists(name: str) -> bool:
    """Whether Faker (en_US) has a provider of this name."""
    return callable(getattr(_faker_instance(), name, None))


TIMES_A_DAY = 15 * 4
"""Times of day a drawn datetime takes: every quarter hour from 07:00 to 21:45 (see ``_with_time``)."""


def offset_days(spec: str) -> int:
    """A date offset (``-30d``, ``+2w``, ``-1y``) as days."""
    return _offset_days(spec)


@lru_cache(maxsize=1024)
def _offset_days(spec: str) -> int:  # (a bounded memo per offset text: drawing a date reads its two offsets)
    m = _OFFSET.match(spec.strip())
    if not m:
        raise ValueError(f"bad date offset {spec!r}; use forms like -30d, +2w, -1y")
    return int(m.group(1)) * _DAYS[m.group(2)]


class ValueMaker:
    """Draws field values; every draw comes from one ``random.Random`` stream.

    Faker is reseeded from that stream before each Faker call, so results depend only
    on the seed and the order of draws.
    """

    def __init__(self, bp: Blueprint, seed: int) -> None:
        self.bp = bp
        self.rng = random.Random(seed)
        self.ref_day = dt.date.fromisoformat(bp.reference_date)
        self._fake = _faker_instance()
        self._shared = shared_fields(bp)  # users' name, email and phone fields: drawn from the shared persons
        self._people_taken: set[str] = set()

    def shares(self, f: FieldDef) -> bool:
        """Whether field ``f`` of this blueprint takes its value from a shared person (a user's name, email or phone)."""
        return id(f) in self._shared

    def has_person(self, name: Any) -> bool:
        """Whether a row of this state already is the person called ``name``."""
        return name in self._people_taken

    def take_person(self, name: Any) -> None:
        """Note that a row of this state already is the person called ``name``: no other row is drawn as them."""
        if self._shared and isinstance(name, str):
            self._people_taken.add(name)

    def user_name(self) -> str:
        """The name of a shared person (:mod:`envsynth.blueprint.people`) no row of this state is yet, or a
        fresh name (none of theirs) once three quarters of them are."""
        below, everyone, taken = self.rng._randbelow, people(), self._people_taken
        if len(taken) < PEOPLE * 3 // 4:
            while (name := everyone[below(PEOPLE)].name) in taken:
                pass
        else:  # a fresh name, never one of the list's (that person's email is theirs)
            for _ in range(20):
                if (name := self.person_name()) not in taken and name not in by_name():
                    break
        taken.add(name)
        return name

    def fake(self, provider: str, **args: Any) -> Any:
        self._fake.seed_instance(self.rng.getrandbits(32))
        return getattr(self._fake, provider)(**args)

    def person_name(self) -> str:
        """A first and a last name, as people give them: never Faker's prefixes or suffixes ("Dr.", "MD", "Jr.")."""
        self._fake.seed_instance(self.rng.getrandbits(32))
        return f"{self._fake.first_name()} {self._fake.last_name()}"

    def draw_gen(self, g: Generator, f: FieldDef | None = None) -> Any:
        if g.faker == "name" and not g.args:
            return self.person_name()
        if g.faker is not None:
            v = self.fake(g.faker, **g.args)
            if isinstance(v, str):
                v = v.replace("\n", ", ")
            return v
        if g.choice is not None:
            return self.rng.choices(g.choice, weights=g.weights)[0] if g.weights else self.rng.choice(g.choice)
        if g.range is not None:
            lo, hi = g.range
            if f is not None and f.type in ("int", "quantity"):
                return self.rng.randint(int(lo), int(hi))
            return round(self.rng.uniform(lo, hi), 2)
        if g.template is not None:
            return g.template.format(**{k: self.draw_gen(p) for k, p in g.parts.items()})
        if g.bothify is not None:
            return self.bothify(g.bothify)
        if g.dates is not None:
            a, b = (_offset_days(s) for s in g.dates)
            day = self.ref_day + dt.timedelta(days=self.rng.randint(min(a, b), max(a, b)))
            if f is not None and f.type == "datetime":
                return self._with_time(day)
            return day.isoformat()
        raise AssertionError("generator without a kind")  # pragma: no cover

    def bothify(self, pattern: str) -> str:
        """``pattern`` with each ``#`` a digit and each ``?`` a capital letter (no I or O), drawn from this stream."""
        below = self.rng._randbelow  # what rng.choice draws with
        return "".join(_DIGITS[below(10)] if c == "#" else _LETTERS[below(len(_LETTERS))] if c == "?" else c for c in pattern)

    def _with_time(self, day: dt.date) -> str:
        return f"{day.isoformat()}T{self.rng.randint(7, 21):02d}:{self.rng.choice((0, 15, 30, 45)):02d}:00"

    def value(self, f: FieldDef, row: dict[str, Any] | None = None) -> Any:
        """A fresh value for field ``f`` (``row``: fields drawn so far, for derived emails)."""
        if self._shared and id(f) in self._shared:
            return self._of_person(f.type, row)
        if f.gen is not None and f.gen.kind not in (None, "after", "before", "compute"):  # drawn from the row (correlate.derive)
            v = self.draw_gen(f.gen, f)
            return self._clamp(f, v)
        t = f.type
        if t in _TEXT_TYPES:
            return self._text(t, row)
        if t in ("enum", "state"):
            return self.rng.choice(f.choices or [])
        if t == "bool":
            return self.rng.random() < 0.5
        if t in ("int", "quantity", "money", "float"):
            return self._number(f)
        if t == "date":
            return (self.ref_day + dt.timedelta(days=self.rng.randint(-365, 120))).isoformat()
        if t == "datetime":
            return self._with_time(self.ref_day + dt.timedelta(days=self.rng.randint(-365, 120)))
        raise ValueError(f"no value maker for type {t}")  # id and ref are drawn by the state builder

    def _of_person(self, t: str, row: dict[str, Any] | None) -> str:
        """A user row's name, email or phone: a shared person's, the same person's as the row's name."""
        if t == "name":
            return self.user_name()
        names = _name_fields(row)  # the row's shared person, among its name fields (a business row's owner_name, not its business_name)
        person = next(
            (p for k, v in (row or {}).items() if k in names and isinstance(v, str) and (p := by_name().get(v)) is not None), None
        )
        if person is None:
            return self._text(t, row)
        return person.email if t == "email" else person.phone

    def _text(self, t: str, row: dict[str, Any] | None) -> str:
        """A value of a text type: Faker's, or an email or phone number made here."""
        if t == "name":
            return self.person_name()
        if t == "email":
            return self._email(row)
        if t == "phone":
            return f"+1-{self.rng.randint(200, 989)}-{self.rng.randint(200, 999)}-{self.rng.randint(1000, 9999)}"
        if t == "url":
            return self.fake("url")
        if t == "address":
            return self.fake("address").replace("\n", ", ")
        if t == "company":
            return self.fake("company")
        if t == "string":
            return self.fake("catch_phrase")
        return self.fake("sentence", nb_words=10)

    def _email(self, row: dict[str, Any] | None) -> str:
        """person.name42@domain: from the row's person, else from one of a fixed list of names."""
        person = next((v for k, v in (row or {}).items() if isinstance(v, str) and k in _name_fields(row)), None)
        if not person:
            person = self.rng.choice(email_names())
        local = _NOT_LOCAL.sub("", person.lower().replace(" ", "."))
        local = _DOTS.sub(".", local)[:30].strip(".") or "user"
        return f"{local}{self.rng.randint(1, 99)}@{self.rng.choice(_EMAIL_DOMAINS)}"

    def _number(self, f: FieldDef) -> int | float:
        """A number within the field's bounds (up to 50 above the lower one for counts, 500 for amounts, when unbounded)."""
        if f.type in ("int", "quantity"):
            lo = int(f.lower_bound if f.lower_bound is not None else 0)
            hi = int(f.max if f.max is not None else max(lo + 50, 50))
            return self.rng.randint(lo, hi)
        flo = f.lower_bound if f.lower_bound is not None else 0.0
        fhi = f.max if f.max is not None else max(flo + 500.0, 500.0)
        return round(self.rng.uniform(max(flo, 1.0 if fhi > 1 else flo), fhi), 2)

    def _clamp(self, f: FieldDef, v: Any) -> Any:
        if isinstance(v, int | float) and not isinstance(v, bool):
            if f.lower_bound is not None and v < f.lower_bound:
                v = type(v)(f.lower_bound)
            if f.max is not None and v > f.max:
                v = type(v)(f.max)
            if f.type in ("int", "quantity"):
                v = int(v)
        return v

    def new_id(self, ent: Entity, taken: set[str]) -> str:
        """A fresh id for a row of ``ent``, not in ``taken`` (and added to it)."""
        return self.new_key(ent.prefix, taken)

    def new_key(self, prefix: str, taken: set[str]) -> str:
        """A fresh ``<prefix>_<6 digits>`` id, not in ``taken`` (and added to it)."""
        below = self.rng._randbelow  # the draw of rng.randrange(100000, 1000000), without its argument checks
        while True:
            candidate = f"{prefix}_{100000 + below(900000)}"
            if candidate not in taken:
                taken.add(candidate)
                return candidate


_TEXT_TYPES = frozenset(("name", "email", "phone", "url", "address", "company", "string", "text"))


def _name_fields(row: dict[str, Any] | None) -> set[str]:
    return {k for k in (row or {}) if k in ("name", "full_name", "display_name", "username") or k.endswith("_name")}
