"""ChatAgent: a policy backed by an OpenAI-compatible chat model (function calling)."""

from __future__ import annotations

from typing import Any

from envsynth.agents.base import DEFAULT_MAX_TURNS, SYSTEM_PROMPT
from envsynth.llm.types import ChatModel, LLMError, Message, Usage


class ChatAgent:
    """Asks ``llm`` for each assistant message, offering the episode's tools.

    Attributes:
        llm: the chat model (:class:`~envsynth.llm.OpenAIChat`, :class:`~envsynth.llm.ScriptedProvider`...).
        system_prompt: the system message ('' for none).
        max_turns: model calls per episode at most.
        max_tokens: prompt + completion tokens per episode at most (None: no limit).
        tool_names: send the ``name`` of ``role: tool`` messages (off for servers that refuse it).
        params: extra chat-completions parameters (``temperature``...).
        usage: this agent's calls only (the client keeps the grand total).
    """

    name = "chat"

    def __init__(
        self,
        llm: ChatModel,
        *,
        system_prompt: str = SYSTEM_PROMPT,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_tokens: int | None = None,
        tool_names: bool = True,
        **params: Any,
    ) -> None:
        self.llm = llm
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.max_tokens = max_tokens
        self.tool_names = tool_names
        self.params = params
        self.usage = Usage()

    @property
    def model(self) -> str:
        return self.llm.model

    async def next_message(self, messages: list[Message], tools: list[Message]) -> Message:
        """The model's reply to the conversation so far.

        Raises:
            envsynth.llm.LLMError: the call failed after retries.
        """
        if not self.tool_names:
            messages = [{k: v for k, v in m.items() if k != "name"} if m.get("role") == "tool" else m for m in messages]
        try:
            resp = await self.llm.complete(messages, tools, **self.params)
        except LLMError as exc:
            self.usage.retries += max(0, exc.attempts - 1)
            raise
        self.usage.add(resp.usage)
        return resp.message
