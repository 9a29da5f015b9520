"""Trajectory messages -> TRL's conversational tool-calling format."""

from __future__ import annotations

import json
from typing import Any

from envsynth.errors import EnvsynthError


class MalformedMessage(EnvsynthError, ValueError):
    """A tool call whose arguments are not a JSON object (such an episode is not exported)."""


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise MalformedMessage(f"tool-call arguments are not JSON: {raw[:80]!r}") from None
    if not isinstance(raw, dict):
        raise MalformedMessage(f"tool-call arguments are not a JSON object: {raw!r}"[:120])
    return raw


def _text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def to_trl_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages as TRL's SFTTrainer takes them for tool calling.

    System, user and assistant text become strings (``None`` -> ``""``); assistant tool
    calls become ``{"id", "type": "function", "function": {"name", "arguments": dict}}``;
    tool messages keep ``tool_call_id`` and always carry the tool's ``name`` (taken from
    the matching call when the message lacks it). Other keys are dropped.

    Raises:
        MalformedMessage: a tool call's arguments are not a JSON object.
    """
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for m in messages:
        role = m.get("role")
        msg: dict[str, Any] = {"role": role, "content": _text(m.get("content"))}
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function") or {}
                call: dict[str, Any] = {
                    "type": "function",
                    "function": {"name": fn.get("name"), "arguments": _arguments(fn.get("arguments"))},
                }
                if c.get("id"):
                    call = {"id": c["id"], **call}
                    names[c["id"]] = fn.get("name")
                calls.append(call)
            msg["tool_calls"] = calls
        elif role == "tool":
            tid = m.get("tool_call_id")
            msg = {"role": "tool", "name": m.get("name") or names.get(tid, ""), "content": msg["content"]}
            if tid:
                msg["tool_call_id"] = tid
        out.append(msg)
    return out
