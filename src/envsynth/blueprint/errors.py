"""Errors raised while reading or checking a blueprint."""

from __future__ import annotations


class BlueprintError(ValueError):
    """A blueprint problem, located by its path (``entities[2].fields[1].type``).

    ``source`` is the file it came from, when there is one.
    """

    def __init__(self, path: str, message: str, source: str | None = None) -> None:
        self.path = path
        self.message = message
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.path}: {self.message}" if self.path else f"{where}{self.message}"

    def located(self, source: str) -> BlueprintError:
        return BlueprintError(self.path, self.message, source)
