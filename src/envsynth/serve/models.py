"""Request and response bodies of the HTTP server (pydantic; unknown fields are refused)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envsynth.tasks.model import TaskKind, UserProfile


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
    """What an agent may know about a task: never the oracle, the ground truth or the state."""

    id: str
    app: str
    kind: TaskKind
    instruction: str
    user: UserProfile
    tools: list[dict[str, Any]] = Field(description="OpenAI function schemas of the visible tools, plus complete_task")


class StartEpisode(_Body):
    task_id: str
    seed: int = 0


class EpisodeStarted(_Body):
    episode_id: str
    task_id: str
    instruction: str
    tools: list[dict[str, Any]]


class EpisodeInfo(_Body):
    episode_id: str
    task_id: str
    seed: int
    calls: int
    idle_seconds: float


class Tools(_Body):
    tools: list[dict[str, Any]]


class ToolCall(_Body):
    name: str
    arguments: dict[str, Any] | str | None = Field(default=None, description="a JSON object, or its text (as OpenAI sends it)")


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


class Deleted(_Body):
    episode_id: str
    deleted: bool = True
