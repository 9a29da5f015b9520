"""Pydantic's validation errors as blueprint problems: one plain line each, saying what is allowed.

The blueprint models drive everything here: walking an error's location through the
model annotations tells which parts of it are pydantic's union tags (dropped from the
path), which model an unknown key sits in (so the message lists the keys it takes and
suggests the closest one), and which other archetypes do take a key one refuses. Keys
added to the models later get the same treatment without any change here.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.nouns import plural


@dataclass
class _Where:
    """Where an error's location leads: the printable path, the model it ends in, the union it went through."""

    path: str
    model: type[BaseModel] | None
    members: tuple[type[BaseModel], ...] = ()  # the other models of the discriminated union the path chose from
    through_union: bool = False  # a union member's tag was dropped from the location


def _unwrap(tp: Any) -> Any:
    """The type under ``Annotated[...]`` and ``X | None``."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if _is_union(tp):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _field_type(model: type[BaseModel], key: str) -> Any:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info.annotation
    return None


def keys_of(model: type[BaseModel]) -> list[str]:
    """The keys a model takes in YAML (aliases where they have one), sorted."""
    return sorted(info.alias or name for name, info in model.model_fields.items())


def _tag_member(members: list[Any], tag: Any) -> type[BaseModel] | None:
    """The model of a discriminated union whose ``Literal`` tag field takes ``tag``."""
    for m in members:
        if not _is_model(m):
            continue
        for info in m.model_fields.values():
            if typing.get_origin(info.annotation) is typing.Literal and typing.get_args(info.annotation) == (tag,):
                return m
    return None


def _step(tp: Any, part: Any) -> tuple[Any, bool, tuple[type[BaseModel], ...]]:
    """Follow one location part from type ``tp``: (the next type, whether the part is a union tag, union members)."""
    tp = _unwrap(tp)
    if _is_union(tp):
        members = [m for m in typing.get_args(tp) if m is not type(None)]
        chosen = _tag_member(members, part)
        return chosen, True, tuple(m for m in members if _is_model(m))
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and isinstance(part, int):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        return (args[0] if len(set(args)) == 1 else None), False, ()
    if origin is dict:
        return (None if part == "[key]" else typing.get_args(tp)[1]), False, ()
    if _is_model(tp) and isinstance(part, str):
        return _field_type(tp, part), False, ()
    return None, _looks_like_tag(part), ()


def _looks_like_tag(part: Any) -> bool:
    """A location part pydantic made up (``function-after[...]``, ``literal[...]``, ``[key]``) where the model cannot tell."""
    return isinstance(part, str) and (part.startswith(("function-", "tagged-union", "literal[")) or part == "[key]")


def locate(loc: tuple[Any, ...], root: type[BaseModel]) -> _Where:
    """The printable path of a pydantic location, and the model it ends in."""
    tp: Any = root
    out = ""
    members: tuple[type[BaseModel], ...] = ()
    through = False
    for part in loc:
        nxt, is_tag, union = _step(tp, part)
        if is_tag:
            through = True
            members = union or members
            tp = nxt
            continue
        out += _part(part, first=not out)
        tp = nxt
    model = _unwrap(tp)
    return _Where(out, model if _is_model(model) else None, members, through)


def _part(part: Any, first: bool) -> str:
    """One step of a printed path: ``[2]``, ``.name``, or ``['odd key']`` for a key that is not a plain word."""
    if isinstance(part, int):
        return f"[{part}]"
    text = str(part)
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", text):
        return f"[{text!r}]"
    return text if first else f".{text}"


def _where(loc: tuple[Any, ...], kind: str, root: type[BaseModel]) -> _Where:
    """Where an error is; for an unknown key, the model it sits in."""
    if kind != "extra_forbidden" or not loc:
        return locate(loc, root)
    parent = locate(loc[:-1], root)
    parent.path += _part(loc[-1], first=not parent.path)
    return parent


def _got(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _choices(expected: str) -> list[str]:
    """``'a', 'b' or 'c'`` (pydantic's ``expected``) as ``['a', 'b', 'c']``."""
    return [p.strip().strip("'\"") for p in expected.replace(" or ", ", ").split(",") if p.strip()]


def suggest(word: Any, allowed: list[str]) -> str:
    """``"; did you mean X?"`` for the closest allowed word, or nothing."""
    close = difflib.get_close_matches(str(word), allowed, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _unknown_key(key: str, where: _Where) -> str:
    if where.model is None:
        return f"unknown key {key!r}"
    allowed = keys_of(where.model)
    msg = f"unknown key {key!r}{suggest(key, allowed)}"
    if " " in str(key):  # words as a key: the rest of a text cut at an unquoted comma of a { ... } mapping
        msg += "; a comma in an unquoted text inside { } starts a new key: put the text in quotes"
    tag = _tag_of(where.model)
    if tag is None:
        return msg + f" (allowed here: {', '.join(allowed)})"
    noun = where.model.__name__.removeprefix(tag.capitalize()).lower() or "item"
    msg += f" (a {tag} {noun} takes: {', '.join(allowed)})"
    others = [t for m in where.members if m is not where.model and (t := _tag_of(m)) and key in keys_of(m)]
    if others:
        msg += f"; {key!r} is a key of {', '.join(others)} {plural(noun)} only"
    return msg


def _tag_of(model: type[BaseModel]) -> str | None:
    """The discriminator value of a tagged model (``book`` for BookAction), if it has one."""
    for info in model.model_fields.values():
        args = typing.get_args(info.annotation)
        if typing.get_origin(info.annotation) is typing.Literal and len(args) == 1 and isinstance(args[0], str):
            return args[0]
    return None


def _message(err: Any, where: _Where) -> str:
    """One plain message for one pydantic error."""
    kind, ctx, value = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "extra_forbidden":
        return _unknown_key(str(err["loc"][-1]), where)
    if kind == "missing":
        return f"required key {err['loc'][-1]!r} is missing"
    if kind == "literal_error":
        allowed = _choices(ctx.get("expected", ""))
        return f"{_got(value)} is not allowed here; allowed: {', '.join(allowed)}{suggest(value, allowed)}"
    if kind == "union_tag_invalid":
        allowed = _choices(ctx.get("expected_tags", ""))
        key = ctx.get("discriminator", "").strip("'")
        return f"{key} {_got(ctx.get('tag'))} is not one of: {', '.join(allowed)}{suggest(ctx.get('tag'), allowed)}"
    if kind == "union_tag_not_found":
        return f"required key {ctx.get('discriminator', '').strip(chr(39))!r} is missing (it says which kind of item this is)"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping (key: value), got {_got(value)}"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in PATTERNS:
        return f"{_got(value)} is not {PATTERNS[ctx['pattern']]}"
    msg = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind.endswith(("_type", "_parsing", "_pattern_mismatch", "too_short", "too_long")) or kind.startswith(("greater", "less")):
        msg = f"{msg} (got {_got(value)})"
    return msg


PATTERNS = {
    r"^[a-z][a-z0-9_]*$": "a name: lower-case letters, digits and _, starting with a letter",
    r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$": "entity.field (two names joined by a dot)",
    r"^[^\n]+$": "one line of text",
    r"^[^{}\n]+$": "a few words on one line, without braces",
    r"^[a-z]{2,5}$": "2 to 5 lower-case letters",
    r"^\d{4}-\d{2}-\d{2}$": "a date written YYYY-MM-DD",
}
"""What the patterns of the models ask for, in words (other patterns are shown as they are)."""


def _merge(group: list[tuple[Any, str]]) -> str:
    """One message for the errors of one place (the members of a union each refused the value)."""
    literals = [e for e, _ in group if e["type"] == "literal_error"]
    if len(literals) == len(group) and len(group) > 1:
        allowed: list[str] = []
        for e in literals:
            allowed += [c for c in _choices((e.get("ctx") or {}).get("expected", "")) if c not in allowed]
        value = literals[0].get("input")
        return f"{_got(value)} is not allowed here; allowed: {', '.join(allowed)}{suggest(value, allowed)}"
    messages = list(dict.fromkeys(m for _, m in group))
    return messages[0] if len(messages) == 1 else "; or ".join(messages)


def problems_of(exc: ValidationError, root: type[BaseModel], source: str | None = None) -> list[BlueprintError]:
    """The problems of a validation error, one per place, unknown keys first.

    A misspelt required key is reported as the unknown key (with the suggestion), not also
    as the missing one; the errors each member of a union gave for one value are one problem.
    """
    errors = exc.errors()
    unknown = {(tuple(e["loc"][:-1]), str(e["loc"][-1])) for e in errors if e["type"] == "extra_forbidden"}
    hidden = set()
    for e in errors:
        if e["type"] == "missing":
            parent, key = tuple(e["loc"][:-1]), str(e["loc"][-1])
            if any(p == parent and suggest(k, [key]) for p, k in unknown):
                hidden.add(id(e))
    groups: dict[str, list[tuple[Any, str]]] = {}
    order: list[tuple[bool, str]] = []
    for e in errors:
        if id(e) in hidden:
            continue
        where = _where(tuple(e["loc"]), e["type"], root)
        if where.path not in groups:
            groups[where.path] = []
            order.append((e["type"] != "extra_forbidden", where.path))
        groups[where.path].append((e, _message(e, where)))
    order.sort(key=lambda t: t[0])  # stable: unknown keys first, each group in pydantic's order
    out = []
    for _, path in order:
        group = groups[path]
        unknown_here = [m for e, m in group if e["type"] == "extra_forbidden"]
        msg = unknown_here[0] if unknown_here else _merge(group)
        out.append(BlueprintError(path, msg, source))
    return out
