"""Retries with exponential backoff and full jitter for transient model-call failures."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from envsynth.llm.types import LLMError

T = TypeVar("T")

_CONNECTION_ERRORS = ("APIConnectionError", "APITimeoutError", "ConnectError", "ReadTimeout", "RemoteProtocolError")
_BAD_RESPONSE_ERRORS = ("JSONDecodeError", "APIResponseValidationError")
_RETRYABLE_KINDS = ("rate_limit", "server", "connection", "bad_response")


@dataclass
class RetryPolicy:
    """How often and how long to wait between attempts.

    The delay before retry ``n`` (0-based) is uniform in ``[0, min(cap, base * 2**n)]``
    (full jitter); a server's ``Retry-After`` raises it, up to ``cap``.

    Attributes:
        max_retries: retries after the first attempt.
        base: seconds, the first backoff ceiling.
        cap: seconds, the largest wait.
        sleep: the sleep coroutine (tests pass a no-op).
    """

    max_retries: int = 6
    base: float = 0.5
    cap: float = 30.0
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, repr=False)

    def delay(self, retry: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        ceiling = min(self.cap, self.base * (2**retry))
        wait = (rng or random).uniform(0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(self.cap, retry_after))
        return wait


def classify(exc: BaseException) -> tuple[str, int | None, bool]:
    """``(kind, status, retryable)`` of an exception raised by a provider.

    429 and 5xx statuses, timeouts, connection errors and malformed replies (kind
    ``bad_response``: a 200 whose body is not a chat completion, such as a proxy's HTML
    page) are retryable; other statuses (400, 401, 404...) are not.
    """
    if isinstance(exc, LLMError):
        status = exc.status
    else:
        status = getattr(exc, "status_code", None)
        if status is None:
            status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int):
        if status == 429:
            return "rate_limit", status, True
        if status >= 500:
            return "server", status, True
        return "client", status, False
    names = {c.__name__ for c in type(exc).__mro__}
    if isinstance(exc, ConnectionError | TimeoutError) or names & set(_CONNECTION_ERRORS):
        return "connection", None, True
    if names & set(_BAD_RESPONSE_ERRORS):
        return "bad_response", None, True
    if isinstance(exc, LLMError):
        return exc.kind, None, exc.kind in _RETRYABLE_KINDS
    return "other", None, False


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None) or getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


async def with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy, on_retry: Callable[[], None] | None = None) -> T:
    """Await ``fn()`` until it succeeds, retrying transient failures per ``policy``.

    Args:
        fn: makes one attempt.
        policy: the retry policy.
        on_retry: called once per retried failure (usage counting).

    Raises:
        LLMError: a non-retryable failure, or the last failure once retries are spent.
    """
    attempt = 0
    while True:
        try:
            return await fn()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            kind, status, retryable = classify(exc)
            attempt += 1
            if not retryable or attempt > policy.max_retries:
                detail = f"{type(exc).__name__}: {exc}"
                raise LLMError(
                    f"model call failed after {attempt} attempt(s): {detail}", kind=kind, status=status, attempts=attempt
                ) from exc
            if on_retry is not None:
                on_retry()
            await policy.sleep(policy.delay(attempt - 1, _retry_after(exc)))
