"""Request and response bodies of the HTTP server (pydantic; unknown fields are refused)."""

from __future__ import annotations

from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, field_validator

from envsynth.tasks.model import TaskKind

#: the longest task id or tool name a body may hold (longer ones cannot exist; never echoed back)
MAX_NAME = 256
#: about how deeply JSON may nest in a body (pydantic-core's parser refuses deeper: a 422)
MAX_DEPTH = 200


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Body):
    """Every 4xx/5xx answer: a machine-readable ``error`` code and a readable ``detail``."""

    error: str
    detail: str
    errors: list[dict[str, Any]] | None = None
    max_episodes: int | None = None
    live: int | None = None


class Health(_Body):
    status: Literal["ok"] = "ok"
    version: str
    tasks: int
    live_episodes: int
    max_episodes: int
    idle_timeout: float
    started: int
    finished: int
    reaped: int
    errors: int = Field(0, description="episodes whose release failed (logged by the server); 0 unless there is a bug")


class TaskSummary(_Body):
    id: str
    app: str
    kind: TaskKind
    instruction: str


class TaskPage(_Body):
    total: int
    offset: int
    limit: int
    tasks: list[TaskSummary]


class TaskDetail(_Body):
    """What an agent may know about a task: never the oracle, the ground truth, the state or the user profile."""

    id: str
    app: str
    kind: TaskKind
    instruction: str
    tools: list[dict[str, Any]] = Field(description="OpenAI function schemas of the visible tools, plus complete_task")
    policy: str = Field("", description="the app's policy the agent must follow (markdown), '' when it has none")


class StartEpisode(_Body):
    task_id: str = Field(max_length=MAX_NAME)
    seed: int = 0


class EpisodeStarted(_Body):
    episode_id: str
    task_id: str
    instruction: str
    tools: list[dict[str, Any]]
    policy: str = Field("", description="the app's policy the agent must follow (markdown), '' when it has none")


class EpisodeInfo(_Body):
    episode_id: str
    task_id: str
    seed: int
    calls: int
    idle_seconds: float


class Tools(_Body):
    tools: list[dict[str, Any]]


class ToolCall(_Body):
    name: str = Field(max_length=MAX_NAME)
    arguments: dict[str, Any] | str | None = Field(default=None, description="a JSON object, or its text (as OpenAI sends it)")

    @field_validator("arguments")
    @classmethod
    def _decode_text(cls, value: dict[str, Any] | str | None) -> dict[str, Any] | str | None:
        """Arguments given as JSON text are decoded here, with the body's bound on nesting depth.

        A JSON object becomes the dict; text that is not a JSON object is passed on as it
        is (the episode answers ``invalid_arguments``); text nested too deeply is refused.
        """
        if not isinstance(value, str):
            return value
        try:
            decoded = pydantic_core.from_json(value)
        except ValueError as exc:
            if "recursion limit" in str(exc):
                raise ValueError(f"the arguments' JSON text is nested too deeply (the limit is about {MAX_DEPTH} levels)") from None
            return value
        return decoded if isinstance(decoded, dict) else value


class ToolResult(_Body):
    outcome: Literal["success", "anticipated_rejection", "unexpected_failure"]
    content: str
    code: str | None = None


class Finish(_Body):
    answer: Any = None


class Score(_Body):
    score: float
    passed: bool
    breakdown: list[dict[str, Any]]
    parts: dict[str, Any] = {}


class Deleted(_Body):
    episode_id: str
    deleted: bool = True
