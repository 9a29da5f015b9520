"""What stops an LLM build or fails one role's call (see :class:`~envsynth.llmbuild.client.BuilderClient`).

A :class:`BuildStop` ends the run cleanly (the budget is spent, the endpoint is down):
every reply so far is cached and a rerun continues. A :class:`RoleError` fails one role's
request (a prompt too long, a call that failed where the role has a fallback, no valid
structured reply); the caller falls back or drops the item, with the reason.
"""

from __future__ import annotations

from envsynth.errors import LLMBuildError
from envsynth.llm.types import LLMError


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


class DesignProblems(RoleError):
    """The designer's blueprint still has problems after its last correction round.

    Attributes:
        role: ``designer``.
        history: per reply checked, its problems (one line each in ``envsynth check``'s form).
        rounds: the replies checked (``--max-rounds``).
        problems: what the last one still has.
    """

    def __init__(self, history: list[list[str]]) -> None:
        problems = history[-1]
        listed = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
        super().__init__(
            f"designer: the blueprint still has {len(problems)} problem(s) after {len(history)} round(s) "
            f"(--max-rounds {len(history)}): {listed}"
        )
        self.role = "designer"
        self.history = [list(h) for h in history]
        self.rounds = len(history)
        self.problems = list(problems)


class _FormatRejected(LLMBuildError):
    """The server rejected ``response_format`` (internal: ``auto`` switches to prompt mode)."""
