"""An envsynth corpus as a `verifiers` environment (PrimeIntellect's RL environments library).

``load_environment(corpus, app=, kind=, tier=, limit=)`` gives a ``vf.MultiTurnEnv`` whose
dataset has one row per corpus task (the agents' system prompt, the app's policy, the
instruction; the task's visible tools and ``complete_task`` as the row's ``tools``; the task
id in ``info``). Each rollout plays its own envsynth episode (``corpus.start(task)``: a fresh
copy of the task's initial state), kept in the rollout's state dict; each tool call is one
``TaskEpisode.step``; ``complete_task`` ends the rollout. The rubric's one reward is the
episode's ``reward.score``: the database state compared with the ground truth, and for a
question the answer given to ``complete_task``.

verifiers finds the module by name, so it works with its own loader and ``vf-eval``::

    import verifiers as vf
    env = vf.load_environment("envsynth.integrations.verifiers_env", corpus="out/")

``verifiers`` is an optional extra (``pip install 'envsynth[verifiers]'``), imported when
:func:`load_environment` is called.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.agents.base import DEFAULT_MAX_TURNS
from envsynth.tasks.trainer import COMPLETE, Action

if TYPE_CHECKING:
    import verifiers as vf

    from envsynth.corpus.load import Corpus
    from envsynth.tasks.episode import TaskEpisode

EPISODE_KEY = "envsynth_episode"
"""The rollout state's key holding its live :class:`~envsynth.tasks.episode.TaskEpisode`."""
RESULT_KEY = "envsynth"
"""The rollout state's key holding what the episode ended with: ``task_id``, ``calls``, ``completed``, ``reward``."""
ROW_FIELDS = ("app", "kind", "tier", "difficulty")
"""Task fields copied into each row's ``info`` (besides ``task_id``)."""


def _import_verifiers() -> Any:
    """The ``verifiers`` module, or an ImportError saying which extra to install."""
    try:
        import verifiers
    except ImportError as exc:
        raise ImportError("the verifiers integration needs the verifiers library: pip install 'envsynth[verifiers]'") from exc
    return verifiers


def _as_set(value: str | Collection[str] | None) -> set[str] | None:
    """A filter value (one name or several) as a set; None keeps everything."""
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


def task_rows(
    corpus: Corpus | str | Path,
    *,
    app: str | Collection[str] | None = None,
    kind: str | Collection[str] | None = None,
    tier: str | Collection[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The dataset rows of a corpus: ``prompt`` (chat messages), ``info`` and ``tools`` (JSON text).

    ``info`` holds ``task_id`` and the task's ``app``, ``kind``, ``tier`` and ``difficulty``;
    ``tools`` the task's visible tools and ``complete_task`` (OpenAI schemas, as
    ``corpus.start(task).tools``). Both are JSON text, so rows whose tools differ share one
    dataset schema; a rollout takes its tools from its episode, so it never parses them.
    The prompt is the RL export's (:func:`envsynth.export.rl_rows`): no ground truth.

    Args:
        corpus: a loaded corpus or its folder.
        app: keep the tasks of this app (or of these apps).
        kind: keep the tasks of this kind (``action``, ``info``...), or of these kinds.
        tier: keep the tasks of this tier (``easy``, ``medium``, ``hard``), or of these tiers.
        limit: keep at most this many rows (the first ones, in corpus order).

    Raises:
        ValueError: an unknown tier, or a negative limit.
    """
    from envsynth.export.rl import rl_rows

    if limit is not None and limit < 0:
        raise ValueError(f"limit must be 0 or more, not {limit}")
    apps, kinds = _as_set(app), _as_set(kind)
    rows = []
    for r in rl_rows(corpus, tiers=_as_set(tier)):
        if limit is not None and len(rows) >= limit:
            break
        if (apps is None or r["app"] in apps) and (kinds is None or r["kind"] in kinds):
            info = {"task_id": r["task_id"], **{k: r[k] for k in ROW_FIELDS}}
            rows.append(
                {"prompt": r["prompt"], "info": json.dumps(info, ensure_ascii=False), "tools": json.dumps(r["tools"], ensure_ascii=False)}
            )
    return rows


def _tool_messages(episode: TaskEpisode, tool_calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Run one assistant message's tool calls on ``episode``: the ``role: tool`` replies, and whether it completed.

    Calls after ``complete_task`` in the same message are not run (as in envsynth's own loop).
    """
    replies, done = [], False
    for call in tool_calls:
        fn = call.get("function") or {}
        name = fn.get("name", "")
        if done:
            content = f"Not run: {COMPLETE} was already called."
        else:
            out = episode.step(Action(name, fn.get("arguments")))
            content, done = out.observation, out.done
        replies.append({"role": "tool", "tool_call_id": call.get("id", ""), "name": name, "content": content})
    return replies, done


def _end_episode(state: dict[str, Any]) -> None:
    """Finish the rollout's episode if it is still live (no ``complete_task``: no answer) and record its reward."""
    episode: TaskEpisode | None = state.get(EPISODE_KEY)
    if episode is None or RESULT_KEY in state:
        return
    reward = episode.finish()
    st = episode.state()
    state[RESULT_KEY] = {"task_id": st.task_id, "calls": st.calls, "completed": _completed(state), "reward": reward.to_dict()}


def _completed(state: dict[str, Any]) -> bool:
    """Whether the rollout ended with ``complete_task``."""
    return bool(state.get("envsynth_completed"))


def envsynth_reward(state: dict[str, Any]) -> float:
    """The rubric's reward: the episode's score (0.0 when the rollout never started an episode)."""
    result = state.get(RESULT_KEY)
    if result is None:
        _end_episode(state)
        result = state.get(RESULT_KEY)
    return float(result["reward"]["score"]) if result else 0.0


def envsynth_completed(state: dict[str, Any]) -> float:
    """A metric: 1.0 when the agent called ``complete_task``, else 0.0."""
    return 1.0 if _completed(state) else 0.0


@functools.cache
def _env_class(vf: Any) -> type:
    """The environment class, made on first use (it subclasses verifiers' ``MultiTurnEnv``)."""

    class EnvsynthEnv(vf.MultiTurnEnv):
        """A verifiers multi-turn environment whose rollouts play envsynth episodes.

        ``setup_state`` starts the row's task on a fresh copy of its initial state;
        ``env_response`` runs the model's tool calls as episode steps; the rollout stops when
        ``complete_task`` is called, the model calls no tool, or ``max_turns`` is reached;
        a cleanup finishes the episode and records its reward in the state.
        """

        def __init__(self, corpus: Corpus, **kwargs: Any) -> None:
            self.corpus = corpus
            super().__init__(**kwargs)

        async def setup_state(self, state: vf.State) -> vf.State:
            """Start this rollout's own episode on the row's task; the model sees the episode's tools."""
            episode = self.corpus.start(state["info"]["task_id"])
            state[EPISODE_KEY], state["oai_tools"] = episode, episode.tools
            return state

        async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
            """The tool replies to the last assistant message; ``complete_task`` makes them the final response."""
            replies, done = _tool_messages(state[EPISODE_KEY], messages[-1].get("tool_calls") or [])
            if done:
                state["envsynth_completed"] = True
                state["final_env_response"] = replies
            return replies

        @vf.stop
        async def no_tool_calls(self, state: vf.State) -> bool:
            """The model answered without a tool call: the agent stopped."""
            if not state["trajectory"]:
                return False
            last = state["trajectory"][-1]["completion"][-1]
            return last.get("role") == "assistant" and not last.get("tool_calls")

        @vf.cleanup
        async def finish_episode(self, state: vf.State) -> None:
            """Finish the episode (its state goes back to the corpus's pool) and keep its reward."""
            _end_episode(state)

    return EnvsynthEnv


def load_environment(
    corpus: str | Path | Corpus,
    *,
    app: str | list[str] | None = None,
    kind: str | list[str] | None = None,
    tier: str | list[str] | None = None,
    limit: int | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
) -> vf.MultiTurnEnv:
    """A verifiers environment over the corpus's tasks, rewarded by envsynth's verifier.

    Args:
        corpus: a corpus folder (``envsynth build OUT --tasks-per-app T``) or a loaded corpus.
        app, kind, tier, limit: which tasks make the dataset (see :func:`task_rows`).
        max_turns: model turns per rollout at most (the rollout is then scored as it stands).

    Raises:
        ImportError: verifiers is not installed.
        CorpusError: no valid corpus there.
        ValueError: the filters keep no task, name an unknown tier, or give a negative limit.
    """
    vf = _import_verifiers()
    from datasets import Dataset

    from envsynth.corpus.load import Corpus, load_corpus

    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    rows = task_rows(c, app=app, kind=kind, tier=tier, limit=limit)
    if not rows:
        raise ValueError(f"no task of the corpus at {c.path} passes the filters app={app!r} kind={kind!r} tier={tier!r} limit={limit!r}")
    rubric = vf.Rubric(funcs=[envsynth_reward], weights=[1.0])
    rubric.add_metric(envsynth_completed)
    return _env_class(vf)(c, dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns, env_id=__name__)
