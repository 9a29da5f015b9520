"""The base of envsynth's typed configurations (build, run): built whole, checked once.

A configuration is a frozen pydantic model that refuses unknown fields. Built with
:meth:`Config.of`, a bad value raises :class:`ConfigProblems`, an
:class:`envsynth.errors.ConfigError` whose ``problems`` map each refused field to what is
wrong with it, so a front end can name its own options (the CLI its flags).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from envsynth.errors import ConfigError

__all__ = ["Config", "ConfigProblems", "describe_errors", "ray_address"]

C = TypeVar("C", bound="Config")


class ConfigProblems(ConfigError):
    """A configuration refused; ``problems`` is ``{field: what is wrong}``, ``option`` the first field."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" if k else v for k, v in problems.items()), next(iter(problems), ""))
        self.problems = problems


class Config(BaseModel):
    """A frozen configuration that refuses unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def of(cls: type[C], **values: Any) -> C:
        """Build from keyword values.

        Raises:
            ConfigProblems: one entry per refused field.
        """
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigProblems(describe_errors(exc)) from None


def describe_errors(exc: ValidationError) -> dict[str, str]:
    """``{field: what is wrong}`` for each error of ``exc`` (field ``""`` for a whole-object check)."""
    out: dict[str, str] = {}
    for e in exc.errors(include_url=False):
        name = ".".join(str(x) for x in e["loc"])
        message = str(e["msg"]).removeprefix("Value error, ")
        if "input" in e and e["type"] not in ("missing", "value_error") and not isinstance(e["input"], dict):
            message += f", got {e['input']!r}"
        out.setdefault(name, message)
    return out


def ray_address(address: str | None, executor: str | None) -> str | None:
    """``address`` when it goes with ``executor`` (only the ray executor takes one).

    Raises:
        ValueError: an address for another executor (pydantic reports it at the field).
    """
    if address is not None and executor != "ray":
        raise ValueError("an address is for the ray executor")
    return address
