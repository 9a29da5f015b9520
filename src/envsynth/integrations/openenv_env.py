"""An envsynth corpus as an OpenEnv environment: ``Environment`` (server side), ``create_app`` and ``EnvsynthEnvClient``.

Needs the ``openenv`` extra (``pip install 'envsynth[openenv]'``, which installs ``openenv-core``)::

    from envsynth.integrations.openenv_env import EnvsynthAction, EnvsynthEnvClient, create_app

    app = create_app("out/")        # OpenEnv's FastAPI app: uvicorn module:app --port 8000
    with EnvsynthEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
        first = env.reset(task_id="...", seed=0)         # or reset(seed=3): the task at 3 % len(corpus)
        out = env.step(EnvsynthAction(name="get_product", arguments={"product_id": "..."}))
        out = env.step(EnvsynthAction(name="complete_task", arguments={"answer": None}))
        out.reward, out.done

One :class:`EnvsynthEnvironment` is one session (OpenEnv makes one per WebSocket
connection); every session of a process shares one loaded corpus (:mod:`envsynth.integrations.source`).
Observations carry the tool's result text (``content``) and the call's ``outcome`` and
``code``; the reward comes with the step that ends the episode (``complete_task``), with the
reward's parts (``{name: passed}``) and never the ground truth.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

try:
    from openenv.core.client_types import StepResult as OpenEnvStepResult
    from openenv.core.env_client import EnvClient
    from openenv.core.env_server import Action, ConcurrencyConfig, Environment, Observation, State
    from openenv.core.env_server import create_app as openenv_create_app
    from openenv.core.env_server.types import EnvironmentMetadata
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"envsynth's OpenEnv integration needs openenv-core: pip install 'envsynth[openenv]' ({exc})") from exc

from pydantic import Field

from envsynth import __version__
from envsynth.corpus.load import Corpus
from envsynth.integrations.source import CorpusSource, open_source
from envsynth.runtime.episode import REJECTION
from envsynth.serve.registry import public_parts
from envsynth.tasks.episode import TaskEpisode
from envsynth.tasks.trainer import Action as TrainerAction

CORPUS_VARIABLE = "ENVSYNTH_CORPUS"
"""The environment variable :func:`app_from_env` reads the corpus folder from."""
SESSIONS_VARIABLE = "ENVSYNTH_MAX_SESSIONS"
"""The environment variable :func:`app_from_env` reads the session cap from (default 1024)."""
NO_EPISODE = "No episode is running: reset the environment first."
"""The observation of a step before any reset."""


class EnvsynthAction(Action):
    """A tool call, or ``complete_task`` with ``{"answer": ...}`` (which ends and scores the episode)."""

    name: str = Field(description="the tool's name (complete_task to finish)")
    arguments: dict[str, Any] | str | None = Field(default=None, description="a JSON object or its text")


class EnvsynthObservation(Observation):
    """What the agent sees after a reset or a step (``done`` and ``reward`` are OpenEnv's own fields)."""

    content: str = Field(default="", description="the instruction (reset), the tool's JSON result or its error message")
    outcome: str | None = Field(default=None, description="success, anticipated_rejection or unexpected_failure; None after reset")
    code: str | None = Field(default=None, description="which check rejected the call")
    task_id: str | None = Field(default=None, description="the episode's task")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI schemas of the visible tools (reset only)")
    policy: str = Field(default="", description="the app's policy the agent must follow (reset only)")
    parts: dict[str, bool] = Field(default_factory=dict, description="the reward's parts, once done")


class EnvsynthState(State):
    """Where the session's episode stands (never the ground truth)."""

    task_id: str | None = None
    seed: int = 0
    calls: int = 0
    done: bool = False
    tainted: bool = False
    score: float | None = None


class EnvsynthEnvironment(Environment[EnvsynthAction, EnvsynthObservation, EnvsynthState]):
    """One session: one envsynth episode at a time, on a corpus shared with the other sessions."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, corpus: CorpusSource | Corpus | str | Path) -> None:
        super().__init__()
        self._source = open_source(corpus)
        self._episode: TaskEpisode | None = None
        self._episode_id: str | None = None
        self._steps = 0

    def reset(
        self, seed: int | None = None, episode_id: str | None = None, task_id: str | None = None, **kwargs: Any
    ) -> EnvsynthObservation:
        """Start an episode: on ``task_id`` if given, else the task at ``seed`` (see :meth:`CorpusSource.pick`).

        The episode seed (ids and the clock inside tools) is ``seed`` (0 when None). An
        episode still running is ended first (its reward is not reported).

        Raises:
            ValueError: an unknown ``task_id`` or an unknown keyword argument.
        """
        if kwargs:
            raise ValueError(f"unknown reset arguments: {', '.join(sorted(kwargs))[:128]} (known: seed, episode_id, task_id)")
        task = self._source.pick(task_id, seed)
        self._end()
        self._episode = self._source.start(task, seed=seed or 0)
        self._episode_id, self._steps = episode_id, 0
        ep = self._episode
        return EnvsynthObservation(content=ep.instruction, task_id=ep.task_id, tools=ep.tools, policy=ep.app_policy)

    def step(self, action: EnvsynthAction, timeout_s: float | None = None, **kwargs: Any) -> EnvsynthObservation:
        """Run one action on the episode: a tool call, or ``complete_task`` (the observation then has the reward)."""
        ep = self._episode
        if ep is None:
            return EnvsynthObservation(content=NO_EPISODE, outcome=REJECTION, code="no_episode")
        self._steps += 1
        out = ep.step(TrainerAction(action.name, action.arguments))
        reward = ep.state().reward if out.done else None
        return EnvsynthObservation(
            content=out.observation,
            outcome=out.outcome,
            code=out.code,
            task_id=ep.task_id,
            done=out.done,
            reward=out.reward,
            parts=public_parts(reward) if reward is not None else {},
        )

    @property
    def state(self) -> EnvsynthState:
        """The session's episode: task, seed, calls, done, taint and score."""
        ep = self._episode
        if ep is None:
            return EnvsynthState(episode_id=self._episode_id, step_count=self._steps)
        st = ep.state()
        score = st.reward.score if st.reward is not None else None
        return EnvsynthState(
            episode_id=self._episode_id,
            step_count=self._steps,
            task_id=st.task_id,
            seed=st.seed,
            calls=st.calls,
            done=st.done,
            tainted=st.tainted,
            score=score,
        )

    def get_metadata(self) -> EnvironmentMetadata:
        """The environment's name, description and envsynth's version."""
        n = len(self._source)
        return EnvironmentMetadata(name="envsynth", description=f"envsynth tool-use tasks over SQLite ({n} tasks)", version=__version__)

    def close(self) -> None:
        """End the episode still running (its reward is not reported), giving its state back."""
        self._end()

    def _end(self) -> None:
        """End the current episode if it is still running: its SQLite state goes back to the corpus's pool."""
        ep, self._episode = self._episode, None
        if ep is not None and not ep.finished:
            ep.finish(None)


def environment_factory(corpus: CorpusSource | Corpus | str | Path) -> functools.partial[EnvsynthEnvironment]:
    """What OpenEnv's server calls for each new session: an :class:`EnvsynthEnvironment` on one shared corpus."""
    return functools.partial(EnvsynthEnvironment, open_source(corpus))


def create_app(corpus: CorpusSource | Corpus | str | Path, *, max_concurrent_envs: int = 1024, session_timeout: float | None = None) -> Any:
    """OpenEnv's FastAPI app (``openenv.core.env_server.create_app``) serving ``corpus``.

    Args:
        corpus: a corpus folder, a loaded :class:`Corpus` or a :class:`CorpusSource`.
        max_concurrent_envs: sessions (WebSocket connections, one episode each) at most.
        session_timeout: seconds without a message before OpenEnv ends a session (None: never).
    """
    config = ConcurrencyConfig(max_concurrent_envs=max_concurrent_envs, session_timeout=session_timeout)
    return openenv_create_app(
        environment_factory(corpus), EnvsynthAction, EnvsynthObservation, env_name="envsynth", concurrency_config=config
    )


def app_from_env() -> Any:
    """:func:`create_app` over the corpus folder in ``$ENVSYNTH_CORPUS`` (``uvicorn --factory`` calls it; see the Dockerfile).

    Raises:
        RuntimeError: the variable is not set.
    """
    folder = os.environ.get(CORPUS_VARIABLE)
    if not folder:
        raise RuntimeError(f"set {CORPUS_VARIABLE} to a corpus folder (envsynth build OUT ...) to serve it")
    return create_app(folder, max_concurrent_envs=int(os.environ.get(SESSIONS_VARIABLE, "1024")))


class EnvsynthEnvClient(EnvClient[EnvsynthAction, EnvsynthObservation, EnvsynthState]):
    """OpenEnv's WebSocket client for an envsynth server: one client, one session.

    ``reset(task_id=..., seed=...)``, ``step(EnvsynthAction(...))`` and ``state()`` are
    async; ``.sync()`` gives the blocking wrapper.
    """

    def _step_payload(self, action: EnvsynthAction) -> dict[str, Any]:
        """The action as the server's ``/ws`` step message carries it."""
        return {"name": action.name, "arguments": action.arguments}

    def _parse_result(self, payload: dict[str, Any]) -> OpenEnvStepResult[EnvsynthObservation]:
        """A reset or step answer as OpenEnv's ``StepResult`` of an :class:`EnvsynthObservation`."""
        done, reward = bool(payload.get("done", False)), payload.get("reward")
        obs = EnvsynthObservation(**payload.get("observation", {}), done=done, reward=reward)
        return OpenEnvStepResult(observation=obs, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> EnvsynthState:
        """The server's state answer as an :class:`EnvsynthState`."""
        return EnvsynthState(**payload)
