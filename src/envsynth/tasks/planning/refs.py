"""What an oracle reference stands for, in one place: the value it takes from earlier results, and its code.

A :class:`~envsynth.tasks.model.Ref` names a field of an earlier call's result
(``result[step][field]``: the id a create returned, the requester a get found) or, with
``item``, a field of one item of a search's result (``result[step]['items'][item][field]``:
the order a search of the customer's orders listed third). Every place that fills in refs
(the chain runs, admission, the policy check, the oracle agents and programs) goes through
:func:`resolve` or :func:`source`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from envsynth.tasks.model import Ref


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()
"""What :func:`resolve` returns when the results lack what the reference names."""


def resolve(ref: Ref, results: Sequence[Any] | Mapping[int, Any]) -> Any:
    """The value ``ref`` names in ``results`` (a list by step, or a mapping step -> result), or :data:`MISSING`."""
    if isinstance(results, Mapping):
        src = results.get(ref.step)
    else:
        src = results[ref.step] if 0 <= ref.step < len(results) else None
    if ref.item is not None:
        items = src.get("items") if isinstance(src, dict) else None
        src = items[ref.item] if isinstance(items, list) and 0 <= ref.item < len(items) else None
    if not isinstance(src, dict) or ref.field not in src:
        return MISSING
    return src[ref.field]


def placed(ref: Ref, before: Any, after: Any, key: Callable[[Any], Any] | None = None) -> Ref | None:
    """``ref`` (to an item of a search's result) pointing where ``after`` lists the row ``before`` lists at ``ref.item``.

    ``before`` is the result of ``ref.step`` the ref was made for, ``after`` the same search's result on
    another state (other rows listed too, so the row may sit elsewhere); ``key`` renames the row's id
    when that state names it otherwise. None when ``after`` does not list the row (not on its first page).
    """
    old = resolve(Ref(step=0, field=ref.field, item=ref.item), [before])
    new = old if key is None or old is MISSING else key(old)
    items = after.get("items") if isinstance(after, dict) else None
    if new is None or new is MISSING or not isinstance(items, list):
        return None
    item = next((k for k, r in enumerate(items) if isinstance(r, dict) and r.get(ref.field) == new), None)
    return None if item is None else Ref(step=ref.step, field=ref.field, item=item)


def source(ref: Ref, prefix: str = "r") -> str:
    """``ref`` as a Python expression over the results ``r0, r1...`` of a program (``r2['items'][0]['order_id']``)."""
    item = f"['items'][{ref.item}]" if ref.item is not None else ""
    return f"{prefix}{ref.step}{item}[{ref.field!r}]"


def where(ref: Ref) -> str:
    """Where ``ref`` points, in words for an error message ("step 2's item 0's 'order_id'")."""
    item = f" item {ref.item}" if ref.item is not None else ""
    return f"the result of step {ref.step}{item} has no {ref.field!r}"
