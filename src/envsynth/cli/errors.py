"""How the ``envsynth`` command words a library error: one line, options named as its flags."""

from __future__ import annotations

from envsynth.errors import ConfigError, EnvsynthError


def flag(option: str) -> str:
    """The command-line flag of a library option: ``max_turns`` -> ``--max-turns``."""
    return "--" + option.replace("_", "-")


def error_line(exc: EnvsynthError | ValueError | KeyError) -> str:
    """The message the command prints for ``exc`` (before it is joined onto one line).

    A :class:`~envsynth.errors.ConfigError` about one option is prefixed with its flag
    (``--agent: unknown agent 'x'``); a ``KeyError`` is shown without the quotes
    ``str(KeyError)`` adds; an error without a message is named by its class.
    """
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    problems: dict[str, str] | None = getattr(exc, "problems", None)  # a typed configuration's, field by field
    if isinstance(exc, ConfigError) and problems:
        return "; ".join(f"{flag(k)}: {v}" if k else v for k, v in problems.items())
    if isinstance(exc, ConfigError) and exc.option:
        text = f"{flag(exc.option)}: {text}"
    return text or type(exc).__name__
