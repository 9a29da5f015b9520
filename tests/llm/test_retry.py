"""The retry layer (envsynth.llm.retry): which failures are retried, and what a failure for good looks like."""

from __future__ import annotations

import asyncio
import json

import pytest

from envsynth.errors import EnvsynthError
from envsynth.llm import Fail, LLMError, RetryPolicy, ScriptedProvider
from envsynth.llm.mock import ScriptedHTTPError
from envsynth.llm.retry import classify


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ScriptedHTTPError(429, "slow down"), ("rate_limit", 429, True)),
        (ScriptedHTTPError(503, "busy"), ("server", 503, True)),
        (ScriptedHTTPError(401, "who are you"), ("client", 401, False)),
        (ConnectionError("refused"), ("connection", None, True)),
        (TimeoutError("late"), ("connection", None, True)),
        (json.JSONDecodeError("not json", "<html>", 0), ("bad_response", None, True)),
        (LLMError("no choices", kind="bad_response"), ("bad_response", None, True)),
        (LLMError("no key", kind="client"), ("client", None, False)),
        (ZeroDivisionError("a bug"), ("other", None, False)),
    ],
)
def test_classify(exc: BaseException, expected: tuple[str, int | None, bool]) -> None:
    assert classify(exc) == expected


def test_retryable_failures_are_retried_then_reported_as_one_llm_error() -> None:
    async def no_sleep(_: float) -> None:
        return None

    llm = ScriptedProvider([Fail(500), Fail(None), Fail(429)], retry=RetryPolicy(max_retries=2, sleep=no_sleep))
    with pytest.raises(LLMError) as info:
        asyncio.run(llm.complete([{"role": "user", "content": "hi"}]))
    assert (info.value.kind, info.value.status, info.value.attempts) == ("rate_limit", 429, 3) and len(llm.requests) == 3
    assert isinstance(info.value, EnvsynthError)
