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

import logging
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ValidationError

from envsynth.llm.types import ChatModel, ChatResponse, LLMError, Message, Usage, message_text
from envsynth.llmbuild.errors import (  # re-exported: callers import them from here
    BudgetExceeded,
    BuildStop,
    CallFailed,
    DesignProblems,
    EndpointUnavailable,
    PromptTooLong,
    RoleError,
    StructuredOutputError,
    _FormatRejected,
)
from envsynth.llmbuild.replies import (  # extract_json_object and validation_errors: re-exported
    extract_json_object,
    is_context_length,
    is_response_format_rejection,
    schema_name,
    validation_errors,
    with_schema_instruction,
)
from envsynth.llmbuild.replycache import cache_key, read_entry, write_entry

__all__ = [
    "BudgetExceeded",
    "BuildStop",
    "BuilderClient",
    "CallFailed",
    "DesignProblems",
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


@dataclass
class RoleStats:
    """What one role's calls cost and how they went.

    Attributes:
        calls: model requests sent (cache hits excluded; a request that failed counts).
        cache_hits: replies served from the cache, at no token cost.
        prompt_tokens: tokens sent in real calls.
        completion_tokens: tokens generated in real calls.
        invalid_outputs: replies the endpoint sent in this run that failed JSON parsing or pydantic validation
            (a cached reply replayed is a cache hit, not counted again: so it never exceeds ``calls``).
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


def timeout_hint(exc: LLMError, timeout: float | None) -> str:
    """What to say when a call failed because its requests timed out: the per-request limit and its flag."""
    names = {c.__name__ for e in (exc, exc.__cause__) if e is not None for c in type(e).__mro__}
    if not ({"APITimeoutError", "ReadTimeout", "TimeoutError", "TimeoutException"} & names or "timed out" in str(exc).lower()):
        return ""
    limit = f"{timeout:g} s" if isinstance(timeout, int | float) else "the limit"
    return f" (each request timed out after {limit}: raise --timeout for a slow model)"


def clip_text(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: its head and its tail, with what was left out said in between."""
    if len(text) <= limit:
        return text
    if limit < 200:
        return f"[{len(text)} characters omitted]"
    head, tail = limit * 2 // 3, limit // 3 - 60
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[len(text) - tail :]}"


class _Replayed(ChatResponse):
    """A reply served from the cache (no request this run: the endpoint's counters do not move)."""


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
            messages = with_schema_instruction(messages, schema.model_json_schema())
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

    async def structured(
        self,
        role: str,
        messages: list[Message],
        schema: type[T],
        *,
        fallback: bool = False,
        tag: str | None = None,
        retry_messages: list[Message] | None = None,
    ) -> T:
        """A reply validated as ``schema``, asking again with the error after an invalid one.

        Args:
            role: the role asking (its stats).
            messages: the conversation.
            retry_messages: the conversation a correction is appended to (default ``messages``;
                the designer's leaves out its worked example, so the invalid reply has room).
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
            if not isinstance(resp, _Replayed):
                stats.invalid_outputs += 1
            errors.append(error)
            convo = self._correction(retry_messages or messages, text, schema, schema_json, error)
        raise StructuredOutputError(role, self.max_invalid + 1, errors)

    def _correction(
        self, messages: list[Message], text: str, schema: type[BaseModel], schema_json: dict[str, Any], error: str
    ) -> list[Message]:
        """``messages``, the invalid reply (clipped to fit the prompt budget) and the request to correct it."""
        note = (
            f"Your reply could not be used as a {schema.__name__}: {clip_text(error, 3000)}\n"
            "Reply again with ONE corrected JSON object that matches the schema, and nothing else."
        )
        return self.follow_up(messages, text, note, schema_json)

    def follow_up(self, messages: list[Message], reply: str, note: str, schema_json: dict[str, Any] | None = None) -> list[Message]:
        """``messages``, then ``reply`` as the assistant's turn (clipped so the whole fits the prompt budget), then ``note``.

        ``schema_json``: the structured output's schema, whose instruction prompt mode adds (room is kept for it).
        """
        correction = {"role": "user", "content": note}
        rest = [*messages, correction]
        if self._mode == "prompt" and schema_json is not None:
            rest = with_schema_instruction(rest, schema_json)
        room = (self.prompt_budget - estimate_tokens(rest) - 4) * CHARS_PER_TOKEN - 80
        echo = clip_text(reply, max(0, min(MAX_ECHO_CHARS, room)))
        return [*messages, {"role": "assistant", "content": echo}, correction]

    async def _structured_reply(
        self, role: str, convo: list[Message], schema: type[BaseModel], schema_json: dict[str, Any], fallback: bool, tag: str | None
    ) -> ChatResponse:
        """One reply in the current mode; in ``auto``, a rejected ``response_format`` switches to ``prompt`` for good."""
        if self._mode == "json_schema":
            fmt = {"type": "json_schema", "json_schema": {"name": schema_name(schema), "schema": schema_json, "strict": False}}
            try:
                return await self._call(
                    role, convo, mode="json_schema", schema=schema_json, extra={"response_format": fmt}, fallback=fallback, tag=tag
                )
            except _FormatRejected as exc:
                if self._mode == "json_schema":
                    log.warning("the server rejected response_format (%s); asking for JSON in the prompt from now on", exc)
                self._mode = "prompt"
        messages = with_schema_instruction(convo, schema_json)
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
        key = cache_key(self.chat, messages, mode, schema, params, tag)
        cached = read_entry(self.cache_dir, key)
        if cached is not None and "rejected" in cached:
            # a response_format rejection recorded by an earlier "auto" run: replayed in auto mode only,
            # so an explicit json_schema client still asks the server
            if self._auto:
                stats.cache_hits += 1
                raise _FormatRejected(cached["rejected"])
            cached = None
        if cached is not None:
            stats.cache_hits += 1
            return _Replayed(cached["message"], Usage(), cached.get("finish_reason"))
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
        write_entry(self.cache_dir, key, entry)
        return resp

    def _failed(self, role: str, exc: LLMError, *, mode: str, key: str, fallback: bool, prompt_tokens: int) -> NoReturn:
        """Raise what a failed call means: a format rejection, a prompt too long, a role failure or a stop.

        Only a ``response_format`` rejection is cached (as ``rejected``); nothing else is, so a
        rerun asks again.
        """
        if mode == "json_schema" and self._auto and is_response_format_rejection(exc):
            write_entry(self.cache_dir, key, {"rejected": str(exc), "status": exc.status})
            raise _FormatRejected(str(exc)) from exc
        stats = self._role(role)
        stats.failures += 1
        if is_context_length(exc):
            raise PromptTooLong(role, prompt_tokens, self.context_tokens, by_server=str(exc)) from exc
        self._failures += 1
        if not fallback or self._failures >= MAX_FAILURES:
            why = f" ({self._failures} calls in a row failed)" if fallback else ""
            why += timeout_hint(exc, getattr(self.chat, "timeout", None))
            self._stopped = EndpointUnavailable(role, exc, why)
            raise self._stopped from exc
        log.warning("%s: the model call failed (%s); using the fallback", role, exc)
        raise CallFailed(role, exc) from exc

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
