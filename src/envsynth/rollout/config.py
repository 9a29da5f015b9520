"""The settings of a run (``envsynth run``), as one typed object: :class:`RunConfig`.

The CLI builds it from its flags and passes it whole to
:func:`~envsynth.rollout.command.run_command`; Python callers build it the same way.
Bad settings are refused when it is built (a :class:`pydantic.ValidationError`, a
``ValueError``; with ``RunConfig.of(...)`` an :class:`envsynth.errors.ConfigError` whose
``problems`` name the fields), before any corpus is read or any model called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from envsynth.agents.base import DEFAULT_MAX_TURNS
from envsynth.agents.user import DEFAULT_USER_TURNS
from envsynth.config import Config, ray_address
from envsynth.runtime.parts import ScoreRule

Agent = Literal["openai", "code", "oracle"]
"""``code`` is ``openai`` in code mode (``agent="code"`` = ``agent="openai", mode="code"``)."""
Mode = Literal["function", "code"]


class RunConfig(Config):
    """What to run, on what, how many times and into which folder.

    After validation ``agent`` is ``openai`` or ``oracle`` and ``mode`` is set (``code``
    for ``agent="code"``, else ``function`` unless given). A bad setting raises
    :class:`pydantic.ValidationError` (a ``ValueError``) located at its field: a count out
    of range, an unknown agent or mode, ``openai`` without ``model``, ``user_sim`` without
    a model for the user.

    Attributes:
        corpus: the corpus folder.
        out: the run folder (created if missing; rerun to resume).
        agent: ``openai`` (a ChatAgent over an OpenAI-compatible endpoint), ``code`` (the
            same in code mode) or ``oracle`` (replays the tasks' oracles).
        mode: ``function`` (function calling) or ``code`` (the agent writes Python blocks,
            run in sandboxed workers; see docs/sandbox.md).
        model: the model name (required for ``openai``).
        base_url: the endpoint (default ``OPENAI_BASE_URL``, else OpenAI).
        api_key: default ``OPENAI_API_KEY`` (never written to run.json).
        attempts: k attempts per task.
        concurrency: episodes in flight.
        requests: model requests in flight at most (default: ``concurrency``).
        max_turns: model calls per episode.
        max_tokens: tokens per episode (None: no limit).
        temperature: sampling temperature (None: the server's default).
        tasks: task ids to run (default: all).
        limit: run only the first ``limit`` tasks.
        seed: base episode seed (attempt ``a`` uses ``seed + a``).
        rerun_errors: run again the episodes a model failure ended in an earlier call.
        max_errors: stop after this many failed episodes (0: never).
        user_sim: an LLM plays the user (tau2-style, :mod:`envsynth.agents.user`).
        user_model: the user simulator's model (default: ``model``).
        user_base_url: its endpoint (default: ``base_url``).
        user_max_turns: the user simulator's replies per episode at most.
        executor: ``local`` (this process) or ``ray`` (episodes spread over a Ray cluster;
            see docs/scale.md).
        address: the Ray cluster (default: ``RAY_ADDRESS``, else a local Ray instance).
        score_rule: how a reward's parts make its score: ``all`` (every part must pass) or
            ``weighted`` (the share of ``weights`` of the parts that pass).
        weights: ``weighted``'s weights as ``state=0.6,answer=0.3,policy=0.1`` (a part not
            named weighs 1).
        judge: ``openai``: an LLM judge grades every episode after the rule (docs/grading.md);
            None: the rule only (offline).
        judge_model: the judge's model (required with ``judge``).
        judge_base_url: its endpoint (default: ``base_url``).
    """

    corpus: Path
    out: Path
    agent: Agent = "openai"
    mode: Mode = "function"
    model: str | None = Field(None, validate_default=True)
    base_url: str | None = None
    api_key: str | None = Field(None, repr=False)
    attempts: int = Field(1, ge=1)
    concurrency: int = Field(8, ge=1)
    requests: int | None = Field(None, ge=1)
    max_turns: int = Field(DEFAULT_MAX_TURNS, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0)
    tasks: list[str] | None = None
    limit: int | None = Field(None, ge=1)
    seed: int = Field(0, ge=0)
    rerun_errors: bool = False
    max_errors: int = Field(20, ge=0)
    user_sim: bool = False
    user_model: str | None = Field(None, validate_default=True)
    user_base_url: str | None = None
    user_max_turns: int = Field(DEFAULT_USER_TURNS, ge=1)
    executor: Literal["local", "ray"] = "local"
    address: str | None = None
    score_rule: Literal["all", "weighted"] = "all"
    weights: str | None = None
    judge: Literal["openai"] | None = None
    judge_model: str | None = Field(None, validate_default=True)
    judge_base_url: str | None = None

    @field_validator("weights")
    @classmethod
    def _weights(cls, weights: str | None, info: ValidationInfo) -> str | None:
        """Weights parse as PART=NUMBER pairs of known parts (read only by the ``weighted`` rule)."""
        ScoreRule.parse(info.data.get("score_rule", "all"), weights)
        return weights

    @field_validator("judge_model")
    @classmethod
    def _model_for_the_judge(cls, judge_model: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("judge") and not judge_model:
            raise ValueError("the judge (judge 'openai') needs a model name: judge_model")
        return judge_model

    @property
    def rule(self) -> ScoreRule:
        """The score rule of ``score_rule`` and ``weights``."""
        return ScoreRule.parse(self.score_rule, self.weights)

    @field_validator("executor")
    @classmethod
    def _spreadable(cls, executor: str, info: ValidationInfo) -> str:
        """A Ray run carries function-calling episodes only: the sandbox pool and the user simulator live in this process."""
        d = info.data
        if executor == "ray" and d.get("mode") == "code":
            raise ValueError("the ray executor runs function-calling episodes; run code mode with the local executor")
        if executor == "ray" and d.get("user_sim"):
            raise ValueError("the ray executor does not carry the user simulator to its workers; run it with the local executor")
        return executor

    @field_validator("address")
    @classmethod
    def _address_for_ray(cls, address: str | None, info: ValidationInfo) -> str | None:
        return ray_address(address, info.data.get("executor"))

    @model_validator(mode="before")
    @classmethod
    def _code_agent(cls, data: Any) -> Any:
        """``agent="code"`` is ``agent="openai"`` with ``mode="code"``; ``mode`` defaults to ``function``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if data.get("agent") == "code":
            if data.get("mode") not in (None, "code"):
                raise ValueError(f"agent 'code' acts in code mode, not mode {data['mode']!r}: leave mode unset or use agent 'openai'")
            data["agent"], data["mode"] = "openai", "code"
        if data.get("mode") is None:
            data["mode"] = "function"
        return data

    @field_validator("model")
    @classmethod
    def _model_for_openai(cls, model: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("agent") == "openai" and not model:
            raise ValueError("agent 'openai' needs a model name")
        return model

    @field_validator("user_model")
    @classmethod
    def _model_for_the_user(cls, user_model: str | None, info: ValidationInfo) -> str | None:
        d = info.data
        if d.get("user_sim") and not (user_model or (d.get("agent") == "openai" and d.get("model"))):
            raise ValueError("the user simulator (user_sim) needs a model: user_model, or model with agent 'openai'")
        return user_model

    @property
    def chat_requests(self) -> int:
        """Model requests in flight at most: ``requests``, else ``concurrency``."""
        return self.requests or self.concurrency

    def params(self) -> dict[str, Any]:
        """Sampling parameters sent with every request (``temperature`` when set)."""
        return {} if self.temperature is None else {"temperature": self.temperature}
