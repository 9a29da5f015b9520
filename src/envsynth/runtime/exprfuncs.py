"""The pure functions behind the condition language: dates and durations, row filters, lookup tables.

Dependency-free (imported by generated tools, the sandboxed worker and the tester alike), so
the three evaluate a condition the same way.

* Dates and datetimes are ISO strings (``2026-03-15``, ``2026-03-15T12:00:00``); a duration
  is a :class:`datetime.timedelta`. :func:`date_add` / :func:`date_sub` are ``+`` / ``-``
  when one side is a date or a duration: a date plus a duration is a date string again,
  the difference of two dates is a duration.
* A row filter maps ``field`` or ``field__<op>`` (``ne``, ``lt``, ``lte``, ``gt``, ``gte``) to
  a value; a list value means "one of" (``ne`` with a list: "none of"). :func:`row_matches`
  and :func:`where_sql` give a filter the same meaning in Python and in SQLite (NULL
  matches only ``field=None`` and ``field__ne=<not None>``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

DURATIONS = {
    "weeks": dt.timedelta(weeks=1),
    "days": dt.timedelta(days=1),
    "hours": dt.timedelta(hours=1),
    "minutes": dt.timedelta(minutes=1),
}
LOOKUPS = ("ne", "lt", "lte", "gt", "gte")
_SQL_OPS = {"lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def duration(unit: str, n: float) -> dt.timedelta:
    """``n`` weeks, days, hours or minutes as a duration."""
    return DURATIONS[unit] * n


def weeks(n: float) -> dt.timedelta:
    """``n`` weeks."""
    return DURATIONS["weeks"] * n


def days(n: float) -> dt.timedelta:
    """``n`` days."""
    return DURATIONS["days"] * n


def hours(n: float) -> dt.timedelta:
    """``n`` hours."""
    return DURATIONS["hours"] * n


def minutes(n: float) -> dt.timedelta:
    """``n`` minutes."""
    return DURATIONS["minutes"] * n


def _moment(stamp: str) -> dt.datetime:
    """An ISO date (midnight) or datetime string as a naive datetime."""
    if len(stamp) == 10:
        return dt.datetime.combine(dt.date.fromisoformat(stamp), dt.time())
    return dt.datetime.fromisoformat(stamp)


def _shift(stamp: str, delta: dt.timedelta) -> str:
    """``stamp`` moved by ``delta``, in the same format (a date moved by a part of a day becomes a datetime)."""
    moved = _moment(stamp) + delta
    if len(stamp) == 10 and not (moved.hour or moved.minute or moved.second or moved.microsecond):
        return moved.date().isoformat()
    if len(stamp) == 16 and not (moved.second or moved.microsecond):
        return moved.isoformat(timespec="minutes")
    return moved.isoformat(timespec="seconds")


def date_add(a: Any, b: Any) -> Any:
    """``a + b`` where a date or datetime string may be moved by a duration (either order)."""
    if isinstance(a, dt.timedelta) and isinstance(b, str):
        a, b = b, a
    if isinstance(a, str) and isinstance(b, dt.timedelta):
        return _shift(a, b)
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError(f"cannot add {b!r} to {a!r}: a date takes a duration such as days(n) or hours(n)")
    return a + b


def date_sub(a: Any, b: Any) -> Any:
    """``a - b``: a date moved back by a duration, or the duration between two dates."""
    if isinstance(a, str) and isinstance(b, dt.timedelta):
        return _shift(a, -b)
    if isinstance(a, str) and isinstance(b, str):
        return _moment(a) - _moment(b)
    if isinstance(a, str) or isinstance(b, str):
        raise TypeError(f"cannot subtract {b!r} from {a!r}: a date takes a duration such as days(n) or hours(n)")
    return a - b


def table_key(k: Any) -> str:
    """How a lookup-table key is stored and looked up: text, ``true``/``false`` for booleans."""
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


def lookup(table: dict[str, Any], *keys: Any) -> Any:
    """The entry of a nested lookup table at ``keys`` (None when there is none)."""
    node: Any = table
    for k in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(table_key(k))
    return node


def split_key(key: str) -> tuple[str, str]:
    """``'price__gt'`` -> ``('price', 'gt')``; a plain field is ``(field, 'eq')``."""
    name, sep, op = key.rpartition("__")
    if sep and op in LOOKUPS and name:
        return name, op
    return key, "eq"


def _is_list(v: Any) -> bool:
    return isinstance(v, list | tuple)


def value_matches(x: Any, op: str, v: Any) -> bool:
    """Whether a column value ``x`` passes ``op v`` with SQLite's meaning (NULL never passes an order test)."""
    if op == "eq":
        if _is_list(v):
            return x is not None and x in v
        return x == v if x is not None and v is not None else x is v
    if op == "ne":
        if _is_list(v):
            return x is None or x not in v
        return x != v if x is not None and v is not None else x is not v
    if x is None or v is None:
        return False
    if isinstance(x, str) != isinstance(v, str):  # SQLite orders every number before every text
        x, v = isinstance(x, str), isinstance(v, str)
    return bool({"lt": x < v, "lte": x <= v, "gt": x > v, "gte": x >= v}[op])


def row_matches(row: dict[str, Any], where: dict[str, Any]) -> bool:
    """Whether ``row`` passes every filter of ``where`` (see the module doc)."""
    for key, v in where.items():
        name, op = split_key(key)
        if not value_matches(row.get(name), op, v):
            return False
    return True


def plain_filter(where: dict[str, Any]) -> bool:
    """True when every filter is ``field = scalar`` (the fast, cached SQL shape)."""
    return not any("__" in key or _is_list(v) for key, v in where.items())


def where_sql(where: dict[str, Any]) -> tuple[str, list[Any]]:
    """SQL condition and arguments for ``where`` (``"f" IS ?``, ``IN``, ``<``...), same meaning as :func:`row_matches`."""
    parts: list[str] = []
    args: list[Any] = []
    for key, v in where.items():
        name, op = split_key(key)
        col = '"' + name.replace('"', '""') + '"'
        if _is_list(v):
            marks = ", ".join("?" for _ in v)
            if op == "eq":
                parts.append(f"{col} IN ({marks})" if v else "0")
            elif op == "ne":
                parts.append(f"({col} IS NULL OR {col} NOT IN ({marks}))" if v else "1")
            else:
                raise ValueError(f"{key}: a list only goes with = or __ne")
            args.extend(v)
        elif op in ("eq", "ne"):
            parts.append(f"{col} IS {'NOT ' if op == 'ne' else ''}?")
            args.append(v)
        else:
            parts.append(f"{col} {_SQL_OPS[op]} ?")
            args.append(v)
    return " AND ".join(parts) or "1", args
