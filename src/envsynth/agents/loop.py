"""The function-calling loop: a policy talks, tool calls run in the episode, until it completes.

Tool calls run synchronously in the event loop's thread: an episode is an in-memory
SQLite database and a call takes tens of microseconds. Model calls are awaited.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envsynth.agents.base import DEFAULT_MAX_TURNS, Policy, policy_usage, with_app_policy
from envsynth.llm.types import LLMError, Message, Usage, message_text
from envsynth.runtime.episode import parse_arguments, short_repr
from envsynth.tasks.episode import TaskEpisode

if TYPE_CHECKING:
    from envsynth.agents.user import UserSimulator

COMPLETE = "complete_task"
MALFORMED = "malformed"
"""Outcome class of a tool call the loop could not run: arguments that are not a JSON object."""


@dataclass
class Conversation:
    """What happened in one episode, before scoring.

    Attributes:
        messages: the OpenAI chat messages (system, user, assistant with tool calls, tool).
        completed: ``complete_task`` was called.
        answer: its ``answer`` argument.
        stop_reason: ``complete_task``, ``final_message``, ``max_turns``, ``max_tokens``,
            ``model_error`` or ``agent_error``; with a user simulator also ``user_stop`` (the
            user ended it), ``user_turns`` (the user had no replies left) or ``user_error``
            (the simulator's model failed).
        turns: assistant messages.
        user_turns: the user simulator's replies (0 without one).
        user_usage: the user simulator's usage (None without one).
        tool_calls: ``{"turn", "tool", "outcome", "code", "arguments"}`` per call (outcome: ``success``,
            ``anticipated_rejection``, ``unexpected_failure``, ``malformed`` or ``skipped``; ``arguments``:
            the object the call was made with, None when it was not one).
        usage: the policy's usage in this episode.
        error: ``{"type", "kind", "status", "message"}`` for a model or agent failure.
        model_s: seconds waiting for the policy.
        tools_s: seconds running tool calls.
    """

    messages: list[Message]
    completed: bool = False
    answer: Any = None
    stop_reason: str = ""
    turns: int = 0
    user_turns: int = 0
    user_usage: Usage | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    error: dict[str, Any] | None = None
    model_s: float = 0.0
    tools_s: float = 0.0


def _clean(msg: Message) -> Message:
    """The assistant message as it goes back to the model: role, content, tool calls with ids.

    A malformed tool call (not an object, a name that is not text, arguments JSON cannot
    carry) is kept as a call the episode rejects, never raised.
    """
    out: Message = {"role": "assistant", "content": msg.get("content")}
    calls = []
    raw_calls = msg.get("tool_calls") or []
    for i, c in enumerate(raw_calls if isinstance(raw_calls, list) else [raw_calls]):
        c = c if isinstance(c, dict) else {}
        fn = c.get("function") if isinstance(c.get("function"), dict) else {}
        name = fn.get("name") or ""
        calls.append(
            {
                "id": str(c.get("id") or f"call_{i}"),
                "type": "function",
                "function": {
                    "name": name if isinstance(name, str) else short_repr(name),
                    "arguments": _arguments_text(fn.get("arguments")),
                },
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def _arguments_text(args: Any) -> str:
    """A call's arguments as JSON text (as models send them); a value JSON cannot carry gives text that is not JSON."""
    if isinstance(args, str):
        return args
    if args is None:
        return ""
    try:
        return json.dumps(args)
    except (TypeError, ValueError, RecursionError):
        return short_repr(args)


def _parse(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments text -> (object, None) or (None, error message); never raises (see :func:`parse_arguments`)."""
    value, problem = parse_arguments(raw)
    if problem is not None:
        return None, problem
    if not isinstance(value, dict):
        return None, f"a JSON {type(value).__name__}, not an object"
    return value, None


def _usage_since(policy: Policy, start: Usage) -> Usage:
    now = policy_usage(policy)
    return Usage(
        now.prompt_tokens - start.prompt_tokens,
        now.completion_tokens - start.completion_tokens,
        now.requests - start.requests,
        now.retries - start.retries,
    )


def _error(exc: BaseException, source: str = "agent") -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "kind": getattr(exc, "kind", "agent"),
        "status": getattr(exc, "status", None),
        "message": str(exc)[:2000],
        "source": source,
    }


async def open_conversation(messages: list[Message], instruction: str, user: UserSimulator | None, conv: Conversation) -> bool:
    """Append the first user message: the instruction, or the user simulator's opening.

    Returns False (with ``stop_reason`` and ``error`` set) when the simulator's model failed.
    """
    if user is None:
        messages.append({"role": "user", "content": instruction})
        return True
    conv.user_usage = user.usage
    try:
        turn = await user.opening()
    except LLMError as exc:
        conv.error, conv.stop_reason = _error(exc, "user"), "user_error"
        return False
    conv.user_turns += 1
    messages.append({"role": "user", "content": turn.text})
    if turn.done:  # a user who is done before asking anything
        conv.stop_reason = "user_stop"
        return False
    return True


async def hand_to_user(text: str, messages: list[Message], user: UserSimulator | None, conv: Conversation) -> bool:
    """The agent wrote to the user (no tool call, no code): let the user simulator answer.

    Without a simulator this ends the conversation (``final_message``). With one, its reply
    becomes the next user message and the conversation goes on, unless the user ended it
    (``user_stop``: their closing words are not sent, the agent would not read them), has
    no replies left (``user_turns``) or the simulator's model failed (``user_error``).

    Returns:
        Whether the conversation goes on.
    """
    if user is None:
        conv.stop_reason = "final_message"
        return False
    if user.exhausted:
        conv.stop_reason = "user_turns"
        return False
    try:
        turn = await user.respond(text)
    except LLMError as exc:
        conv.error, conv.stop_reason = _error(exc, "user"), "user_error"
        return False
    conv.user_turns += 1
    if turn.done:
        conv.stop_reason = "user_stop"
        return False
    messages.append({"role": "user", "content": turn.text})
    return True


async def ask(policy: Policy, messages: list[Message], tools: list[Any], conv: Conversation) -> Message | None:
    """One model turn: the policy's next message, or None after recording why there is none.

    Counts the turn and the time spent; a model failure (after the client's retries) stops
    the conversation with ``model_error``, any other exception with ``agent_error``.
    """
    t0 = time.perf_counter()
    try:
        reply = await policy.next_message(list(messages), tools)
    except LLMError as exc:
        conv.error, conv.stop_reason = _error(exc), "model_error"
        return None
    except Exception as exc:
        conv.error, conv.stop_reason = _error(exc), "agent_error"
        return None
    finally:
        conv.model_s += time.perf_counter() - t0
    if not isinstance(reply, dict):
        conv.error, conv.stop_reason = _error(TypeError(f"the policy replied {short_repr(reply)}, not a message")), "agent_error"
        return None
    conv.turns += 1
    return reply


async def converse(episode: TaskEpisode, policy: Policy, user: UserSimulator | None = None) -> Conversation:
    """Run ``policy`` on ``episode`` until it completes, stops talking or hits a limit.

    The policy's ``system_prompt`` (if any), followed by the app's policy (``episode.app_policy``,
    under "## Policy") when the app has one, and the instruction open the conversation;
    with a ``user`` simulator, the user's own opening replaces the instruction and each
    assistant message without tool calls goes to the user, whose reply comes back as the
    next user message (see :func:`hand_to_user`) and counts as asking the user (:meth:`TaskEpisode.note_user_message`).
    Each tool call runs through ``episode.call``; its result (or error message) comes back
    as a ``role: tool`` message with ``tool_call_id`` and ``name``. Arguments that are not a
    JSON object come back as an error message the model can act on (outcome ``malformed``);
    an unknown tool is the episode's rejection. ``complete_task`` ends the episode after the
    calls before it in the same message; later ones are answered as skipped. A failed
    model call ends the conversation with ``error`` set; it is never raised. The episode
    is not finished here (see :func:`envsynth.rollout.run_episode`).
    """
    system = with_app_policy(getattr(policy, "system_prompt", "") or "", getattr(episode, "app_policy", ""))
    max_turns = getattr(policy, "max_turns", None) or DEFAULT_MAX_TURNS
    max_tokens = getattr(policy, "max_tokens", None)
    messages: list[Message] = [{"role": "system", "content": system}] if system else []
    conv = Conversation(messages)
    start = policy_usage(policy)
    going = await open_conversation(messages, episode.instruction, user, conv)
    while going and not conv.completed:
        if conv.turns >= max_turns:
            conv.stop_reason = "max_turns"
            break
        reply = await ask(policy, messages, episode.tools, conv)
        if reply is None:
            break
        msg = _clean(reply)
        messages.append(msg)
        if not msg.get("tool_calls"):
            if user is not None and message_text(msg.get("content")):
                episode.note_user_message()  # a message to the simulated user asks (a must-ask task's clarification part)
            if await hand_to_user(message_text(msg.get("content")), messages, user, conv):
                continue
            break
        t0 = time.perf_counter()
        for call in msg["tool_calls"]:
            _run_call(episode, conv, call)
        conv.tools_s += time.perf_counter() - t0
        if not conv.completed and max_tokens is not None and _usage_since(policy, start).total_tokens >= max_tokens:
            conv.stop_reason = "max_tokens"
            break
    conv.usage = _usage_since(policy, start)
    return conv


def _run_call(episode: TaskEpisode, conv: Conversation, call: Message) -> None:
    name = call["function"]["name"]
    code: str | None = None
    args: dict[str, Any] | None = None
    if conv.completed:
        outcome, content = "skipped", f"Not run: {COMPLETE} was already called."
    else:
        args, problem = _parse(call["function"]["arguments"])
        if args is None:
            outcome, code = MALFORMED, "invalid_json"
            content = f"Error: the arguments of {name or 'this call'} are {problem}. Send the arguments as one JSON object."
        elif name == COMPLETE:
            conv.completed, conv.answer, conv.stop_reason = True, args.get("answer"), COMPLETE
            outcome, content = "success", "Task completed."
        else:
            res = episode.call(name, args)
            outcome, content, code = res.outcome, res.content, res.code
    conv.messages.append({"role": "tool", "tool_call_id": call["id"], "name": name, "content": content})
    conv.tool_calls.append(
        {"turn": conv.turns, "tool": name, "outcome": outcome, "code": code, "arguments": args if outcome != MALFORMED else None}
    )
