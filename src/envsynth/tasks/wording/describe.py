"""Refer to rows the way a person would: by name, title, date or amount, never by id.

A description is a set of ``field = value`` facts (plus, when needed, the description
of a referenced parent row) that matches exactly one row of the state it is made for.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from envsynth.blueprint.models import Blueprint, Entity, FieldDef
from envsynth.runtime.state import Rows

_ORDER = (
    "string",
    "name",
    "company",
    "email",
    "date",
    "datetime",
    "money",
    "enum",
    "state",
    "quantity",
    "int",
    "float",
    "phone",
    "address",
    "url",
    "bool",
    "text",
)


def human(name: str) -> str:
    return name.replace("_", " ")


def noun(ent: Entity) -> str:
    """What people call a row of ``ent`` (its ``called``, else its name in words)."""
    return ent.called or human(ent.name)


def field_words(f: FieldDef) -> str:
    """What people call a field (its ``label``, else its name in words)."""
    return f.label or human(f.name)


def flag(f: FieldDef, on: bool) -> str:
    """A bool fact as a verb phrase about its row: "is private", "is not private", "renews automatically".

    The field's ``say_true`` / ``say_false`` when it has them, else "is" with its label (or its
    name without ``is_``): never "is yes".
    """
    own = f.say_true if on else f.say_false
    if own is not None:
        return own
    if f.name.startswith("has_") and not (f.label or "").endswith("ed"):  # has_pool: "has a pool", not "is pool"
        thing = f.label or human(f.name.removeprefix("has_"))
        thing = f"{'an' if thing[:1] in 'aeiou' else 'a'} {thing}"
        return f"has {thing}" if on else f"does not have {thing}"
    label = f.label or human(f.name.removeprefix("is_"))
    return f"is {label}" if on else f"is not {label}"


def singular(word: str) -> str:
    """A plural noun's singular, for the regular cases (hours -> hour, entries -> entry, classes -> class)."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_ONE_OF = re.compile(r"(?<![\d.,$])\b1 ((?:[a-z-]+ )?)([a-z]+s)\b")


def one_of(text: str) -> str:
    """``text`` with a plural noun after the number 1 made singular: "1 hours" -> "1 hour", "1 checked bags" -> "1 checked bag"
    (quoted text is left as it is)."""
    if "1 " not in text:
        return text
    parts = text.split('"')
    parts[::2] = [_ONE_OF.sub(lambda m: f"1 {m.group(1)}{singular(m.group(2))}", p) for p in parts[::2]]
    return '"'.join(parts)


def fmt_value(f: FieldDef | None, v: Any) -> str:
    """A value as a person writes it: $12.50, March 3, 2026, 'Blue Mug'."""
    if v is None:
        return "none"
    t = f.type if f is not None else ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if t == "money":
        return f"${v:,.2f}"
    if t == "date" and isinstance(v, str):
        d = dt.date.fromisoformat(v)
        return f"{d:%B} {d.day}, {d.year}"
    if t == "datetime" and isinstance(v, str):
        d = dt.datetime.fromisoformat(v)
        hour = d.strftime("%I:%M %p").lstrip("0")
        return f"{d:%B} {d.day}, {d.year} at {hour}"
    if t in ("enum", "state"):
        return human(str(v))
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def quoted(f: FieldDef | None, v: Any) -> str:
    text = fmt_value(f, v)
    if f is not None and f.type in ("string", "company", "text") and not text.startswith('"'):
        return f'"{text}"'
    return text


@dataclass
class Description:
    """Facts that single out one row: own fields, and optionally its parent through a ref."""

    entity: str
    facts: dict[str, Any] = field(default_factory=dict)
    parent: tuple[str, Description] | None = None  # (ref field, parent description)
    also: tuple[str, Description] | None = None  # a second parent, for a row that only its two parents tell apart
    most: tuple[str, str] | None = None  # (a date field, "max" or "min"): the most recent / oldest of the rows the rest matches
    # the other end of a row its one parent singles out (a follow by its listener): what names it to that parent's
    # person ("my follow of the artist X", not "my follow"); neither matched on nor rendered otherwise
    other: tuple[str, Description] | None = None

    def parents(self) -> list[tuple[str, Description]]:
        """The (ref field, parent description) pairs the row is described through."""
        return [p for p in (self.parent, self.also) if p is not None]

    def matches(self, bp: Blueprint, rows: Rows, row: dict[str, Any]) -> bool:
        if self.most is not None:  # the extreme of the rows the rest matches: a question of all of them
            return any(r is row for r in self.matching(bp, rows, [row]))
        if any(row.get(k) != v for k, v in self.facts.items()):
            return False
        for ref, pd in self.parents():
            ent = bp.entity(pd.entity)
            parent = next((r for r in rows.get(pd.entity, []) if r[ent.id_field] == row.get(ref)), None)
            if parent is None or not pd.matches(bp, rows, parent):
                return False
        return True

    def count(self, bp: Blueprint, rows: Rows) -> int:
        """How many rows of ``rows`` the description matches."""
        return len(self.matching(bp, rows))

    def matching(self, bp: Blueprint, rows: Rows, candidates: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The rows of ``candidates`` (rows of the entity; default: all of them in ``rows``) that :meth:`matches` in
        ``rows``, in order (the state indexed once instead of a scan per parent)."""
        return _matching(self, rows.get(self.entity, []) if candidates is None else candidates, _Lookup(bp, rows))


class _Lookup:
    """Rows of a state by table and id, indexed on first use.

    Per id the first row with that id: the row a scan of the table by id finds.
    """

    def __init__(self, bp: Blueprint, rows: Rows) -> None:
        self.bp = bp
        self.rows = rows
        self._by_id: dict[str, dict[Any, dict[str, Any]]] = {}

    def row(self, table: str, key: Any) -> dict[str, Any] | None:
        index = self._by_id.get(table)
        if index is None:
            id_field = self.bp.entity(table).id_field
            index = self._by_id[table] = {}
            for r in self.rows.get(table, []):
                index.setdefault(r[id_field], r)
        return index.get(key)


def _matching(d: Description, candidates: list[dict[str, Any]], lookup: _Lookup) -> list[dict[str, Any]]:
    """The rows of ``candidates`` (rows of ``d.entity``) that ``d`` matches, in order.

    As :meth:`Description.matches` (row values are SQLite scalars, for which ``==`` is the
    negation of ``!=``), with parents found through ``lookup``.
    """
    out = candidates
    for k, v in d.facts.items():
        out = [r for r in out if r.get(k) == v]
    for ref, pd in d.parents():
        if not out:
            break
        parents = [lookup.row(pd.entity, r.get(ref)) for r in out]
        good = {id(p) for p in _matching(pd, [p for p in parents if p is not None], lookup)}
        out = [r for r, p in zip(out, parents, strict=True) if p is not None and id(p) in good]
    if d.most is not None and out:
        best = _extreme(d, lookup)
        out = [r for r in out if best is not None and r is best]
    return out


def _extreme(d: Description, lookup: _Lookup) -> dict[str, Any] | None:
    """The one row of the state with the highest (``max``) or lowest (``min``) value of ``d.most``'s field among the rows
    ``d`` matches without it; None when none has a value or two share the extreme."""
    field_name, how = d.most or ("", "max")
    base = _matching(Description(d.entity, d.facts, d.parent, d.also), lookup.rows.get(d.entity, []), lookup)
    valued = [r for r in base if r.get(field_name) is not None]
    if not valued:
        return None
    pick = max if how == "max" else min
    best = pick(r[field_name] for r in valued)
    ties = [r for r in valued if r[field_name] == best]
    return ties[0] if len(ties) == 1 else None


@dataclass(frozen=True)
class _Fields:
    """What describing a row of an entity looks at, precomputed per entity."""

    entity: Entity
    named: tuple[tuple[int, str], ...]  # (0, the label), when a description may use it
    others: tuple[tuple[int, str], ...]  # (0 if a telling field else 1, name), the fields in _ORDER order
    refs: tuple[tuple[str, str], ...]  # (ref field, referenced entity)


def _fields(ent: Entity) -> _Fields:
    """The fields a description may use, and the refs to describe parents by (kept on the entity's index)."""
    return ent.index.of(_find_fields, ent)


def _find_fields(ent: Entity) -> _Fields:
    never = set(ent.never_describe)
    fields = [f for f in ent.fields if f.type in _ORDER and f.name not in never]
    fields.sort(key=lambda f: (f.name != ent.label, _ORDER.index(f.type)))
    telling = ("date", "datetime", "money", "name", "company", "string")
    known = {name: -len(ent.known_by) + i for i, name in enumerate(ent.known_by)}  # best first, before any other field
    refs = sorted((f for f in ent.fields if f.type == "ref"), key=lambda f: known.get(f.name, 0))  # the parents people name first
    return _Fields(
        entity=ent,
        named=tuple((0, f.name) for f in fields if f.name == ent.label),
        others=tuple((known.get(f.name, 0 if f.type in telling else 1), f.name) for f in fields if f.name != ent.label),
        refs=tuple((f.name, f.ref or "") for f in refs),
    )


def describe(
    bp: Blueprint,
    rows: Rows,
    entity: str,
    row: dict[str, Any],
    rng: random.Random,
    depth: int = 0,
    avoid: tuple[str, ...] = (),
    most_first: bool = False,
    most_by: str | None = None,
) -> Description | None:
    """The shortest description (greedy) that matches ``row`` and no other row, or None.

    ``avoid``: fields of the row the description must not use (the answer a question asks for). ``most_first``: name
    the row as the most recent or oldest of its parent's rows when that singles it out ("my most recent order").
    ``most_by``: the same, among the rows of the parent this reference names only (the owner whose rows were made
    to compare with: not "the oldest order of the card ..." where the card has that one order in another state).
    """
    return _describe(bp, rows, _Lookup(bp, rows), entity, row, rng, depth, avoid, most_first or most_by is not None, most_by)


def _describe(
    bp: Blueprint,
    rows: Rows,
    lookup: _Lookup,
    entity: str,
    row: dict[str, Any],
    rng: random.Random,
    depth: int,
    avoid: tuple[str, ...] = (),
    most_first: bool = False,
    most_by: str | None = None,
) -> Description | None:
    ent = bp.entity(entity)
    fields = _fields(ent)
    if depth == 0 and most_first:
        most = _superlative(bp, rows, lookup, ent, row, fields, rng, avoid, most_by)
        if most is not None:
            return most
    d = Description(entity)
    others = list(fields.others)
    if not ent.known_by:  # without an author's order, fields of one kind are tried in random order
        rng.shuffle(others)
    # people and titled things are named first; other rows by what people know them by, then their most telling fields
    others.sort(key=itemgetter(0))
    table = rows.get(entity, [])
    matching = _own_facts(d, [*fields.named, *others], row, table, avoid)
    if (len(matching) != 1 or not d.facts) and depth < 1:  # a row no own fact names (a stock entry) goes by its parents
        _by_parents(bp, rows, lookup, d, row, matching, fields.refs, rng)
    if d.parent is None and len(matching) != 1:
        return None
    _drop_unneeded(ent, d, table, lookup)
    return d


_MADE = re.compile(
    r"(created|placed|joined|booked|opened|posted|performed|issued|logged|submitted|sent|started|added|requested|reported|recorded|made)"
)


def _superlative(
    bp: Blueprint,
    rows: Rows,
    lookup: _Lookup,
    ent: Entity,
    row: dict[str, Any],
    fields: _Fields,
    rng: random.Random,
    avoid: tuple[str, ...],
    most_by: str | None = None,
) -> Description | None:
    """``row`` as the most recent (or oldest) of its parent's rows ("my most recent order"), when the draw says so and
    that singles it out among two or more rows of that parent (of the parent ``most_by`` names, when given); else None."""
    dates = [f for f in ent.fields if f.type in ("date", "datetime") and _MADE.search(f.name) and f.name not in avoid]
    dates = [f for f in dates if f.name not in ent.never_describe and row.get(f.name) is not None]
    if not dates:
        return None
    how = rng.choice(("max", "min"))
    table = rows.get(ent.name, [])
    for ref, target in fields.refs:
        if most_by is not None and ref != most_by:
            continue
        prow = lookup.row(target, row.get(ref)) if row.get(ref) is not None else None
        pd = _describe(bp, rows, lookup, target, prow, rng, 1) if prow is not None else None
        if pd is None:
            continue
        scoped = Description(ent.name, parent=(ref, pd))
        if len(_matching(scoped, table, lookup)) < 2:
            continue  # the only row of its parent: nothing to compare
        for extreme in (how, "min" if how == "max" else "max"):  # the most recent, else the oldest (or the other way)
            d = Description(ent.name, parent=(ref, pd), most=(dates[0].name, extreme))
            if [id(r) for r in _matching(d, table, lookup)] == [id(row)]:
                return d
    return None


def _own_facts(
    d: Description, order: list[tuple[int, str]], row: dict[str, Any], table: list[dict[str, Any]], avoid: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Add ``row``'s own fields to ``d``, in ``order``, until they single it out; the rows of ``table`` they match."""
    matching = table  # rows that the facts so far match (no parent yet)
    for _, name in order:
        v = row.get(name)
        if v is None or name in avoid:
            continue
        d.facts[name] = v
        matching = [r for r in matching if r.get(name) == v]
        if len(matching) == 1:
            break
    return matching


def _drop_unneeded(ent: Entity, d: Description, table: list[dict[str, Any]], lookup: _Lookup) -> None:
    """Drop facts that are not needed (keeps instructions short), label last."""
    droppable = [k for k in d.facts if k != ent.label]
    if not droppable or len(d.facts) <= 1:
        return
    # rows that the parent (if any) allows: without a fact, the others must still single out one of them
    base = table if d.parent is None else _matching(Description(d.entity, parent=d.parent, also=d.also), table, lookup)
    for k in droppable:
        if len(d.facts) == 1:
            break
        v = d.facts.pop(k)
        left = base
        for j, w in d.facts.items():
            left = [r for r in left if r.get(j) == w]
        if len(left) != 1:
            d.facts[k] = v


def _by_parents(
    bp: Blueprint,
    rows: Rows,
    lookup: _Lookup,
    d: Description,
    row: dict[str, Any],
    matching: list[dict[str, Any]],
    refs: tuple[tuple[str, str], ...],
    rng: random.Random,
) -> None:
    """Set ``d.parent`` (and ``d.also``) to the fewest parents, in ``refs`` order, that with ``d``'s facts single out ``row``.

    One parent first ("the item of my order ..."), then two ("the stock entry of the product X at the warehouse Y").
    """
    found: list[tuple[str, Description]] = []
    pair = _links(bp.entity(d.entity))  # a row that only links two rows is named by both ("the label X on the task Y")
    for ref, target in refs:
        prow = lookup.row(target, row.get(ref)) if row.get(ref) is not None else None
        pd = _describe(bp, rows, lookup, target, prow, rng, 1) if prow is not None else None
        if pd is None:
            continue
        d.parent = (ref, pd)
        if not pair and len(_matching(d, matching, lookup)) == 1:
            if not d.facts:
                d.other = _other_end(bp, rows, lookup, row, refs, ref)
            return
        found.append((ref, pd))
    d.parent = None
    for i, first in enumerate(found):
        for second in found[i + 1 :]:
            d.parent, d.also = first, second
            if len(_matching(d, matching, lookup)) == 1:
                return
    d.parent = d.also = None


def _other_end(
    bp: Blueprint, rows: Rows, lookup: _Lookup, row: dict[str, Any], refs: tuple[tuple[str, str], ...], parent: str
) -> tuple[str, Description] | None:
    """The first reference of ``row`` to another table than its ``parent`` reference's, described (by a draw of its
    own: the request's other draws are not moved), or None."""
    target = dict(refs)[parent]
    for ref, other in refs:
        prow = lookup.row(other, row.get(ref)) if other != target and row.get(ref) is not None else None
        pd = _describe(bp, rows, lookup, other, prow, random.Random(str(row.get(ref))), 1) if prow is not None else None
        if pd is not None:
            return ref, pd
    return None


def without_owner(bp: Blueprint, d: Description, owner: str | None) -> Description:
    """``d`` of a row of the requester (a row of table ``owner``) without that parent: "my playlist "Chill Jams"", not
    "my playlist "Chill Jams" of listener Rodney Gordon". A row with two references to ``owner`` (a sender and a
    recipient) keeps its parent: that may be the other person."""
    if owner is None or d.parent is None or d.parent[1].entity != owner:
        return d
    if sum(f.type == "ref" and f.ref == owner for f in bp.entity(d.entity).fields) != 1:
        return d
    if not d.facts and d.also is None and d.most is None:  # nothing left but the owner: the row's other end names it
        return Description(d.entity, parent=d.other)
    return Description(d.entity, dict(d.facts), d.also, most=d.most)  # a second parent, if any, names it instead


def _links(ent: Entity) -> bool:
    """Whether rows of ``ent`` only link rows of others: every field but the id is a reference, and there are two or more."""
    rest = [f for f in ent.fields if f.name != ent.id_field]
    return len(rest) >= 2 and all(f.type == "ref" for f in rest)


def render(bp: Blueprint, d: Description, possessive: str = "the") -> str:
    """``the pending order placed on March 3, 2026 from Lumen & Co`` style text.

    Enum and state values come before the noun, a field's ``say`` phrase (or a date's
    "placed on ...", or a labelled bool's "that is private") after it, and other facts
    as "with <field> <value>".
    """
    ent = bp.entity(d.entity)
    called = noun(ent)
    adjectives: list[tuple[bool, str]] = []
    phrases, parts = [], []
    for k, v in d.facts.items():
        if k == ent.label:
            continue
        f = ent.field(k)
        if f.say and not (f.say == "{value}" and f.type in ("enum", "state")):  # an enum's bare value is an adjective
            phrases.append(one_of(f.say.replace("{value}", quoted(f, v))))
        elif f.type in ("enum", "state"):
            _enum_words(f, fmt_value(f, v), called, adjectives, phrases)
        elif f.type in ("date", "datetime"):
            phrases.append(_when(f, v))
        elif f.type == "bool":
            phrases.append(f"that {flag(f, bool(v))}")
        else:
            parts.append(f"{field_words(f)} {quoted(f, v)}")
    most = [("most recent" if d.most[1] == "max" else "oldest")] if d.most is not None else []
    head = " ".join([possessive, *most, *(a for _, a in sorted(adjectives, key=itemgetter(0))), called])
    phrases = _merged(phrases)
    label = d.facts.get(ent.label) if ent.label else None
    if label is not None:
        lf = ent.field(ent.label)  # type: ignore[arg-type]
        head = f"{head} {quoted(lf, label)}" if lf.type not in ("name",) or adjectives else f"{called} {label}"
    text = head + "".join(f" {p}" for p in phrases)
    if parts:
        text += " with " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    return text + _of_parents(bp, ent, d, bool(parts or phrases))


def _enum_words(f: FieldDef, word: str, called: str, adjectives: list[tuple[bool, str]], phrases: list[str]) -> None:
    """An enum or state value of a row, as an adjective before its noun (a status first: "my open savings account",
    a phrase hyphenated: "the in-progress request"), none where the noun says it ("my draft", not "my draft draft"),
    or after it where it shares the noun's stem ("my booking that is booked", not "my booked booking")."""
    if word in called.split():
        return
    if word[:4] == called[:4]:
        phrases.append(f"that is {word}")
    else:
        adjectives.append((not _is_status(f), "-".join(word.split())))


def _is_status(f: FieldDef) -> bool:
    """Whether a field says where a row stands (a state, a status): its value comes first among adjectives."""
    return f.type == "state" or f.name.endswith("status")


def _merged(phrases: list[str]) -> list[str]:
    """Relative clauses one after another joined: "that is freezable and on sale", not "that is freezable that is on sale"."""
    out: list[str] = []
    for p in phrases:
        if out and out[-1].startswith("that ") and p.startswith("that "):
            same_verb = out[-1].startswith("that is ") and p.startswith("that is ")
            out[-1] += " and " + p.removeprefix("that is " if same_verb else "that ")
        else:
            out.append(p)
    return out


def _of_parents(bp: Blueprint, ent: Entity, d: Description, said: bool) -> str:
    """The parents a description names its row through: " of the order ...", then " at the warehouse ..."
    (the second parent's ref field ``say``, else " and ...")."""
    text = ""
    if d.parent is not None:
        _ref, pd = d.parent
        text += f" (the one for {render(bp, pd)})" if said else f" of {render(bp, pd)}"
    if d.also is not None:
        ref, ad = d.also
        f = ent.field(ref)
        text += " " + f.say.replace("{value}", render(bp, ad)) if f.say else f" and {render(bp, ad)}"
    return text


def _when(f: FieldDef, v: Any) -> str:
    """A date fact: ``placed on March 3, 2026`` / ``starts on March 3, 2026 at 9:15 AM``."""
    name = field_words(f).removesuffix(" date").removesuffix(" on").removesuffix(" at")
    return f"{name} on {fmt_value(f, v)}"
