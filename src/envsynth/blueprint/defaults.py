"""The words a blueprint leaves out, inferred from its names, and a warning for each.

A blueprint need not give the language keys of docs/blueprints.md section 10 (``called``,
field ``label``, action ``say``): its text then uses words made from the names (``unit_price``
is "unit price", a row of ``inventory`` an "inventory item"). :func:`fill_defaults` writes the
one default that differs from the name in words (the noun of a table named by an uncountable
noun) into the blueprint, so every text made from it agrees; :func:`default_warnings` lists
every default used, one line each, for ``envsynth check``.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Blueprint, Entity
from envsynth.blueprint.nouns import plural, row_noun, words

_NO_LABEL = ("id", "ref")
"""Field types whose words come from the table they name, never from a label."""


def fill_defaults(bp: Blueprint) -> Blueprint:
    """``bp`` with ``called`` set on each table without one whose name is no countable noun (``inventory``)."""
    entities = [_with_noun(e) for e in bp.entities]
    if all(new is old for new, old in zip(entities, bp.entities, strict=True)):
        return bp
    return bp.model_copy(update={"entities": entities})


def _with_noun(ent: Entity) -> Entity:
    """``ent`` with its inferred ``called`` when its name in words is not what one row is called."""
    noun = row_noun(ent.name)
    if ent.called is not None or noun == words(ent.name):
        return ent
    return ent.model_copy(update={"called": noun})


def default_warnings(data: Any, bp: Blueprint, source: str | None = None) -> list[BlueprintError]:
    """One warning per word inferred for ``bp``, whose file parsed as ``data`` left it out, in document order.

    A table without ``called`` gets one, and so does each of its fields whose name is several
    words (``unit_price``) without a ``label``; an action without ``say`` gets one.
    """
    raw = data if isinstance(data, dict) else {}
    out = []
    for i, ent in enumerate(bp.entities):
        out += _table_warnings(i, ent, _raw_item(raw, "entities", i), source)
    for i, action in enumerate(bp.actions):
        if "say" not in _raw_item(raw, "actions", i):
            said = words(action.name)
            out.append(BlueprintError(f"actions[{i}].say", f'action {action.name} has no say; requests use its name, "{said}"', source))
    return out


def _table_warnings(i: int, ent: Entity, raw: dict[str, Any], source: str | None) -> list[BlueprintError]:
    """The warnings of one table: its noun, then the labels of its fields (only when it has no ``called``)."""
    if "called" in raw:
        return []
    noun = ent.called or row_noun(ent.name)
    out = [BlueprintError(f"entities[{i}].called", f'table {ent.name} has no called; using "{noun}" (plural "{plural(noun)}")', source)]
    fields = raw.get("fields") if isinstance(raw.get("fields"), list) else []
    for j, f in enumerate(ent.fields):
        given = fields[j] if j < len(fields) and isinstance(fields[j], dict) else {}
        if f.type in _NO_LABEL or "_" not in f.name or "label" in given:
            continue
        out.append(
            BlueprintError(f"entities[{i}].fields[{j}].label", f'field {ent.name}.{f.name} has no label; using "{words(f.name)}"', source)
        )
    return out


def _raw_item(raw: dict[str, Any], key: str, i: int) -> dict[str, Any]:
    """The ``i``-th mapping of the list ``raw[key]`` as written in the file ({} when there is none)."""
    items = raw.get(key)
    if isinstance(items, list) and i < len(items) and isinstance(items[i], dict):
        return items[i]
    return {}
