"""Derived lookups that live on the object they derive from (and are freed with it).

Blueprints, entities, tool specs, apps and tool graphs are not changed once built, so what
is worked out from one of them (a SQL statement, a table of fields, the tools a chain may
continue with) is kept on its :class:`Index`, created on first use and stored on the owner
as ``owner.index``. When the owner is collected its index goes with it: there is no
process-wide cache keyed by ``id()`` that would keep every app ever built alive (and could
hand a new object the entry of a dead one that had the same id).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from functools import cached_property
from typing import Any, TypeVar

O = TypeVar("O")  # noqa: E741 - the owner
P = TypeVar("P")
T = TypeVar("T")


class Index:
    """Lookups derived from one owner, each built on first use and kept while the owner lives.

    Subclasses add ``functools.cached_property`` members for the lookups their owner's own
    module defines; other modules memoise through :meth:`of` and :meth:`paired`, keyed by the
    function that builds the value (so two modules never share an entry).
    """

    def __init__(self) -> None:
        self._memo: dict[Hashable, Any] = {}

    def of(self, build: Callable[..., T], owner: Any, *key: Hashable) -> T:
        """``build(owner, *key)``, built once per ``(build, key)`` (``owner`` must be the index's owner)."""
        k = (build, key) if key else build
        memo = self._memo
        try:
            return memo[k]  # type: ignore[no-any-return]
        except KeyError:  # built once (a hit costs one look-up)
            pass
        value = memo[k] = build(owner, *key)
        return value

    def paired(self, build: Callable[..., T], owner: Any, other: Any, *key: Hashable) -> T:
        """``build(owner, other, *key)``, built once per ``(build, key)`` and the ``other`` object.

        For a lookup that also depends on a second object (a tool spec read against a
        blueprint, an app's tools read against its graph): the entry keeps ``other`` and is
        built anew when asked with another object, so it is never mistaken for another's.
        """
        k = (build, key)
        hit = self._memo.get(k)
        if hit is None or hit[0] is not other:
            hit = self._memo[k] = (other, build(owner, other, *key))
        return hit[1]  # type: ignore[no-any-return]

    def __len__(self) -> int:
        return len(self._memo)


class Indexed:
    """Mixin of frozen pydantic models: ``index`` holds the lookups derived from the model.

    A copy (``model_copy``, ``copy.copy``, ``copy.deepcopy``) and a pickle leave the index
    behind: a copy with updated fields must not answer from its original's lookups.
    """

    @cached_property
    def index(self) -> Index:
        return Index()

    def __copy__(self) -> Any:
        copied = super().__copy__()  # type: ignore[misc]
        copied.__dict__.pop("index", None)
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        copied = super().__deepcopy__(memo)  # type: ignore[misc]
        copied.__dict__.pop("index", None)
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        state: dict[Any, Any] = super().__getstate__()  # type: ignore[misc]
        if "index" in state.get("__dict__", {}):
            state = {**state, "__dict__": {k: v for k, v in state["__dict__"].items() if k != "index"}}
        return state
