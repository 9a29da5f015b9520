"""Chat models for agents: an async OpenAI-compatible client and a scripted provider for tests.

Usage::

    from envsynth.llm import OpenAIChat, ScriptedProvider, tool_reply
    llm = OpenAIChat("Qwen/Qwen3-8B", base_url="http://localhost:8000/v1", concurrency=32)
    resp = await llm.complete(messages, tools)      # resp.message (OpenAI dict), resp.usage

``openai`` is only imported when an :class:`OpenAIChat` makes its first request.
"""

from __future__ import annotations

from envsynth.llm.mock import Fail, MockLLM, ScriptedProvider, text_reply, tool_call, tool_reply
from envsynth.llm.openai_client import OpenAIChat
from envsynth.llm.retry import RetryPolicy, classify, with_retries
from envsynth.llm.types import ChatModel, ChatResponse, LLMError, Message, Usage

__all__ = [
    "ChatModel",
    "ChatResponse",
    "Fail",
    "LLMError",
    "Message",
    "MockLLM",
    "OpenAIChat",
    "RetryPolicy",
    "ScriptedProvider",
    "Usage",
    "classify",
    "text_reply",
    "tool_call",
    "tool_reply",
    "with_retries",
]
