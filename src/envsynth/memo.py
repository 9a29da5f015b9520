"""Memoising derived data per object identity (blueprints, entities, specs are never changed once built)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

K = TypeVar("K")
T = TypeVar("T")


def per_object(cache: dict[int, tuple[Any, Any]], obj: K, build: Callable[[K], T]) -> T:
    """``build(obj)``, computed once per object and kept in ``cache``.

    Keyed by ``id(obj)``; the object is kept beside its value, so a new object that happens
    to get the id of a collected one is recognised and built anew.
    """
    hit = cache.get(id(obj))
    if hit is None or hit[0] is not obj:
        hit = cache[id(obj)] = (obj, build(obj))
    return hit[1]
