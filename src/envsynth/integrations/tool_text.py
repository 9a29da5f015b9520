"""Tool calls written in a model's text: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

The format of the Hermes and Qwen chat templates. The SkyRL-gym environment reads a turn's
calls with it, and the TRL reward functions read the calls of a completion that came back as
text.
"""

from __future__ import annotations

import json
import re

from envsynth.tasks.trainer import Action

_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_SHOWN = 200
"""Characters of a malformed call quoted back to the model, at most."""


def parse_tool_calls(text: str) -> list[Action | str]:
    """The tool calls in a model's text, in order: each an :class:`Action`, or a message saying why it is not one.

    A call is ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``; ``arguments`` may be
    an object, its JSON text, or left out. A ``<tool_call>`` never closed is a malformed call.
    """
    calls: list[Action | str] = [_parse_one(i, m.group(1)) for i, m in enumerate(_CALL.finditer(text), 1)]
    tail = _CALL.sub("", text)
    if "<tool_call>" in tail:
        calls.append(f"Tool call {len(calls) + 1} has no closing </tool_call>.")
    return calls


def _parse_one(n: int, body: str) -> Action | str:
    """One call's JSON as an :class:`Action`, or what is wrong with it."""
    try:
        value = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        return (
            f"Tool call {n} is not valid JSON ({exc.msg if isinstance(exc, json.JSONDecodeError) else 'nested too deeply'}): {_quote(body)}"
        )
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return f'Tool call {n} must be a JSON object with a string "name" and an "arguments" object: {_quote(body)}'
    extra = set(value) - {"name", "arguments"}
    if extra:
        return f'Tool call {n} has keys other than "name" and "arguments": {_quote(", ".join(sorted(extra)))}'
    return Action(value["name"], value.get("arguments"))


def _quote(text: str) -> str:
    """``text`` stripped and cut to a length fit to show the model."""
    text = text.strip()
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text)} characters)"
