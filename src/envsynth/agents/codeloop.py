"""The code-acting loop (SynthAPI style): the policy writes Python, a sandbox runs it.

The conversation is plain OpenAI chat, with no ``tools`` offered to the model:

* ``system``: :data:`CODE_SYSTEM_PROMPT` (the policy's ``system_prompt``), with ``{tools}``
  replaced by one line per task tool.
* ``user``: the instruction.
* ``assistant``: text with one or more fenced ```` ```python ```` blocks (all blocks of a
  message are joined and run as one).
* ``user``: the observation, ``"Observation:\\n"`` then what the block printed and its
  error (the CodeAct / smolagents convention: execution results come back as a user turn,
  so the trajectory needs no ``tool`` role and exports to SFT like any chat).

The loop ends when ``complete_task`` ran, at an assistant message without a python
block (with a user simulator, that message goes to the user instead, and the user's
reply comes back as a plain ``user`` message), or at the turn or token limit. Each block runs in a
:class:`~envsynth.sandbox.CodeActEpisode` (a sandboxed worker, never this process), in a
thread so other episodes keep going while it runs.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

from envsynth.agents.base import DEFAULT_MAX_TURNS, Policy, policy_usage, with_app_policy
from envsynth.agents.loop import COMPLETE, Conversation, _usage_since, ask, hand_to_user, open_conversation
from envsynth.llm.types import Message, message_text

if TYPE_CHECKING:
    from envsynth.agents.user import UserSimulator
    from envsynth.sandbox import CodeActEpisode, Observation

CODE_SYSTEM_PROMPT = (
    "You help a user by acting for them through tools, which you call by writing Python code.\n"
    "Write your code in a fenced block:\n"
    "```python\n"
    "orders = search_orders(status=['pending'])\n"
    "print(orders)\n"
    "```\n"
    "The block runs and you get back what it printed and any error, so print what you need "
    "to see. Variables persist between your blocks. Every tool is a Python function taking "
    "keyword arguments; it returns the result as Python data and raises ToolError when the "
    "call is rejected. These functions are also defined:\n"
    "- list_apps(): the apps you can act on.\n"
    "- list_tools(): the name and summary of every tool.\n"
    "- get_tool_documentation(name): a tool's parameters and description.\n"
    "- complete_task(answer=None): call it when the request is done; if the user asked a "
    "question, pass the answer itself (the value they asked for, or a short sentence stating "
    "it); it ends the task.\n"
    "Look up ids with the search and get tools instead of guessing them, and do only what was "
    "asked. Your tools:\n"
    "{tools}"
)
"""The code-mode system prompt; ``{tools}`` becomes one line per task tool."""

OBSERVATION = "Observation:\n"
"""The prefix of an observation message (role ``user``)."""

_BLOCK = re.compile(r"```[ \t]*(?:python3?|py)[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def extract_code(text: str | None) -> str | None:
    """The python code of an assistant message: its ```python blocks joined, or None if it has none.

    An unterminated last block (a reply cut at a stop sequence) runs up to the end.
    """
    blocks = _BLOCK.findall(text or "")
    return "\n\n".join(b.strip("\n") for b in blocks) if blocks else None


def tool_lines(tools: list[Message]) -> str:
    """One ``- name(params): summary`` line per tool schema (``complete_task`` left out)."""
    lines = []
    for t in tools:
        fn = t.get("function", t)
        if fn["name"] == COMPLETE:
            continue
        params = fn.get("parameters") or {}
        required = set(params.get("required") or [])
        sig = ", ".join(p if p in required else f"{p}=None" for p in params.get("properties") or {})
        summary = (fn.get("description") or "").strip().split("\n")[0]
        lines.append(f"- {fn['name']}({sig})" + (f": {summary}" if summary else ""))
    return "\n".join(lines) or "(none)"


def observation_message(obs: Observation) -> Message:
    """The user message that reports a block's outcome to the model."""
    text = obs.text.rstrip("\n")
    if obs.done:
        text = f"{text}\nTask completed." if text.strip() else "Task completed."
    elif not text.strip():
        text = "(no output)"
    return {"role": "user", "content": OBSERVATION + text}


class _Recording:
    """Stands in for the TaskEpisode inside a CodeActEpisode and logs each tool call's outcome."""

    def __init__(self, episode: Any, conv: Conversation) -> None:
        self._inner = episode
        self._conv = conv

    def call(self, name: str, arguments: Any = None) -> Any:
        res = self._inner.call(name, arguments)
        args = arguments if isinstance(arguments, dict) else None
        self._conv.tool_calls.append({"turn": self._conv.turns, "tool": name, "outcome": res.outcome, "code": res.code, "arguments": args})
        return res

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def converse_code(episode: CodeActEpisode, policy: Policy, user: UserSimulator | None = None) -> Conversation:
    """Run ``policy`` on a code-acting episode until it completes, stops writing code or hits a limit.

    The policy's ``system_prompt`` (``{tools}`` filled in; the app's policy after it, if any) and the instruction (or the
    ``user`` simulator's opening) open the conversation; a message without code goes to
    the user simulator, if any (see :func:`~envsynth.agents.loop.hand_to_user`); ``next_message`` is called with no tools. ``Conversation.tool_calls``
    logs every tool call the code made (outcome and rejection code, the turn of its
    block) and ``complete_task``; ``stop_reason`` is ``complete_task``,
    ``final_message``, ``max_turns``, ``max_tokens``, ``model_error``, ``agent_error`` or
    the user simulator's ``user_stop``, ``user_turns``, ``user_error``. A failed model call is recorded, never raised. The episode is not finished here.
    """
    task_episode = episode.episode
    system = with_app_policy(getattr(policy, "system_prompt", "") or "", getattr(task_episode, "app_policy", ""))
    max_turns = getattr(policy, "max_turns", None) or DEFAULT_MAX_TURNS
    max_tokens = getattr(policy, "max_tokens", None)
    messages: list[Message] = [{"role": "system", "content": system.replace("{tools}", tool_lines(task_episode.tools))}] if system else []
    conv = Conversation(messages)
    start = policy_usage(policy)
    going = await open_conversation(messages, task_episode.instruction, user, conv)
    episode.episode = _Recording(task_episode, conv)  # type: ignore[assignment]
    try:
        while going and not conv.completed:
            if conv.turns >= max_turns:
                conv.stop_reason = "max_turns"
                break
            reply = await ask(policy, messages, [], conv)  # code agents get no function schemas
            if reply is None:
                break
            content = message_text(reply.get("content"))
            messages.append({"role": "assistant", "content": content})
            code = extract_code(content)
            if code is None:
                if await hand_to_user(content, messages, user, conv):
                    continue
                break
            t0 = time.perf_counter()
            obs = await asyncio.to_thread(episode.run, code)
            conv.tools_s += time.perf_counter() - t0
            messages.append(observation_message(obs))
            if obs.done:
                conv.completed, conv.answer, conv.stop_reason = True, obs.answer, COMPLETE
                conv.tool_calls.append({"turn": conv.turns, "tool": COMPLETE, "outcome": "success", "code": None, "arguments": None})
            elif max_tokens is not None and _usage_since(policy, start).total_tokens >= max_tokens:
                conv.stop_reason = "max_tokens"
                break
    finally:
        episode.episode = task_episode
    conv.usage = _usage_since(policy, start)
    return conv
