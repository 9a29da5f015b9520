"""An async OpenAI-compatible chat client: any ``base_url``, bounded concurrency, retries, usage.

``openai`` is imported when the first client is made, so envsynth imports without it
(``pip install envsynth[llm]``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from typing import Any

from envsynth.errors import ConfigError
from envsynth.llm.retry import RetryPolicy, with_retries
from envsynth.llm.types import ChatResponse, LLMError, Message, Usage


def message_dict(message: Any) -> Message:
    """An SDK assistant message as a plain OpenAI-format dict (no ``None`` fields)."""
    out: Message = {"role": "assistant", "content": getattr(message, "content", None)}
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments or ""},
            }
            for c in calls
        ]
    return out


def check_endpoint(who: str, api_key: str | None, base_url: str | None) -> None:
    """Refuse, before any work, a run that cannot reach a model: no key nor URL, or no openai package.

    Args:
        who: what needs the endpoint, for the message (``the openai agent``...).

    Raises:
        ConfigError: what is missing, and how to provide it (``option`` ``base_url`` when neither a key
            nor an endpoint is given).
    """
    if not (api_key or base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        raise ConfigError(f"{who} needs an API key (OPENAI_API_KEY) or the base URL of a local server such as vLLM", "base_url")
    if importlib.util.find_spec("openai") is None:
        raise ConfigError(f"{who} needs the openai package: pip install 'envsynth[llm]'")


class OpenAIChat:
    """A chat model behind an OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, a proxy...).

    The SDK's own retries are off; :func:`~envsynth.llm.retry.with_retries` retries 429, 5xx
    and connection errors with exponential backoff and jitter. At most ``concurrency``
    requests are in flight at once, whatever the number of episodes running.

    Attributes:
        model: the model name sent with every request.
        usage: totals over every call.
        params: default request parameters (``temperature``, ``max_tokens``...).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 16,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        **params: Any,
    ) -> None:
        """Args:
        model: the model name.
        base_url: the API root (``http://host:8000/v1``); default ``OPENAI_BASE_URL`` or OpenAI's.
        api_key: default ``OPENAI_API_KEY``; a placeholder is sent when neither is set and
            ``base_url`` points elsewhere (local servers ignore it).
        concurrency: requests in flight at most.
        retry: the retry policy (default :class:`RetryPolicy`).
        timeout: seconds per request.
        **params: default chat-completions parameters.
        """
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and self.base_url is not None:
            key = "EMPTY"
        self._api_key = key
        self.concurrency = concurrency
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.params = params
        self.usage = Usage()
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None

    def _bind(self) -> tuple[Any, asyncio.Semaphore]:
        """The SDK client and semaphore of the running event loop (made on first use in each loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            try:
                from openai import AsyncOpenAI
            except ImportError:  # pragma: no cover - depends on the environment
                raise LLMError("the openai package is not installed: pip install 'envsynth[llm]'", kind="client") from None
            if self._api_key is None:
                raise LLMError("no API key: set OPENAI_API_KEY or pass api_key / base_url", kind="client")
            self._client = AsyncOpenAI(api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout)
            self._loop = loop
            self._sem = asyncio.Semaphore(self.concurrency)
        assert self._sem is not None
        return self._client, self._sem

    async def complete(self, messages: list[Message], tools: list[Message] | None = None, **params: Any) -> ChatResponse:
        """The next assistant message (see :class:`~envsynth.llm.types.ChatModel`).

        Raises:
            LLMError: the request failed after retries, or the reply had no choices.
        """
        client, sem = self._bind()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, **self.params, **params}
        if tools:
            kwargs["tools"] = tools
        usage = Usage()

        def count_retry() -> None:
            usage.retries += 1

        async def attempt() -> Any:
            async with sem:
                resp = await client.chat.completions.create(**kwargs)
            if not getattr(resp, "choices", None):  # a body that is not a completion (an HTML page...): retried
                raise LLMError(f"the reply is not a chat completion (no choices): {str(resp)[:200]!r}", kind="bad_response")
            return resp

        try:
            resp = await with_retries(attempt, self.retry, on_retry=count_retry)
        except LLMError:
            self.usage.add(usage)
            raise
        choice = resp.choices[0]
        u = getattr(resp, "usage", None)
        usage.prompt_tokens = int(getattr(u, "prompt_tokens", 0) or 0)
        usage.completion_tokens = int(getattr(u, "completion_tokens", 0) or 0)
        usage.requests = 1
        self.usage.add(usage)
        return ChatResponse(message_dict(choice.message), usage, getattr(choice, "finish_reason", None))

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        if self._client is not None:
            await self._client.close()
            self._client = None
