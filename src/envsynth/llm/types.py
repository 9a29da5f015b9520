"""What every chat provider speaks: OpenAI-format messages in, an assistant message and usage out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from envsynth.errors import EnvsynthError

Message = dict[str, Any]
"""An OpenAI chat message: ``{"role": ..., "content": ..., "tool_calls": [...], ...}``."""


def message_text(content: Any) -> str:
    """A message's ``content`` as text: content parts joined, None as ''."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return content if isinstance(content, str) else str(content)


@dataclass
class Usage:
    """Token and request counts (added up over calls).

    Attributes:
        prompt_tokens: tokens sent.
        completion_tokens: tokens generated.
        requests: successful model calls.
        retries: failed attempts that were retried (429, 5xx, connection errors).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        """Add ``other`` into this one."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.retries += other.retries

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total_tokens": self.total_tokens}


@dataclass
class ChatResponse:
    """One model reply.

    Attributes:
        message: the assistant message, OpenAI format (``role``, ``content``, optional ``tool_calls``).
        usage: tokens of this call, and the retries it took.
        finish_reason: as the provider reported it (``stop``, ``tool_calls``, ``length``...).
    """

    message: Message
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None


class LLMError(EnvsynthError):
    """A model call that failed for good (after retries, or not retryable).

    Attributes:
        kind: ``rate_limit``, ``server``, ``connection``, ``bad_response`` (a reply that is not a
            chat completion), ``client`` or ``other``.
        status: the HTTP status, when there was one.
        attempts: how many attempts were made.
    """

    def __init__(self, message: str, *, kind: str = "other", status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.attempts = attempts


@runtime_checkable
class ChatModel(Protocol):
    """An OpenAI-compatible chat model: the real client and the scripted provider both are one.

    Attributes:
        model: the model name.
        usage: totals over every call made through this object.
    """

    model: str
    usage: Usage

    async def complete(self, messages: list[Message], tools: list[Message] | None = None, **params: Any) -> ChatResponse:
        """The next assistant message for ``messages`` with ``tools`` offered.

        Raises:
            LLMError: the call failed after retries.
        """
        ...
