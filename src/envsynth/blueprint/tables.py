"""Lookup tables: the blueprint's top-level ``tables`` key, read in conditions with ``lookup()``.

A table is a nested mapping with one level per key and a number, text or boolean at the
bottom, for example free checked bags by membership tier and cabin::

    tables:
      free_bags:
        regular: {basic_economy: 0, economy: 1, business: 2}
        gold:    {basic_economy: 1, economy: 2, business: 3}

``lookup('free_bags', user.membership, cabin)`` reads an entry (None when there is none).
Keys are kept as text (``true``/``false`` for booleans, ``1`` for the number 1), and looked
up the same way.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.filters import table_key


def normalise_table(name: str, table: Any) -> dict[str, Any]:
    """Check one table's shape and turn its keys into text.

    Raises:
        ValueError: naming the first level or entry that is wrong.
    """
    if not isinstance(table, dict) or not table:
        raise ValueError(f"table {name!r} must be a non-empty mapping of key: value (nested once per key)")
    out = _level(name, table, [])
    depths = {len(path) for path in _leaf_paths(out, [])}
    if len(depths) != 1:
        raise ValueError(f"table {name!r} mixes depths {sorted(depths)}: every entry needs one key per level")
    return out


def _level(name: str, node: dict[Any, Any], path: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in node.items():
        key = table_key(k)
        where = ".".join([name, *path, key])
        if isinstance(v, dict):
            if not v:
                raise ValueError(f"table entry {where} is empty")
            out[key] = _level(name, v, [*path, key])
        elif isinstance(v, bool | int | float | str):
            out[key] = v
        else:
            raise ValueError(f"table entry {where} must be a number, text, true/false or a mapping (got {type(v).__name__})")
    return out


def _leaf_paths(node: Any, path: list[str]) -> list[list[str]]:
    if not isinstance(node, dict):
        return [path]
    return [p for k, v in node.items() for p in _leaf_paths(v, [*path, k])]


def depth(table: dict[str, Any]) -> int:
    """How many keys a lookup in ``table`` takes."""
    n, node = 0, table
    while isinstance(node, dict):
        n += 1
        node = next(iter(node.values()))
    return n


def leaves(table: dict[str, Any]) -> list[tuple[tuple[str, ...], Any]]:
    """Every ``(keys, value)`` entry of ``table``."""
    return [(tuple(p), _at(table, p)) for p in _leaf_paths(table, [])]


def _at(table: dict[str, Any], path: list[str]) -> Any:
    node: Any = table
    for k in path:
        node = node[k]
    return node
