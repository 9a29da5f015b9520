"""Agents for task episodes (function-calling mode; code-acting mode in :mod:`envsynth.agents.codeloop`).

A :class:`Policy` returns the next assistant message; :func:`converse` runs it on a
:class:`~envsynth.tasks.episode.TaskEpisode`. :class:`ChatAgent` asks an
OpenAI-compatible model, :class:`OracleAgent` replays the task's oracle; :class:`UserSimulator` (optional) has an LLM play the user::

    from envsynth.agents import ChatAgent, OracleAgent
    from envsynth.llm import OpenAIChat
    llm = OpenAIChat("gpt-4.1-mini", concurrency=16)
    agent = ChatAgent(llm, max_turns=30, temperature=0.0)
"""

from __future__ import annotations

from envsynth.agents.base import DEFAULT_MAX_TURNS, SYSTEM_PROMPT, Policy
from envsynth.agents.chat import ChatAgent
from envsynth.agents.codeloop import CODE_SYSTEM_PROMPT, converse_code, extract_code
from envsynth.agents.loop import COMPLETE, MALFORMED, Conversation, converse
from envsynth.agents.oracle import OracleAgent, OracleError
from envsynth.agents.oracle_code import OracleCodeAgent, oracle_code
from envsynth.agents.user import USER_STOP, UserSimulator, UserTurn

__all__ = [
    "CODE_SYSTEM_PROMPT",
    "COMPLETE",
    "DEFAULT_MAX_TURNS",
    "MALFORMED",
    "SYSTEM_PROMPT",
    "USER_STOP",
    "ChatAgent",
    "Conversation",
    "OracleAgent",
    "OracleCodeAgent",
    "OracleError",
    "Policy",
    "UserSimulator",
    "UserTurn",
    "converse",
    "converse_code",
    "extract_code",
    "oracle_code",
]
