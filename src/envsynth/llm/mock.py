"""A scripted chat provider: a real :class:`~envsynth.llm.types.ChatModel` that replays replies.

It goes through the same retry layer as the real client, so a scripted 429 is retried
and counted. Use it in unit tests, demos and to replay a recorded conversation::

    llm = ScriptedProvider([
        tool_reply(("search_orders", {"status": "pending"})),
        Fail(429),                                   # retried, then the next entry is served
        tool_reply(("pay_order", '{"order_id": ')),  # malformed JSON arguments
        tool_reply(("complete_task", {"answer": "42"})),
    ])
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envsynth.errors import EnvsynthError
from envsynth.llm.retry import RetryPolicy, with_retries
from envsynth.llm.types import ChatResponse, LLMError, Message, Usage

_ids = itertools.count()


@dataclass(frozen=True)
class Fail:
    """A scripted failed request: an HTTP ``status`` (429, 500...) or a connection error (``status=None``)."""

    status: int | None = 429
    message: str = "scripted failure"

    def raise_(self) -> None:
        """Raise what a real client would: an error carrying ``status_code``, or a ``ConnectionError``."""
        if self.status is None:
            raise ConnectionError(self.message)
        raise ScriptedHTTPError(self.status, self.message)


class ScriptedHTTPError(EnvsynthError):
    """The exception a scripted :class:`Fail` raises (carries ``status_code`` like the SDK's)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status_code = status


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> Message:
    """One OpenAI tool call; ``arguments`` as a dict (JSON-encoded here) or raw text (may be malformed)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{next(_ids)}", "type": "function", "function": {"name": name, "arguments": args}}


def tool_reply(*calls: tuple[str, dict[str, Any] | str] | Message, content: str | None = None) -> Message:
    """An assistant message with tool calls, each a ``(name, arguments)`` pair or a :func:`tool_call` dict."""
    made = [c if isinstance(c, dict) else tool_call(*c) for c in calls]
    return {"role": "assistant", "content": content, "tool_calls": made}


def text_reply(text: str) -> Message:
    """An assistant message with text only."""
    return {"role": "assistant", "content": text}


Entry = Message | str | Fail | ChatResponse
Script = list[Entry] | Callable[[list[Message], list[Message] | None, int], Entry]


def _estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, ensure_ascii=False)) // 4)


class ScriptedProvider:
    """Replays a script of replies, one entry per request.

    Entries: an assistant message dict, a string (a text reply), a :class:`Fail` (the
    request fails: retried if transient) or a full :class:`ChatResponse`. The script is
    a list (consumed in order; running out raises ``LLMError``) or a function
    ``(messages, tools, request_index) -> entry`` (for replies that depend on tool results).

    Usage is estimated at 4 characters a token unless a :class:`ChatResponse` gives it.

    Attributes:
        model: the name it answers to.
        usage: totals over every call.
        requests: every request's messages (copies), for assertions.
    """

    def __init__(self, script: Script, *, model: str = "scripted", retry: RetryPolicy | None = None) -> None:
        self.model = model
        self.usage = Usage()
        self.retry = retry or RetryPolicy(sleep=_no_sleep)
        self.requests: list[list[Message]] = []
        self._script = script
        self._index = 0

    def _next(self, messages: list[Message], tools: list[Message] | None) -> Entry:
        i = self._index
        self._index += 1
        if callable(self._script):
            return self._script(messages, tools, i)
        if i >= len(self._script):
            raise LLMError(f"script exhausted after {len(self._script)} replies", kind="client")
        return self._script[i]

    async def complete(self, messages: list[Message], tools: list[Message] | None = None, **params: Any) -> ChatResponse:
        """The next scripted reply (see :class:`~envsynth.llm.types.ChatModel`)."""
        usage = Usage()

        def count_retry() -> None:
            usage.retries += 1

        async def attempt() -> ChatResponse:
            self.requests.append([dict(m) for m in messages])
            entry = self._next(messages, tools)
            if isinstance(entry, Fail):
                entry.raise_()
            if isinstance(entry, ChatResponse):
                return entry
            msg = text_reply(entry) if isinstance(entry, str) else {"role": "assistant", "content": None, **entry}
            return ChatResponse(msg, Usage(_estimate_tokens(messages) + _estimate_tokens(tools or []), _estimate_tokens(msg)))

        try:
            resp = await with_retries(attempt, self.retry, on_retry=count_retry)
        except LLMError:
            self.usage.add(usage)
            raise
        usage.prompt_tokens, usage.completion_tokens, usage.requests = resp.usage.prompt_tokens, resp.usage.completion_tokens, 1
        self.usage.add(usage)
        finish = "tool_calls" if resp.message.get("tool_calls") else "stop"
        return ChatResponse(resp.message, usage, resp.finish_reason or finish)


MockLLM = ScriptedProvider
"""Another name for :class:`ScriptedProvider`."""


async def _no_sleep(_seconds: float) -> None:
    return None
