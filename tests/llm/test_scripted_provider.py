"""The scripted provider (envsynth.llm.mock) is a ChatModel, and its failures go through the retry layer as a real client's do."""

from __future__ import annotations

import asyncio
import json

import pytest

from envsynth.llm import Fail, LLMError, ScriptedProvider, text_reply, tool_reply


def test_client_errors_are_not_retried() -> None:
    llm = ScriptedProvider([Fail(400), text_reply("never")])
    with pytest.raises(LLMError) as info:
        asyncio.run(llm.complete([{"role": "user", "content": "hi"}]))
    assert info.value.kind == "client" and info.value.attempts == 1 and len(llm.requests) == 1


def test_scripted_provider_is_a_chat_model() -> None:
    from envsynth.llm import ChatModel

    llm = ScriptedProvider([tool_reply(("x", {"a": 1})), "plain"])
    assert isinstance(llm, ChatModel)
    first = asyncio.run(llm.complete([{"role": "user", "content": "hi"}], []))
    assert first.finish_reason == "tool_calls" and json.loads(first.message["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
    second = asyncio.run(llm.complete([{"role": "user", "content": "hi"}]))
    assert second.message == {"role": "assistant", "content": "plain"} and llm.usage.requests == 2
