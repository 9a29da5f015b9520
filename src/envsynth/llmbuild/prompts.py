"""Role prompts, kept as files beside the builder (``prompts/<role>.md``).

A prompt is a :class:`string.Template`: ``$name`` placeholders are filled from keyword
arguments (``$$`` is a literal dollar), so JSON examples in a prompt need no escaping.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib import resources
from string import Template

from envsynth.errors import LLMBuildError

MAX_PROMPT_CHARS = 12_000
"""The most characters one request of any role may hold for a 50-tool domain (about 4,000 tokens)."""


class PromptError(LLMBuildError, KeyError):
    """A role without a prompt file, or a placeholder left unfilled."""


@cache
def _template(role: str) -> Template:
    path = resources.files("envsynth.llmbuild") / "prompts" / f"{role}.md"
    if not path.is_file():
        raise PromptError(f"no prompt file for role {role!r} (expected envsynth/llmbuild/prompts/{role}.md)")
    return Template(path.read_text(encoding="utf-8"))


def _examples() -> dict[str, Callable[[], str]]:
    """The worked example of each role that shows one (``$example`` in its prompt)."""
    from envsynth.llmbuild import example

    return {
        "designer": example.designer_example,
        "coder": example.coder_example,
        "tester": example.tester_example,
        "debugger": example.debugger_example,
    }


@cache
def _example(role: str) -> str | None:
    made = _examples().get(role)
    return made() if made is not None else None


def prompt(role: str, **fields: object) -> str:
    """The prompt of ``role`` with its ``$placeholders`` filled from ``fields`` (``$example``: the role's worked example).

    Raises:
        PromptError: no such prompt file, or a placeholder without a value.
    """
    example = _example(role)
    if example is not None:
        fields = {"example": example, **fields}
    try:
        return _template(role).substitute({k: str(v) for k, v in fields.items()})
    except KeyError as exc:
        raise PromptError(f"prompt {role!r} needs a value for ${exc.args[0]}") from None


def roles() -> list[str]:
    """Every role that has a prompt file."""
    folder = resources.files("envsynth.llmbuild") / "prompts"
    return sorted(p.name.removesuffix(".md") for p in folder.iterdir() if p.name.endswith(".md"))
