"""The client every builder role calls: structured outputs, an on-disk reply cache, a token budget, metrics.

Usage::

    client = BuilderClient(OpenAIChat("Qwen/Qwen3-8B", base_url=url), cache_dir="out/.llm-cache", max_tokens_total=2_000_000)
    design = await client.structured("domain_designer", messages, DomainDesign)   # a validated DomainDesign
    notes = await client.text("debug_agent", messages)
    client.metrics()   # per-role calls, cache hits, tokens, invalid outputs, retries

Structured outputs are asked for with ``response_format`` (JSON schema) when the server
takes it, else by a prompt instruction carrying the schema ("auto" switches once, on the
first rejection). Replies are parsed leniently (fences, prose around the object, trailing
commas), validated with pydantic, and an invalid reply is sent back with the exact error
for a corrected one.

Every reply is cached by the sha256 of what was asked (model, messages, mode, schema,
params), so a rerun of a pipeline replays without a model call, and a run stopped by the
token budget resumes where it stopped when rerun with a larger one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from envsynth.errors import LLMBuildError
from envsynth.llm.types import ChatModel, ChatResponse, LLMError, Message, Usage, message_text

__all__ = [
    "BudgetExceeded",
    "BuildStop",
    "BuilderClient",
    "CallFailed",
    "EndpointUnavailable",
    "PromptTooLong",
    "RoleError",
    "RoleStats",
    "StructuredOutputError",
    "estimate_tokens",
    "extract_json_object",
    "validation_errors",
]

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
StructuredMode = Literal["auto", "json_schema", "prompt"]


class BuildStop(LLMBuildError, RuntimeError):
    """The build must stop now, cleanly: nothing more is asked of the model in this run.

    Every reply so far is cached, so rerunning the same command continues where this run
    stopped. The subclasses say why.
    """


class BudgetExceeded(BuildStop):
    """The token budget does not cover the next request: it is not sent.

    Attributes:
        spent: prompt + completion tokens of the real (non-cached) calls so far.
        budget: the ``max_tokens_total`` the client was given.
        needed: what the refused request could have used (its prompt estimate plus its
            ``max_tokens``), added to the reservations of requests in flight.
    """

    def __init__(self, spent: int, budget: int, needed: int = 0) -> None:
        ask = (
            f"; the next request could use up to {needed} more (its prompt and max_tokens: --max-output-tokens lowers it)" if needed else ""
        )
        super().__init__(
            f"token budget spent: {spent} tokens used of --max-tokens-total {budget}{ask}. Rerun with a larger "
            "--max-tokens-total to continue where this run stopped (cached replies cost nothing)."
        )
        self.spent = spent
        self.budget = budget
        self.needed = needed


class EndpointUnavailable(BuildStop):
    """The model endpoint failed for good (after retries) where the build has no fallback.

    Attributes:
        role: the role whose call failed last.
        error: the chat client's error (status, kind, attempts).
    """

    def __init__(self, role: str, error: LLMError, why: str = "") -> None:
        status = f"HTTP {error.status}" if error.status is not None else error.kind
        first = str(error).splitlines()[0] if str(error) else status
        super().__init__(
            f"the model endpoint failed ({status}) for the {role} role{why}: {first[:300]}. "
            "Everything so far is cached: rerun the same command to continue once the endpoint works."
        )
        self.role = role
        self.error = error


class RoleError(LLMBuildError, RuntimeError):
    """A role got nothing usable from one request; the caller falls back (or drops what it was making).

    Attributes:
        role: the builder role that asked.
    """

    role: str


class PromptTooLong(RoleError):
    """A prompt does not fit the model's context: refused here by the estimate, or by the server (400).

    Attributes:
        role: the builder role.
        tokens: the estimated prompt tokens.
        limit: the prompt budget (tokens), or the context size when the server refused.
        by_server: the server answered that the context length is exceeded.
    """

    def __init__(self, role: str, tokens: int, limit: int, *, by_server: str = "") -> None:
        where = f"the server refused it: {by_server[:200]}" if by_server else f"over the prompt budget of {limit} tokens"
        super().__init__(
            f"{role}: the prompt (~{tokens} tokens) does not fit the model's context ({where}); "
            "set --context-tokens to the model's context length"
        )
        self.role = role
        self.tokens = tokens
        self.limit = limit
        self.by_server = by_server


class CallFailed(RoleError):
    """A call of a role that has a fallback failed after retries (the endpoint is not yet deemed down).

    Attributes:
        role: the builder role.
        error: the chat client's error.
    """

    def __init__(self, role: str, error: LLMError) -> None:
        super().__init__(f"{role}: the model call failed: {str(error).splitlines()[0][:300] if str(error) else error.kind}")
        self.role = role
        self.error = error


class StructuredOutputError(RoleError):
    """A role gave no valid structured output within its attempts.

    Attributes:
        role: the builder role that asked.
        attempts: replies received (the first and every correction).
        errors: the parse or validation error of each reply, the last one last.
    """

    def __init__(self, role: str, attempts: int, errors: list[str]) -> None:
        last = errors[-1] if errors else "no reply"
        super().__init__(f"{role}: no valid structured output after {attempts} attempt(s); last error: {last}")
        self.role = role
        self.attempts = attempts
        self.errors = list(errors)


class _FormatRejected(LLMBuildError):
    """The server rejected ``response_format`` (internal: ``auto`` switches to prompt mode)."""


@dataclass
class RoleStats:
    """What one role's calls cost and how they went.

    Attributes:
        calls: model requests sent (cache hits excluded; a request that failed counts).
        cache_hits: replies served from the cache, at no token cost.
        prompt_tokens: tokens sent in real calls.
        completion_tokens: tokens generated in real calls.
        invalid_outputs: replies that failed JSON parsing or pydantic validation.
        retries: transient failures retried by the chat client (each one a request the endpoint got).
        failures: calls that failed for good (after retries), or that the server refused as too long.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    invalid_outputs: int = 0
    retries: int = 0
    failures: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: RoleStats) -> None:
        """Add ``other`` into this one."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    @property
    def requests(self) -> int:
        """HTTP requests sent to the endpoint: every call's first attempt and its retries."""
        return self.calls + self.retries

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "requests": self.requests, "total_tokens": self.total_tokens}


# --- parsing a reply into one JSON object -------------------------------------------------

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


def _schema_name(schema: type[BaseModel]) -> str:
    """The class name as OpenAI accepts a ``json_schema`` name (``[a-zA-Z0-9_-]``, at most 64)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", schema.__name__)[:64] or "output"


def _with_schema_instruction(messages: list[Message], schema_json: dict[str, Any]) -> list[Message]:
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


def _is_context_length(exc: LLMError) -> bool:
    """Whether a failed call says the prompt (plus ``max_tokens``) is over the model's context."""
    text = str(exc).lower()
    return exc.status in (400, 413, 422, None) and any(w in text for w in _CONTEXT_WORDS)


def _is_response_format_rejection(exc: LLMError) -> bool:
    """Whether a 400/422 is about ``response_format`` (a server without JSON-schema output), not another mistake."""
    text = str(exc).lower()
    return exc.status in (400, 422) and not _is_context_length(exc) and any(w in text for w in _FORMAT_WORDS)


CONTEXT_TOKENS = 8192
"""The default context size of the model (tokens): prompts are fitted to it."""

CHARS_PER_TOKEN = 3
"""The token estimate: one token per 3 characters (tokenizers give 3.5 to 4 for English and JSON: an overestimate)."""

MAX_ECHO_CHARS = 4000
"""At most this much of an invalid reply is sent back with its correction (a head and a tail)."""

MAX_FAILURES = 3
"""Calls in a row that fail for good before the endpoint is deemed down (the build stops, even in a role with a fallback)."""


def estimate_tokens(messages: list[Message]) -> int:
    """A conservative estimate of the prompt tokens of ``messages`` (see :data:`CHARS_PER_TOKEN`)."""
    return 3 + sum(4 + -(-len(message_text(m.get("content"))) // CHARS_PER_TOKEN) for m in messages)


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: its head and its tail, with what was left out said in between."""
    if len(text) <= limit:
        return text
    if limit < 200:
        return f"[{len(text)} characters omitted]"
    head, tail = limit * 2 // 3, limit // 3 - 60
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[len(text) - tail :]}"


# --- the client -------------------------------------------------------------------------


class BuilderClient:
    """One chat model shared by the builder roles, with structured outputs, cache, budget and metrics.

    Attributes:
        chat: the chat model.
        stats: per-role :class:`RoleStats`, made on a role's first call.
        cache_dir: where replies are cached (None: no cache).
        max_tokens_total: the token budget of real calls (None: unbounded).
        max_invalid: corrections asked for after an invalid structured reply.
        context_tokens: the model's context size; every prompt is fitted to :attr:`prompt_budget`.
        max_output_tokens: the largest ``max_tokens`` of a request (None: what the context leaves).
        params: chat parameters sent with every call (``temperature``, ``seed``...).
    """

    def __init__(
        self,
        chat: ChatModel,
        *,
        cache_dir: str | Path | None = None,
        max_tokens_total: int | None = None,
        max_invalid: int = 2,
        structured: StructuredMode = "auto",
        context_tokens: int = CONTEXT_TOKENS,
        max_output_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
        **params: Any,
    ) -> None:
        """Args:
        chat: the chat model (``OpenAIChat``, ``ScriptedProvider``...).
        cache_dir: the reply cache folder; None for no cache.
        max_tokens_total: the token budget. A request is sent only if the tokens spent, the
            reservations of requests in flight and its own (prompt estimate + ``max_tokens``)
            fit in it; else ``BudgetExceeded``.
        max_invalid: extra attempts after a reply that does not parse or validate.
        structured: ``json_schema`` (``response_format``), ``prompt`` (schema in the system
            message) or ``auto`` (``json_schema`` until the server rejects it, then ``prompt``).
        context_tokens: the model's context length in tokens.
        max_output_tokens: ``max_tokens`` of every request at most (None: the context minus the prompt).
        temperature: sent with every request when not None.
        seed: sent with every request when not None.
        **params: more chat parameters for every call.

        Raises:
            ValueError: an unknown ``structured`` mode, a negative limit or a context too small.
        """
        if structured not in ("auto", "json_schema", "prompt"):
            raise ValueError(f"structured must be 'auto', 'json_schema' or 'prompt', not {structured!r}")
        if max_invalid < 0 or (max_tokens_total is not None and max_tokens_total < 0):
            raise ValueError("max_invalid and max_tokens_total must not be negative")
        if context_tokens < 1024:
            raise ValueError(f"the context must be at least 1024 tokens, got {context_tokens}")
        if max_output_tokens is not None and not 16 <= max_output_tokens <= context_tokens - 512:
            raise ValueError(f"max_output_tokens must be 16 to {context_tokens - 512} (the context less 512), got {max_output_tokens}")
        self.chat = chat
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.max_tokens_total = max_tokens_total
        self.max_invalid = max_invalid
        self.context_tokens = context_tokens
        self.max_output_tokens = max_output_tokens
        sampling = {"temperature": temperature, "seed": seed}
        self.params = {**{k: v for k, v in sampling.items() if v is not None}, **params}
        self.stats: dict[str, RoleStats] = {}
        self._auto = structured == "auto"
        self._mode: Literal["json_schema", "prompt"] = "prompt" if structured == "prompt" else "json_schema"
        self._reserved = 0
        self._failures = 0
        self._stopped: BuildStop | None = None

    @property
    def spent_tokens(self) -> int:
        """Prompt + completion tokens of the real (non-cached) calls so far."""
        return sum(s.total_tokens for s in self.stats.values())

    @property
    def prompt_budget(self) -> int:
        """The tokens a prompt may take (estimated): the context less ``max_output_tokens``, or half of it."""
        return self.context_tokens - (self.max_output_tokens or self.context_tokens // 2)

    @property
    def stopped(self) -> BuildStop | None:
        """Why this client sends no more requests (a spent budget, an endpoint down), or None."""
        return self._stopped

    def fits(self, messages: list[Message], schema: type[BaseModel] | None = None) -> bool:
        """Whether ``messages`` fit the prompt budget, with room for ``schema``'s instruction (prompt mode adds it)."""
        if schema is not None:
            messages = _with_schema_instruction(messages, schema.model_json_schema())
        return estimate_tokens(messages) <= self.prompt_budget

    @property
    def structured_mode(self) -> Literal["json_schema", "prompt"]:
        """How structured outputs are asked for now (``auto`` has settled on one of the two)."""
        return self._mode

    def _role(self, role: str) -> RoleStats:
        return self.stats.setdefault(role, RoleStats())

    async def text(self, role: str, messages: list[Message], *, fallback: bool = False, tag: str | None = None) -> str:
        """A plain completion's text (cached, budgeted and counted like structured calls).

        Raises:
            BuildStop: the budget is spent, or the endpoint failed and the role has no fallback.
            RoleError: the prompt is too long, or (``fallback``) the call failed.
        """
        resp = await self._call(role, messages, mode="text", schema=None, extra={}, fallback=fallback, tag=tag)
        return message_text(resp.message.get("content"))

    async def structured(self, role: str, messages: list[Message], schema: type[T], *, fallback: bool = False, tag: str | None = None) -> T:
        """A reply validated as ``schema``, asking again with the error after an invalid one.

        Args:
            role: the role asking (its stats).
            messages: the conversation.
            schema: the reply's model.
            fallback: the caller has a fallback: a call that fails after retries raises
                :class:`CallFailed` (until :data:`MAX_FAILURES` in a row), not a stop.
            tag: goes into the cache key (a debug round: the same prompt in another round is asked again).

        Raises:
            StructuredOutputError: ``max_invalid + 1`` replies, none valid.
            PromptTooLong: the prompt does not fit the context.
            CallFailed: (``fallback``) the call failed after retries.
            BuildStop: the budget is spent, or the endpoint failed for good.
        """
        stats = self._role(role)
        schema_json = schema.model_json_schema()
        convo = list(messages)
        errors: list[str] = []
        for _ in range(self.max_invalid + 1):
            resp = await self._structured_reply(role, convo, schema, schema_json, fallback, tag)
            text = message_text(resp.message.get("content"))
            try:
                return schema.model_validate(extract_json_object(text))
            except ValidationError as exc:
                error = validation_errors(exc)
            except ValueError as exc:
                error = str(exc)
            if resp.finish_reason == "length":
                error += " (the reply was cut off at the token limit: answer more briefly)"
            stats.invalid_outputs += 1
            errors.append(error)
            convo = self._correction(messages, text, schema, schema_json, error)
        raise StructuredOutputError(role, self.max_invalid + 1, errors)

    def _correction(
        self, messages: list[Message], text: str, schema: type[BaseModel], schema_json: dict[str, Any], error: str
    ) -> list[Message]:
        """``messages``, the invalid reply (clipped to fit the prompt budget) and the request to correct it."""
        correction = {
            "role": "user",
            "content": f"Your reply could not be used as a {schema.__name__}: {clip_text(error, 3000)}\n"
            "Reply again with ONE corrected JSON object that matches the schema, and nothing else.",
        }
        rest = [*messages, correction]
        if self._mode == "prompt":
            rest = _with_schema_instruction(rest, schema_json)
        room = (self.prompt_budget - estimate_tokens(rest) - 4) * CHARS_PER_TOKEN - 80
        echo = clip_text(text, max(0, min(MAX_ECHO_CHARS, room)))
        return [*messages, {"role": "assistant", "content": echo}, correction]

    async def _structured_reply(
        self, role: str, convo: list[Message], schema: type[BaseModel], schema_json: dict[str, Any], fallback: bool, tag: str | None
    ) -> ChatResponse:
        """One reply in the current mode; in ``auto``, a rejected ``response_format`` switches to ``prompt`` for good."""
        if self._mode == "json_schema":
            fmt = {"type": "json_schema", "json_schema": {"name": _schema_name(schema), "schema": schema_json, "strict": False}}
            try:
                return await self._call(
                    role, convo, mode="json_schema", schema=schema_json, extra={"response_format": fmt}, fallback=fallback, tag=tag
                )
            except _FormatRejected as exc:
                if self._mode == "json_schema":
                    log.warning("the server rejected response_format (%s); asking for JSON in the prompt from now on", exc)
                self._mode = "prompt"
        messages = _with_schema_instruction(convo, schema_json)
        return await self._call(role, messages, mode="prompt", schema=schema_json, extra={}, fallback=fallback, tag=tag)

    def _request_params(self, prompt_tokens: int, extra: dict[str, Any]) -> dict[str, Any]:
        """The request's parameters: the client's, ``max_tokens`` (what the context leaves, capped) and ``extra``."""
        room = self.context_tokens - prompt_tokens
        max_tokens = room if self.max_output_tokens is None else min(self.max_output_tokens, room)
        return {**self.params, "max_tokens": max_tokens, **extra}

    def _reserve(self, tokens: int) -> None:
        """Reserve ``tokens`` of the budget for a request about to be sent, or stop (``BudgetExceeded``)."""
        if self._stopped is not None:
            raise self._stopped
        if self.max_tokens_total is not None and self.spent_tokens + self._reserved + tokens > self.max_tokens_total:
            self._stopped = BudgetExceeded(self.spent_tokens, self.max_tokens_total, tokens)
            raise self._stopped
        self._reserved += tokens

    async def _call(
        self,
        role: str,
        messages: list[Message],
        *,
        mode: str,
        schema: dict[str, Any] | None,
        extra: dict[str, Any],
        fallback: bool = False,
        tag: str | None = None,
    ) -> ChatResponse:
        """One model reply, from the cache when it holds it; counted in ``role``'s stats."""
        stats = self._role(role)
        prompt_tokens = estimate_tokens(messages)
        if prompt_tokens > self.prompt_budget:
            raise PromptTooLong(role, prompt_tokens, self.prompt_budget)
        params = self._request_params(prompt_tokens, extra)
        key = self._key(messages, mode, schema, params, tag)
        cached = self._cache_read(key)
        if cached is not None and "rejected" in cached:
            # a response_format rejection recorded by an earlier "auto" run: replayed in auto mode only,
            # so an explicit json_schema client still asks the server
            if self._auto:
                stats.cache_hits += 1
                raise _FormatRejected(cached["rejected"])
            cached = None
        if cached is not None:
            stats.cache_hits += 1
            return ChatResponse(cached["message"], Usage(), cached.get("finish_reason"))
        reserved = prompt_tokens + params["max_tokens"]
        self._reserve(reserved)
        stats.calls += 1
        try:
            resp = await self.chat.complete(messages, **params)
        except LLMError as exc:
            stats.retries += max(0, exc.attempts - 1)
            self._failed(role, exc, mode=mode, key=key, fallback=fallback, prompt_tokens=prompt_tokens)
        finally:
            self._reserved -= reserved
        self._failures = 0
        stats.retries += resp.usage.retries
        stats.prompt_tokens += resp.usage.prompt_tokens
        stats.completion_tokens += resp.usage.completion_tokens
        entry = {
            "message": resp.message,
            "finish_reason": resp.finish_reason,
            "usage": {"prompt_tokens": resp.usage.prompt_tokens, "completion_tokens": resp.usage.completion_tokens},
        }
        self._cache_write(key, entry)
        return resp

    def _failed(self, role: str, exc: LLMError, *, mode: str, key: str, fallback: bool, prompt_tokens: int) -> NoReturn:
        """Raise what a failed call means: a format rejection, a prompt too long, a role failure or a stop.

        Only a ``response_format`` rejection is cached (as ``rejected``); nothing else is, so a
        rerun asks again.
        """
        if mode == "json_schema" and self._auto and _is_response_format_rejection(exc):
            self._cache_write(key, {"rejected": str(exc), "status": exc.status})
            raise _FormatRejected(str(exc)) from exc
        stats = self._role(role)
        stats.failures += 1
        if _is_context_length(exc):
            raise PromptTooLong(role, prompt_tokens, self.context_tokens, by_server=str(exc)) from exc
        self._failures += 1
        if not fallback or self._failures >= MAX_FAILURES:
            why = f" ({self._failures} calls in a row failed)" if fallback else ""
            self._stopped = EndpointUnavailable(role, exc, why)
            raise self._stopped from exc
        log.warning("%s: the model call failed (%s); using the fallback", role, exc)
        raise CallFailed(role, exc) from exc

    # --- cache ----------------------------------------------------------------------------

    def _key(
        self, messages: list[Message], mode: str, schema: dict[str, Any] | None, params: dict[str, Any], tag: str | None = None
    ) -> str:
        """The sha256 of what a call asks: model, its default params, messages, mode, schema, params (and a tag)."""
        asked: dict[str, Any] = {
            "model": self.chat.model,
            "model_params": getattr(self.chat, "params", None) or {},
            "messages": messages,
            "mode": mode,
            "schema": schema,
            "params": params,
        }
        if tag is not None:
            asked["tag"] = tag
        canonical = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    def _cache_read(self, key: str) -> dict[str, Any] | None:
        """The cached entry of ``key``; None when absent or unreadable (a corrupt file is a miss)."""
        path = self._cache_path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.warning("ignoring the unreadable cache file %s", path)
            return None
        if isinstance(entry, dict) and (isinstance(entry.get("message"), dict) or isinstance(entry.get("rejected"), str)):
            return entry
        log.warning("ignoring the malformed cache file %s", path)
        return None

    def _cache_write(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` for ``key`` atomically (a temp file in the same folder, then ``os.replace``)."""
        path = self._cache_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, ensure_ascii=False, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # --- metrics --------------------------------------------------------------------------

    def metrics(self) -> dict[str, Any]:
        """Per-role stats, their total, the budget, tokens spent and the structured-output mode in use."""
        total = RoleStats()
        for s in self.stats.values():
            total.add(s)
        return {
            "roles": {role: s.to_dict() for role, s in sorted(self.stats.items())},
            "total": total.to_dict(),
            "budget": self.max_tokens_total,
            "spent_tokens": self.spent_tokens,
            "structured_mode": self._mode,
            "context_tokens": self.context_tokens,
            "max_output_tokens": self.max_output_tokens,
            "params": dict(self.params),
            "stopped": str(self._stopped) if self._stopped is not None else None,
        }
