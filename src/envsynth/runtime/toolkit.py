"""What generated ``tools.py`` modules import: the episode context, ToolError and row helpers.

Kept tiny and dependency-free: the same module is imported inside the sandboxed worker.
"""

from __future__ import annotations

import random
import sqlite3
from typing import Any


class ToolError(Exception):
    """An Anticipated Rejection: bad input or an unmet pre-condition.

    ``message`` is shown to the agent; ``code`` names the check that failed
    (``exists:order``, ``state``, ``pre[0]``) so tests can tell which one fired.
    """

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Context:
    """Per-episode services for tools: the database, the clock, ids and randomness.

    Everything here is derived from the episode seed, so a replay is identical.
    """

    __slots__ = ("_rng", "_seed", "_today", "bools", "db", "now_value")

    def __init__(self, db: sqlite3.Connection, now: str, seed: int, bools: dict[str, tuple[str, ...]]) -> None:
        self.db = db
        self.now_value = now
        self._today = now[:10]
        self._seed = seed
        self._rng: random.Random | None = None
        self.bools = bools

    @property
    def rng(self) -> random.Random:
        """The episode's random stream (seeded with the episode seed; made on first use, most calls draw nothing)."""
        if self._rng is None:
            self._rng = random.Random(self._seed)
        return self._rng

    @rng.setter
    def rng(self, value: random.Random) -> None:
        self._rng = value

    @property
    def rng_used(self) -> random.Random | None:
        """The random stream if anything has drawn from it yet, else None (a fresh stream from the seed)."""
        return self._rng

    def now(self) -> str:
        """The episode's current time, ``YYYY-MM-DDTHH:MM:SS``."""
        return self.now_value

    def today(self) -> str:
        """The episode's current date, ``YYYY-MM-DD``."""
        return self._today

    def new_id(self, table: str, key: str, prefix: str) -> str:
        """A fresh id for ``table`` (``prefix_NNNNNN``), drawn from the episode's random stream."""
        while True:
            candidate = f"{prefix}_{self.rng.randrange(100000, 1000000)}"
            if self.db.execute(f'SELECT 1 FROM "{table}" WHERE "{key}" = ?', (candidate,)).fetchone() is None:
                return candidate

    def sandboxed(self, tool: str, code: str, values: dict[str, Any], **scope: Any) -> Any:
        """Run an untrusted custom tool's body in a sandboxed worker; its changes applied here.

        ``values`` are the parameters and bound rows; ``scope`` the declared ``writes`` /
        ``creates`` / ``deletes``. Raises ToolError when the code rejects the call and
        RuntimeError when it fails, times out or answers something invalid (see
        :func:`envsynth.sandbox.untrusted.run_sandboxed`).
        """
        from envsynth.sandbox.untrusted import run_sandboxed  # lazy: the worker never gets here

        return run_sandboxed(self, tool, code, values, **scope)

    # -- row helpers used by generated code ---------------------------------
    def one(self, sql: str, args: tuple[Any, ...] | list[Any], table: str) -> dict[str, Any] | None:
        """First row of a query as a dict (bool columns as bools), or None."""
        cur = self.db.execute(sql, args)
        r = cur.fetchone()
        if r is None:
            return None
        return self._dict(cur, r, table)

    def all(self, sql: str, args: tuple[Any, ...] | list[Any], table: str) -> list[dict[str, Any]]:
        """All rows of a query as dicts."""
        cur = self.db.execute(sql, args)
        return [self._dict(cur, r, table) for r in cur.fetchall()]

    def _dict(self, cur: sqlite3.Cursor, r: tuple[Any, ...], table: str) -> dict[str, Any]:
        d = {c[0]: v for c, v in zip(cur.description, r)}
        for col in self.bools.get(table, ()):
            if d.get(col) is not None:
                d[col] = bool(d[col])
        return d

    def exists(self, table: str, where: dict[str, Any]) -> bool:
        """Whether a row of ``table`` matches all ``column = value`` pairs."""
        return self.count(table, where) > 0

    def count(self, table: str, where: dict[str, Any]) -> int:
        """How many rows of ``table`` match all ``column = value`` pairs."""
        cond = " AND ".join(f'"{k}" IS ?' for k in where) or "1"
        return int(self.db.execute(f'SELECT COUNT(*) FROM "{table}" WHERE {cond}', tuple(where.values())).fetchone()[0])


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, with wildcards in it escaped."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
