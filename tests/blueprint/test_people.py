"""The shared persons (blueprint/people.py): one person is a user of several apps, under one name, email and phone."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from tests.task_samples import compiled

from envsynth import catalog
from envsynth.blueprint.people import PEOPLE, by_name, people
from envsynth.runtime.sampledata import StateBuilder
from envsynth.runtime.state import open_state, read_rows


def _users(name: str) -> dict[str, dict[str, str]]:
    """The user rows of app ``name``'s sample state, by name: {name: {field type: value}}."""
    app = compiled(name)
    bp, rows = app.blueprint, read_rows(open_state(app.sample_state), app.blueprint)
    out: dict[str, dict[str, str]] = {}
    for table in {u.entity for u in bp.users if u.entity}:
        fields: dict[str, str] = {}
        for f in bp.entity(table).fields:  # the first field of each type: the person's own (a guardian's name comes later)
            if f.type in ("name", "email", "phone"):
                fields.setdefault(f.type, f.name)
        names = [r[fields["name"]] for r in rows[table]]
        assert len(names) == len(set(names)), (name, table, Counter(names).most_common(2))  # each person once per state
        for r in rows[table]:
            out[r[fields["name"]]] = {t: r[f] for t, f in fields.items()}
    return out


def test_the_list_holds_distinct_people() -> None:
    everyone = people()
    assert len(everyone) == PEOPLE == len(by_name())
    assert len({p.email for p in everyone}) == PEOPLE
    assert all(p.name.count(" ") == 1 and "." not in p.name for p in everyone)  # no "Dr." or "Jr."


def test_apps_share_people_under_one_name_email_and_phone() -> None:
    users = {n: _users(n) for n in catalog.names()}
    shared_pairs = 0
    for a, b in combinations(users, 2):
        common = users[a].keys() & users[b].keys()
        shared_pairs += bool(common)
        for person in common:
            p = by_name()[person]
            for app in (a, b):
                got = users[app][person]
                assert got.get("email", p.email) == p.email and got.get("phone", p.phone) == p.phone, (app, person, got)
    pairs = len(users) * (len(users) - 1) // 2
    assert shared_pairs * 10 >= pairs * 9, (shared_pairs, pairs)  # nearly every two apps have customers in common


def test_a_state_drawn_on_top_of_rows_never_draws_a_person_twice() -> None:
    app = compiled("juniper_goods")
    bp = app.blueprint
    first = StateBuilder(bp, 1, app.order).fill({"customer": 30})
    more = StateBuilder(bp, 2, app.order, rows=first).fill({"customer": 150})
    names = [r["full_name"] for r in more["customer"]]
    assert len(names) == 180 == len(set(names)) and all(n in by_name() for n in names)
    full = StateBuilder(bp, 3, app.order, rows=more).fill({"customer": 20})  # three quarters of the list are used up
    assert sum(r["full_name"] in by_name() for r in full["customer"]) == PEOPLE * 3 // 4
