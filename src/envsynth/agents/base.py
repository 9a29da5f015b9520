"""The policy protocol: given the conversation so far and the tools, the next assistant message."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from envsynth.llm.types import Message, Usage

SYSTEM_PROMPT = (
    "You help a user by acting for them through the tools provided. Carry out the user's request "
    "with the tools; look up ids with the search and get tools instead of guessing them, and do only "
    "what was asked. When the request is done, call complete_task. If the user asked a question, pass "
    "the answer itself as complete_task's answer: the value they asked for (a number, an amount, a date, "
    "a name, a status, yes or no), or a short sentence that states it; never a list of guesses."
)

DEFAULT_MAX_TURNS = 30


def with_app_policy(system: str, app_policy: str) -> str:
    """The system message: the agent's prompt, then the app's policy under its own heading.

    Returns ``system`` unchanged when the app has no policy.
    """
    if not app_policy:
        return system
    return f"{system}\n\n## Policy\n\n{app_policy}" if system else f"## Policy\n\n{app_policy}"


@runtime_checkable
class Policy(Protocol):
    """Anything that picks the next assistant message of a function-calling conversation.

    Optional attributes read by the episode loop (:func:`envsynth.agents.loop.converse`):
    ``system_prompt`` (str, '' for none), ``max_turns`` (int), ``max_tokens`` (int or None),
    ``usage`` (:class:`~envsynth.llm.types.Usage`, added up over the policy's calls),
    ``name`` and ``model`` (recorded on trajectories).

    A policy instance serves one episode at a time (make one per episode; they may share
    a chat client).
    """

    async def next_message(self, messages: list[Message], tools: list[Message]) -> Message:
        """The next assistant message (OpenAI format; ``tool_calls`` to act, none to stop).

        Raises:
            envsynth.llm.LLMError: the model could not be reached (recorded, not fatal).
        """
        ...


def policy_usage(policy: Any) -> Usage:
    """A copy of the policy's usage so far (zero for policies that do not count)."""
    u = getattr(policy, "usage", None)
    return Usage(u.prompt_tokens, u.completion_tokens, u.requests, u.retries) if isinstance(u, Usage) else Usage()
