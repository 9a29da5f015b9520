"""Errors raised while reading or checking a blueprint."""

from __future__ import annotations

from envsynth.errors import EnvsynthError


class BlueprintError(EnvsynthError, ValueError):
    """A blueprint problem, located by its path (``entities[2].fields[1].type``).

    ``source`` is the file it came from, when there is one. An error found while
    collecting several problems carries them all in ``problems`` (the first one is the
    error itself: its ``path`` and ``message`` are the first problem's); ``all`` is that
    list, or just the error.
    """

    def __init__(self, path: str, message: str, source: str | None = None, problems: list[BlueprintError] | None = None) -> None:
        self.path = path
        self.message = message
        self.source = source
        self.problems = problems or []
        super().__init__(str(self))

    def __reduce__(self) -> tuple[type[BlueprintError], tuple[str, str, str | None, list[BlueprintError] | None]]:
        """Pickled with its fields (it crosses process boundaries in parallel builds)."""
        return (type(self), (self.path, self.message, self.source, self.problems or None))

    @classmethod
    def collected(cls, problems: list[BlueprintError]) -> BlueprintError:
        """One error standing for ``problems`` (at least one): the first, carrying them all."""
        flat = [p for e in problems for p in e.all]
        first = flat[0]
        return cls(first.path, first.message, first.source, flat if len(flat) > 1 else None)

    @property
    def all(self) -> list[BlueprintError]:
        """Every problem this error stands for, the first first."""
        return self.problems or [self]

    def line(self) -> str:
        """This problem alone, on one line: ``<file>: <path>: <message>``."""
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"

    def __str__(self) -> str:
        more = len(self.problems) - 1
        return self.line() + (f" (and {more} more problem(s))" if more > 0 else "")

    def located(self, source: str) -> BlueprintError:
        """The same problem(s), naming the file ``source``."""
        problems = [BlueprintError(p.path, p.message, source) for p in self.problems]
        return BlueprintError(self.path, self.message, source, problems or None)
