"""Reading a model's reply and its errors: the one JSON object in it, pydantic errors in words, what a failure says.

Replies are parsed leniently (fences, prose around the object, trailing commas,
``<think>`` blocks); a validation error becomes lines ``path: message (got value)`` that
are sent back to the model for a corrected reply. In prompt mode the schema goes into the
system message (:func:`with_schema_instruction`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from envsynth.llm.types import LLMError, Message, message_text

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _drop_trailing_commas(text: str) -> str:
    """``text`` without commas that directly precede ``}`` or ``]`` (outside strings)."""
    out: list[str] = []
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ",":
            j = i + 1
            while j < len(text) and text[j].isspace():
                j += 1
            if j < len(text) and text[j] in "}]":
                continue
        out.append(ch)
    return "".join(out)


def _loads(text: str) -> Any:
    """``text`` as JSON, tolerating trailing commas. Raises ``ValueError``."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_drop_trailing_commas(text))


def _balanced_objects(text: str) -> list[str]:
    """The top-level balanced ``{...}`` spans of ``text``, in order (braces in strings ignored)."""
    spans: list[str] = []
    depth, start = 0, -1
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and depth > 0:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def extract_json_object(text: str) -> dict[str, Any]:
    """The one JSON object in a model reply.

    Accepted: plain JSON; JSON in a ```` ```json ```` (or any) fence; the first balanced
    top-level ``{...}`` in surrounding prose. Trailing commas are tolerated and
    ``<think>...</think>`` blocks are skipped.

    Raises:
        ValueError: no JSON object could be read; the message says why.
    """
    body = _THINK.sub("", text).strip()
    if not body:
        raise ValueError("the reply is empty: expected one JSON object")
    first_error: str | None = None
    for candidate in [body, *(m.strip() for m in _FENCE.findall(body)), *_balanced_objects(body)]:
        try:
            obj = _loads(candidate)
        except ValueError as exc:
            first_error = first_error or (str(exc) if candidate.startswith(("{", "[")) else None)
            continue
        if not isinstance(obj, dict):
            raise ValueError(f"expected one JSON object ({{...}}), got a JSON {_JSON_TYPES.get(type(obj), type(obj).__name__)}")
        return obj
    if first_error is None:
        raise ValueError("the reply contains no JSON object ({...})")
    raise ValueError(f"the reply is not valid JSON: {first_error}")


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(root)"


def validation_errors(exc: ValidationError) -> str:
    """A pydantic error as lines ``path: message (got value)``, e.g. ``tools[0].name: Field required``."""
    lines = []
    for err in exc.errors(include_url=False):
        got = "" if err["type"] == "missing" else f" (got {json.dumps(err.get('input'), default=str)[:120]})"
        lines.append(f"{_path(err['loc'])}: {err['msg']}{got}")
    return f"{exc.error_count()} validation error(s):\n" + "\n".join(lines)


def schema_name(schema: type[BaseModel]) -> str:
    """The class name as OpenAI accepts a ``json_schema`` name (``[a-zA-Z0-9_-]``, at most 64)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "output"


def with_schema_instruction(messages: list[Message], schema_json: dict[str, Any]) -> list[Message]:
    """``messages`` with the instruction to answer in one JSON object of ``schema_json`` in the system message."""
    instruction = (
        "Reply with ONE JSON object that matches this JSON schema, and nothing else "
        "(no prose before or after it):\n" + json.dumps(schema_json, indent=2, ensure_ascii=False)
    )
    if messages and messages[0].get("role") == "system":
        head = messages[0]
        return [{**head, "content": f"{message_text(head.get('content'))}\n\n{instruction}"}, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "guided_json")
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "reduce the length",
)


def is_context_length(exc: LLMError) -> bool:
    """Whether a failed call says the prompt (plus ``max_tokens``) is over the model's context."""
    text = str(exc).lower()
    return exc.status in (400, 413, 422, None) and any(w in text for w in _CONTEXT_WORDS)


def is_response_format_rejection(exc: LLMError) -> bool:
    """Whether a 400/422 is about ``response_format`` (a server without JSON-schema output), not another mistake."""
    text = str(exc).lower()
    return exc.status in (400, 422) and not is_context_length(exc) and any(w in text for w in _FORMAT_WORDS)
