"""The words of filters and lookup keys, for checking blueprints at load time.

The generated tools evaluate filters with :mod:`envsynth.runtime.toolkit`, which the
sandbox loads alone, by path, so it keeps its own copy of these definitions; the blueprint
side may not import the runtime (data flows one way). ``tests/test_filter_words.py`` holds
the two equal.
"""

from __future__ import annotations

from typing import Any

LOOKUPS = ("ne", "lt", "lte", "gt", "gte")
"""The ``field__op`` operators of ``exists``/``any``/``all``/``count`` filters (``eq`` is written plainly)."""


def split_key(key: str) -> tuple[str, str]:
    """``'price__gt'`` -> ``('price', 'gt')``; a plain field is ``(field, 'eq')``."""
    name, sep, op = key.rpartition("__")
    if sep and op in LOOKUPS and name:
        return name, op
    return key, "eq"


def table_key(k: Any) -> str:
    """How a lookup-table key is stored and looked up: text, ``true``/``false`` for booleans."""
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)
