"""Typed configuration of a build: what the CLI's flags say, checked once, passed whole.

:class:`BuildConfig` is the composition (A apps x T tasks x S states at depth D) and where
and how to build it; :class:`LLMOptions` what the LLM builder needs on top. Both refuse a
meaningless value (built with ``.of()``) with a :class:`ConfigError` whose ``problems``
name the fields, so the CLI can name its flags instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from envsynth.config import Config, describe_errors, ray_address
from envsynth.config import ConfigProblems as ConfigError
from envsynth.corpus.build import MAX_DEPTH
from envsynth.corpus.difficulty import parse_mix

__all__ = ["BuildConfig", "ConfigError", "LLMOptions", "describe_errors"]


class BuildConfig(Config):
    """Where and what to build.

    Attributes:
        out: the output folder: apps in ``out/apps/<app>/``, tasks (when ``tasks_per_app``
            > 0) in ``out/tasks/<app>/``, the manifest in ``out/corpus.json``.
        seed: the seed of sample data, fixtures, ids and tasks.
        apps: A, build only the first A domains (None: all).
        tasks_per_app: T, admitted task indexes per app; 0 builds apps only.
        states: S, initial states (task records) per task index.
        distractors: D, the distractor depth (0 to 4).
        workers: processes building apps in parallel (None: 1; 0: one per CPU).
        force: rebuild an app whose folder also holds files envsynth did not write (they are kept).
        keep_failed: keep ``apps/<app>.failed/`` of an app whose tests fail.
        executor: ``local`` (``workers`` processes here) or ``ray`` (app builds and task
            indexes spread over a Ray cluster, ``workers`` tasks in flight at most, 0: its
            CPUs; the same files; see docs/scale.md).
        address: ``ray`` only: the cluster (default ``RAY_ADDRESS``, else a local instance).
        difficulty: the mix of difficulty tiers to keep (``easy``, ``medium``, ``hard``, ``mix`` or shares
            such as ``easy=1,hard=2``; see :mod:`envsynth.corpus.difficulty`); None: as synthesized.
    """

    out: Path
    seed: int = Field(0, ge=0)
    apps: int | None = Field(None, ge=1)
    tasks_per_app: int = Field(0, ge=0)
    states: int = Field(1, ge=1)
    distractors: int = Field(0, ge=0, le=MAX_DEPTH)
    workers: int | None = Field(None, ge=0)
    force: bool = False
    keep_failed: bool = False
    executor: Literal["local", "ray"] = "local"
    address: str | None = None
    difficulty: str | None = None

    @field_validator("difficulty")
    @classmethod
    def _mix(cls, difficulty: str | None) -> str | None:
        parse_mix(difficulty)  # its ValueError names the problem
        return difficulty

    @model_validator(mode="after")
    def _folder(self) -> BuildConfig:
        if self.out.exists() and not self.out.is_dir():
            raise ValueError(f"{self.out} exists and is not a folder")
        return self

    @field_validator("address")
    @classmethod
    def _address_for_ray(cls, address: str | None, info: ValidationInfo) -> str | None:
        return ray_address(address, info.data.get("executor"))


class LLMOptions(Config):
    """The LLM builder's options (``envsynth build --builder llm``; see docs/llm-builder.md).

    Attributes:
        domains: free domain keywords ("Job Seeking"), one app each.
        descriptions: an optional description per keyword.
        model: the model name ('scripted' runs the offline demo).
        base_url: the API root (default: OPENAI_BASE_URL).
        api_key: the API key (default: OPENAI_API_KEY).
        cache_dir: the reply cache (default ``out/.llm-cache``).
        max_tokens_total: stop cleanly once this many tokens are spent (a rerun resumes).
        debug_rounds: debug agent rounds per custom tool.
        task_writer: the model rewrites each task's instruction.
        gating: LLM-gated expansion of each task's visible tools.
        tau: the gating threshold: expand while p >= tau.
        context_tokens: the model's context length; prompts are fitted to it.
        max_output_tokens: max_tokens of a request at most (None: what the context leaves).
        temperature: the sampling temperature of every request.
        llm_seed: the seed sent with every request.
        max_rounds: the designer's replies checked at most (each correction lists every problem).
        timeout: seconds a model request may take.
    """

    domains: list[str] = Field(min_length=1)
    descriptions: dict[str, str] = Field(default_factory=dict)
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    cache_dir: Path | None = None
    max_tokens_total: int | None = Field(None, ge=1)
    debug_rounds: int = Field(3, ge=0)
    task_writer: bool = True
    gating: bool = True
    tau: float = Field(0.5, ge=0, le=1)
    context_tokens: int = Field(8192, ge=1)
    max_output_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(0.2, ge=0)
    llm_seed: int = 0
    max_rounds: int = Field(4, ge=1, le=20)
    timeout: float = Field(120.0, gt=0, le=3600)

    @model_validator(mode="after")
    def _described(self) -> LLMOptions:
        unknown = sorted(set(self.descriptions) - set(self.domains))
        if unknown:
            raise ValueError(f"descriptions given for domains not built: {unknown}")
        return self
