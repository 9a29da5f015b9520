"""An envsynth task as a SkyRL-gym text environment: the model's text in, tool results out, envsynth's reward at the end.

Needs the ``skyrl`` extra (``pip install 'envsynth[skyrl]'``, which installs ``skyrl-gym``).
Importing this module registers the environment with SkyRL-gym as ``envsynth``::

    import skyrl_gym
    import envsynth.integrations.skyrl_env  # registers "envsynth"

    env = skyrl_gym.make("envsynth", env_config={"corpus": "out/"}, extras={"task_id": "...", "seed": 0})
    prompt, info = env.init([])          # an empty prompt: the task's own (system + user)
    out = env.step('<tool_call>{"name": "get_product", "arguments": {"product_id": "..."}}</tool_call>')
    out = env.step('<tool_call>{"name": "complete_task", "arguments": {"answer": "3"}}</tool_call>')
    out["reward"], out["done"]

**Tool-call format.** A turn holds one or more tool calls, each a JSON object
``{"name": ..., "arguments": {...}}`` between ``<tool_call>`` and ``</tool_call>`` (the
format of the Hermes and Qwen chat templates); text outside them is ignored. The calls run
in order; the observation is one ``user`` message holding each result between
``<tool_response>`` and ``</tool_response>``. ``complete_task`` (``{"answer": ...}``) ends
the episode and scores it; a call that is not valid JSON, or a turn without a tool call, gets
an observation that says what is wrong and the episode goes on. After ``max_turns`` turns
the episode ends as if ``complete_task`` had been called with no answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

try:
    import skyrl_gym
    from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput, ConversationType
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"envsynth's SkyRL-gym integration needs skyrl-gym: pip install 'envsynth[skyrl]' ({exc})") from exc

from envsynth.corpus.load import Corpus
from envsynth.integrations.source import CorpusSource, open_source
from envsynth.integrations.tool_text import parse_tool_calls
from envsynth.tasks.episode import TaskEpisode
from envsynth.tasks.trainer import COMPLETE, Action

ENV_ID = "envsynth"
"""The id this environment is registered under in SkyRL-gym."""
MAX_TURNS = 16
"""Turns (model messages) of an episode unless ``extras["max_turns"]`` says otherwise."""

NO_CALL = (
    "No tool call found. Call a tool as "
    '<tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>, '
    'and finish with <tool_call>{"name": "complete_task", "arguments": {"answer": "..."}}</tool_call>.'
)


def system_prompt(episode: TaskEpisode) -> str:
    """The system message of an episode: its tools (OpenAI schemas), the tool-call format and the app's policy."""
    tools = "\n".join(json.dumps(t["function"], ensure_ascii=False) for t in episode.tools)
    policy = f"\n\nPolicy you must follow:\n{episode.app_policy}" if episode.app_policy else ""
    return (
        "You help a user by calling tools. The tools, as JSON schemas:\n"
        f"<tools>\n{tools}\n</tools>\n\n"
        'Call a tool as <tool_call>{"name": "<tool>", "arguments": {...}}</tool_call>; results come back between '
        "<tool_response> and </tool_response>. When the request is done, call complete_task (with the answer if the user "
        f"asked a question).{policy}"
    )


def task_prompt(episode: TaskEpisode) -> ConversationType:
    """The first prompt of an episode: the system message (:func:`system_prompt`) and the user's request."""
    return [{"role": "system", "content": system_prompt(episode)}, {"role": "user", "content": episode.instruction}]


def _setting(env_config: Any, extras: dict[str, Any], key: str, default: Any = None) -> Any:
    """``extras[key]``, else ``env_config[key]`` (a dict, an OmegaConf config or an object), else ``default``."""
    if key in extras:
        return extras[key]
    if env_config is None:
        return default
    if hasattr(env_config, "get"):
        return env_config.get(key, default)
    return getattr(env_config, key, default)


class EnvsynthTextEnv(BaseTextEnv):
    """One episode of one envsynth task, played through the model's text.

    Args:
        env_config: SkyRL's per-environment config; ``corpus`` (a folder) is read from it
            unless ``extras`` has one.
        extras: the dataset row's extras: ``task_id`` (else the task at ``seed`` modulo the
            corpus size), ``seed`` (default 0), ``max_turns`` (default 16) and ``corpus`` (a
            folder, a loaded :class:`Corpus` or a :class:`CorpusSource`).

    Raises:
        ValueError: no corpus given, or an unknown task id.
    """

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        corpus: CorpusSource | Corpus | str | Path | None = _setting(env_config, extras, "corpus")
        if corpus is None:
            raise ValueError('EnvsynthTextEnv needs a corpus: extras["corpus"] or env_config.corpus (a corpus folder)')
        self.source = open_source(corpus)
        seed = int(_setting(env_config, extras, "seed", 0) or 0)
        task = self.source.pick(_setting(env_config, extras, "task_id"), seed)
        self.max_turns = int(_setting(env_config, extras, "max_turns", MAX_TURNS))
        self.episode = self.source.start(task, seed=seed)
        self._errors = 0

    def init(self, prompt: ConversationType | None = None) -> tuple[ConversationType, dict[str, Any]]:
        """The first prompt: ``prompt`` if the dataset gives one, else the task's own (:func:`task_prompt`)."""
        first = list(prompt) if prompt else task_prompt(self.episode)
        return first, {"task_id": self.episode.task_id, "tools": self.episode.tools}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the tool calls in the model's text; the reward is envsynth's score once the episode ends (else 0.0)."""
        self.turns += 1
        ep = self.episode
        if ep.finished:
            return self._output([], ep)
        calls = parse_tool_calls(action)
        responses = [self._run(call) for call in calls] if calls else [NO_CALL]
        if not ep.finished and self.turns >= self.max_turns:
            ep.finish(None)
        if ep.finished:
            return self._output([], ep)
        return self._output([{"role": "user", "content": "\n".join(responses)}], ep)

    def _run(self, call: Action | str) -> str:
        """One parsed call's response (skipped once the episode has ended), or the parse error."""
        if isinstance(call, str):
            self._errors += 1
            return f"<tool_response>\n{call}\n</tool_response>"
        if self.episode.finished:
            return f"<tool_response>\nThe episode ended at {COMPLETE}; {call.name} was not run.\n</tool_response>"
        out = self.episode.step(call)
        return f"<tool_response>\n{out.observation}\n</tool_response>"

    def _output(self, observations: ConversationType, ep: TaskEpisode) -> BaseTextEnvStepOutput:
        """SkyRL's step output: the observations, the score once done, and the episode's state as metadata."""
        st = ep.state()
        reward = st.reward.score if st.reward is not None else 0.0
        meta = {"task_id": st.task_id, "calls": st.calls, "tainted": st.tainted, "parse_errors": self._errors}
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=st.done, metadata=meta)

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode metrics: calls made, malformed tool calls, score (0 while running), taint."""
        st = self.episode.state()
        return {
            "calls": st.calls,
            "parse_errors": self._errors,
            "score": st.reward.score if st.reward is not None else 0.0,
            "tainted": float(st.tainted),
        }

    def close(self) -> None:
        """End the episode if it is still running (its reward is not reported), giving its state back."""
        if not self.episode.finished:
            self.episode.finish(None)


def register(env_id: str = ENV_ID) -> None:
    """Register :class:`EnvsynthTextEnv` with SkyRL-gym as ``env_id`` (again: nothing changes)."""
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=f"{__name__}:EnvsynthTextEnv")


register()
