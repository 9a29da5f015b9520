"""Words shared by the phrasing of requests and questions: plurals, verbs, field words and values as people write them."""

from __future__ import annotations

import re
from typing import Any

from envsynth.blueprint import nouns
from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.tasks.wording.describe import field_words, fmt_value, human, one_of, quoted, singular

_FIRST_PERSON = re.compile(r"\b(my|me|mine|myself|I|I'm|I'd|I've|I'll)\b")
_SLOT = re.compile(r"\{[a-z_0-9]+\}")
_TAIL = re.compile(r" (?:on|of|in|per|for|at|with|to|from) ")  # a noun's words after its head: "song on a playlist"
_COUNTS = re.compile(r"\{value\} [a-z]")  # a field's say that counts something: "with {value} checked bags"
_AFTER_HEAD = frozenset(("left", "remaining", "listened", "used", "booked", "sold", "taken", "available", "allowed", "burned"))


def article(word: str) -> str:
    """``a`` or ``an`` before ``word``."""
    return "an" if word[:1] in "aeiou" else "a"


def plural(word: str) -> str:
    """A noun's plural in English (order -> orders, entry -> entries, person -> people; a phrase takes it on its head:
    "song on a playlist" -> "songs on a playlist"): the blueprint's one plural (:func:`envsynth.blueprint.nouns.plural`)."""
    return nouns.plural(word)


def _head(words: str) -> tuple[str, str, str]:
    """(words before the head noun, the head, words after it) of a field's words: "basic economy seats left" ->
    ("basic economy ", "seats", " left"); the head comes before "in", "of"... and before a trailing participle."""
    front = _TAIL.split(words, maxsplit=1)[0]
    rest = words[len(front) :]
    parts = front.split(" ")
    if len(parts) > 1 and parts[-1] in _AFTER_HEAD:  # "seats left", "seconds listened"
        rest = " " + parts.pop() + rest
    before = " ".join(parts[:-1])
    return (before + " " if before else ""), parts[-1], rest


def is_plural(words: str) -> bool:
    """Whether a field's words are plural: "seats", "monthly listeners", "seats left" (the head before "in", "of"...:
    "estimate in hours" is not)."""
    head = _head(words)[1]
    return head.endswith("s") and not head.endswith(("ss", "us", "is"))


def how_many(n: Any, words: str) -> str:
    """A count of a field's plural words: "9 basic economy seats left", "1 attendee" (the head singular for 1)."""
    before, head, after = _head(words)
    return f"{fmt_value(None, n)} {before}{singular(head) if n == 1 else head}{after}"


def verb_is(words: str) -> str:
    """The verb for a field's words: "the notes are", "the status is", "the estimate in hours is"."""
    return "are" if is_plural(words) else "is"


def field_of(bp: Blueprint, entity: str, name: str) -> str:
    """The words for field ``name`` of ``entity`` (its label, else the name in words)."""
    ent = bp.entity(entity)
    return field_words(ent.field(name)) if ent.has(name) else human(name)


def param_field(spec: ToolSpec, bp: Blueprint, name: str) -> tuple[ParamSpec, FieldDef | None]:
    """A parameter and the blueprint field it sets, if any (kept on the spec's index, per blueprint)."""
    return spec.index.paired(_find_param_field, spec, bp, name)


def _find_param_field(spec: ToolSpec, bp: Blueprint, name: str) -> tuple[ParamSpec, FieldDef | None]:
    p = spec.param(name)
    f = None
    if p.field:
        ent, fname = p.field.split(".")
        f = bp.entity(ent).field(fname)
    return p, f


def param_value(spec: ToolSpec, bp: Blueprint, name: str, value: Any) -> str:
    """An argument's value as a person writes it (a list of values joined with "or" in a read's filter, with
    "and" in a write's argument; a list item of several fields as "Kim Lee (date of birth May 2, 1990)")."""
    p, f = param_field(spec, bp, name)
    if isinstance(value, list):
        texts = [_item_text(bp, p, v) if isinstance(v, dict) else fmt_value(f, v) for v in value]
        if spec.mode != "write" or len(texts) < 2:
            return " or ".join(texts)
        return ", ".join(texts[:-1]) + " and " + texts[-1]
    if f is not None:
        return quoted(f, value)
    if isinstance(value, str) and not p.enum and p.semantic in ("string", "text"):
        return f'"{value}"'
    return fmt_value(None, value)


def _item_text(bp: Blueprint, p: ParamSpec, item: dict[str, Any]) -> str:
    """One object of a list argument: its first field's value, then the others with their words in brackets."""
    parts = []
    for ip in p.item_fields or []:
        f = None
        if ip.field and "." in ip.field:
            ent, fname = ip.field.split(".", 1)
            f = bp.entity(ent).field(fname) if bp.has_entity(ent) and bp.entity(ent).has(fname) else None
        words = field_words(f) if f is not None else human(ip.name)
        parts.append((words, fmt_value(f, item.get(ip.name))))
    if not parts:
        return ", ".join(fmt_value(None, v) for v in item.values())
    rest = ", ".join(f"{words} {text}" for words, text in parts[1:])
    return f"{parts[0][1]} ({rest})" if rest else parts[0][1]


def refers_to(bp: Blueprint, p: ParamSpec) -> str | None:
    """The entity whose id a parameter carries: a row parameter's, or a filter's on a ref field."""
    if p.ref is not None:
        return p.ref
    if p.semantic in ("ref", "id") and p.field:
        ent, name = p.field.split(".")
        f = bp.entity(ent).field(name)
        return f.ref if f.type == "ref" else ent
    return None


def in_first_person(phrase: str) -> bool:
    """Whether a ``say`` phrase speaks as the requester ("cancel my order"), slots aside."""
    return _FIRST_PERSON.search(_SLOT.sub("", phrase)) is not None


def counted(f: FieldDef | None, words: str, v: Any) -> str | None:
    """A number given for a count-like field, as a person gives it: the field's ``say`` when it counts ("with 8 checked
    bags", "burning 6 calories"), else "with 9 seats left" for a field of plural words; None for any other value."""
    if f is None or f.type not in ("int", "quantity", "float") or isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if f.say and _COUNTS.search(f.say):
        text = f.say.replace("{value}", fmt_value(f, v))
        return one_of(text)
    return f"with {how_many(v, words)}" if is_plural(words) else None


def and_list(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]
