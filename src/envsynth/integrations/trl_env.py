"""An envsynth corpus for TRL's ``GRPOTrainer``: the dataset, tool environments, and a reward from the database state.

TRL 1.x trains tool-calling models with ``GRPOTrainer(environment_factory=...)``: an
environment is an object whose public methods are the tools the model may call (their
schemas come from each method's signature and Google-style docstring), with a ``reset``
that TRL calls with the dataset row before each rollout. A dict of factories
(``{name: factory}``) gives each example the tools of the environment its ``environment``
column names. This module builds one environment class per distinct tool set of the
corpus's tasks (the task's visible tools plus ``complete_task``), so each prompt is
rendered with exactly the tools an envsynth episode of its task exposes::

    from envsynth.integrations.trl_env import grpo_trainer

    trainer = grpo_trainer("Qwen/Qwen3-0.6B", "out/", args=GRPOConfig(...), tier="easy")
    trainer.train()

or piece by piece::

    dataset = rl_dataset("out/", tier="easy")              # prompt, tools, task_id, environment, corpus...
    trainer = GRPOTrainer(
        model, reward_funcs=[envsynth_reward], train_dataset=dataset,
        environment_factory=environment_factories("out/", dataset), args=config,
    )

``envsynth_reward`` is envsynth's reward of each rollout: the score of the rollout's own
episode when TRL passes the environments, else the completion's tool calls replayed on a
fresh episode of its task (``task_id``) -- so it also scores plain-text generations
(``<tool_call>`` blocks) and completions produced elsewhere. The dataset, the environments
and the reward need no TRL (only ``datasets`` for :func:`rl_dataset`); :func:`grpo_trainer`
imports TRL and needs the ``trl`` extra (``pip install 'envsynth[trl]'``).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import keyword
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from envsynth.corpus.load import Corpus
from envsynth.integrations.source import CorpusSource, open_source
from envsynth.integrations.tool_text import parse_tool_calls
from envsynth.tasks.episode import COMPLETE_TASK, TaskEpisode
from envsynth.tasks.trainer import COMPLETE, Action

if TYPE_CHECKING:
    from envsynth.tasks.model import Task

EXTRA = "pip install 'envsynth[trl]'"
"""The command that installs TRL for :func:`grpo_trainer`."""
RESERVED = frozenset({"reset", "get_reward", "source", "episode"})
"""Names a tool cannot have: TRL's own methods and the environment's attributes."""
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCALARS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "null": type(None)}


# --- tool schemas as Python signatures (TRL reads the tools from methods) -------------------------------------


def json_type(schema: Mapping[str, Any]) -> Any:
    """The Python type hint of a JSON schema, as transformers' ``get_json_schema`` maps hints back to schemas.

    ``enum`` -> ``Literal[...]``, ``array`` -> ``list[item]``, a list of types -> their union;
    anything else (no type, ``anyOf``...) -> ``Any``.
    """
    if schema.get("enum"):
        return Literal[tuple(schema["enum"])]  # type: ignore[misc]
    kind = schema.get("type")
    if isinstance(kind, list):
        hints = [json_type({**schema, "type": k}) for k in kind]
        out = hints[0]
        for h in hints[1:]:
            out = out | h
        return out
    if kind == "array":
        items = schema.get("items")
        return list[json_type(items)] if isinstance(items, Mapping) else list
    return _SCALARS.get(str(kind), Any)


def _one_line(text: str) -> str:
    """``text`` on one line (a Google docstring's argument description ends at the line's end)."""
    return " ".join(str(text).split())


def _docstring(function: Mapping[str, Any]) -> str:
    """A Google-style docstring for a tool: its description, then one ``Args:`` line per parameter."""
    props = (function.get("parameters") or {}).get("properties") or {}
    lines = [_one_line(function.get("description") or function["name"])]
    if props:
        lines += ["", "Args:"]
        lines += [f"    {name}: {_one_line(p.get('description') or name)}" for name, p in props.items()]
    return "\n".join(lines)


def _signature(function: Mapping[str, Any]) -> inspect.Signature:
    """The keyword-only signature of a tool: required parameters without a default, the others ``T | None = None``."""
    params = (function.get("parameters") or {}).get("properties") or {}
    required = set((function.get("parameters") or {}).get("required") or ())
    out = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for name, schema in params.items():
        if not _IDENT.match(name) or keyword.iskeyword(name):
            raise ValueError(f"tool {function['name']}: parameter {name!r} is not a Python identifier, so TRL cannot offer it")
        hint = json_type(schema)
        default = inspect.Parameter.empty if name in required else None
        out.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint if name in required else hint | None)
        )
    return inspect.Signature(out, return_annotation=str)


def tool_method(schema: Mapping[str, Any]) -> Callable[..., str]:
    """A method that runs one envsynth tool on the environment's episode, described as TRL reads tools.

    Its name, signature (type hints from the JSON schema) and Google docstring make
    transformers' ``get_json_schema`` give back the tool's schema; TRL calls it with the
    arguments the model wrote, which go to the episode as they are (only those given: the
    tool's own defaults apply to the rest). It returns the tool's JSON result or error message.

    Raises:
        ValueError: the tool's name is one TRL reserves, or not a Python identifier.
    """
    function = schema["function"]
    name = function["name"]
    if name in RESERVED or name.startswith("_") or not _IDENT.match(name):
        raise ValueError(f"tool {name!r} cannot be a TRL environment method (reserved, private or not an identifier)")

    def method(self: EnvsynthToolEnv, **arguments: Any) -> str:
        return self._step(name, arguments)

    sig = _signature(function)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = _docstring(function)
    method.__signature__ = sig  # type: ignore[attr-defined]
    method.__annotations__ = {p.name: p.annotation for p in sig.parameters.values() if p.name != "self"} | {"return": str}
    return method


# --- the environments ------------------------------------------------------------------------------------------


class EnvsynthToolEnv:
    """One envsynth episode at a time, its tools as methods (TRL's ``environment_factory`` protocol).

    TRL makes an instance per concurrent rollout and reuses it: ``reset(**row)`` starts a
    fresh episode on the row's task (``task_id``; ``seed``, default 0) and returns None (the
    row's prompt already holds the instruction). The tool methods are added by
    :func:`environment_class`. The public API is only ``reset`` and the tools: TRL offers every
    other public method to the model as a tool.

    Attributes:
        episode: the current episode (None before the first reset).
    """

    source: CorpusSource
    """The corpus the episodes start from (set on each class by :func:`environment_class`)."""

    def __init__(self) -> None:
        self.episode: TaskEpisode | None = None

    def reset(self, task_id: str | None = None, seed: int | None = None, **row: Any) -> None:
        """Start a fresh episode on the row's task (ending the last one, unscored if still running)."""
        if task_id is None:
            raise ValueError("an envsynth environment needs the row's task_id (rows of rl_dataset carry it)")
        self._close()
        self.episode = self.source.start(self.source.pick(task_id), seed=int(seed or 0))

    def _step(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call (or ``complete_task``) on the episode: its observation."""
        if self.episode is None:
            return "No episode: the environment was not reset."
        return self.episode.step(Action(name, arguments)).observation

    def _score(self) -> float:
        """The episode's reward score, finishing it (with no answer) if the model never called ``complete_task``."""
        if self.episode is None:
            return 0.0
        if not self.episode.finished:
            self.episode.finish(None)
        reward = self.episode.state().reward
        return reward.score if reward is not None else 0.0

    def _close(self) -> None:
        """End a running episode (unscored), giving its SQLite copy back."""
        if self.episode is not None and not self.episode.finished:
            self.episode.finish(None)


def complete_task_method() -> Callable[..., str]:
    """``complete_task(answer=None)``: ends and scores the episode (described as envsynth's ``COMPLETE_TASK``)."""

    def complete_task(self: EnvsynthToolEnv, answer: str | None = None) -> str:
        return self._step(COMPLETE, {} if answer is None else {"answer": answer})

    complete_task.__doc__ = _docstring(COMPLETE_TASK["function"])
    return complete_task


def tool_set_name(task: Task, prefix: str = "envsynth") -> str:
    """The environment name of a task's tool set: app, then a digest of its visible tools (same set, same name)."""
    digest = hashlib.sha1(json.dumps(sorted(task.visible_tools)).encode()).hexdigest()[:10]
    return f"{prefix}-{task.app}-{digest}"


def environment_class(source: CorpusSource, task: Task) -> type[EnvsynthToolEnv]:
    """The environment class of a task's tool set: :class:`EnvsynthToolEnv` with one method per visible tool."""
    schemas = source.corpus.apps[task.app].tool_schemas(task.visible_tools)
    methods: dict[str, Any] = {s["function"]["name"]: tool_method(s) for s in schemas}
    methods[COMPLETE] = complete_task_method()
    methods["source"] = source
    name = "Envsynth_" + re.sub(r"\W", "_", tool_set_name(task))
    return type(name, (EnvsynthToolEnv,), methods)


def environment_factories(corpus: CorpusSource | Corpus | str | Path, dataset: Any = None) -> dict[str, Callable[[], EnvsynthToolEnv]]:
    """TRL's ``environment_factory`` dict: one factory per tool set of the tasks, by the name rows carry in ``environment``.

    Args:
        corpus: the corpus (a folder, a loaded :class:`Corpus` or a :class:`CorpusSource`).
        dataset: the rows (``rl_dataset``'s, or anything with a ``task_id`` column); None: every task.
    """
    source = open_source(corpus)
    ids = None if dataset is None else set(dataset["task_id"])
    out: dict[str, Callable[[], EnvsynthToolEnv]] = {}
    for task in source.corpus.tasks:
        key = tool_set_name(task)
        if key not in out and (ids is None or task.id in ids):
            out[key] = environment_class(source, task)
    return out


# --- the dataset -----------------------------------------------------------------------------------------------


def _names(value: str | Collection[str] | None) -> set[str] | None:
    """A filter's names (None: no filter)."""
    if value is None:
        return None
    return {value} if isinstance(value, str) else set(value)


def dataset_rows(
    corpus: CorpusSource | Corpus | str | Path,
    *,
    app: str | Collection[str] | None = None,
    kind: str | Collection[str] | None = None,
    tier: str | Collection[str] | None = None,
    limit: int | None = None,
    **export: Any,
) -> list[dict[str, Any]]:
    """The rows of :func:`rl_dataset`, as dicts (no ``datasets`` needed)."""
    from envsynth.export.rl import rl_rows as export_rows

    source = open_source(corpus)
    apps, kinds = _names(app), _names(kind)
    rows = []
    for row in export_rows(source.corpus, tiers=_names(tier), **export):
        if (apps is None or row["app"] in apps) and (kinds is None or row["kind"] in kinds):
            task = source.corpus.task(row["task_id"])
            rows.append({**row, "environment": tool_set_name(task), "corpus": str(Path(source.corpus.path).absolute())})
    return rows[:limit] if limit is not None else rows


def rl_dataset(
    corpus: CorpusSource | Corpus | str | Path,
    *,
    app: str | Collection[str] | None = None,
    kind: str | Collection[str] | None = None,
    tier: str | Collection[str] | None = None,
    limit: int | None = None,
    **export: Any,
) -> Any:
    """A ``datasets.Dataset`` of GRPO prompts, one row per task the filters keep (corpus order unless ``order``).

    Each row is an ``envsynth export rl`` row (``prompt``: the system prompt and the
    instruction; ``tools``; ``task_id``, ``task_hash``, ``app``, ``kind``, ``difficulty``,
    ``tier``, ``constructs``; with ``run``: the run's labels) plus ``environment`` (the
    name of its tool set in :func:`environment_factories`) and ``corpus`` (the corpus
    folder, for :func:`envsynth_reward`). Never the oracle or the ground truth.

    Args:
        corpus: the corpus.
        app: keep only tasks of this app (or these apps).
        kind: keep only tasks of this kind (``action``, ``info``, ``mixed``) or these.
        tier: keep only tasks of this tier (``easy``, ``medium``, ``hard``) or these.
        limit: keep the first rows.
        export: more options of :func:`envsynth.export.rl.rl_rows`: ``order``,
            ``min_difficulty``, ``max_difficulty``, ``run``, ``min_reward``, ``system_prompt``.

    Raises:
        ImportError: without ``datasets`` (``pip install 'envsynth[datasets]'``).
    """
    from envsynth.export.write import _datasets, rl_features

    ds = _datasets()
    rows = dataset_rows(corpus, app=app, kind=kind, tier=tier, limit=limit, **export)
    features = rl_features(labelled=export.get("run") is not None)
    features["environment"] = ds.Value("string")
    features["corpus"] = ds.Value("string")
    if not rows:
        return ds.Dataset.from_dict({k: [] for k in features}, features=features)
    return ds.Dataset.from_list(rows, features=features)


# --- the reward ------------------------------------------------------------------------------------------------


def completion_actions(completion: Any) -> list[Action]:
    """The tool calls of one completion, in order, as TRL hands completions to reward functions.

    A completion is a list of messages (conversational prompts: the assistant's messages,
    their parsed ``tool_calls`` -- ``{"type": "function", "function": {"name", "arguments"}}``
    with arguments a dict or JSON text -- and the tool results in between) or a string
    (standard prompts). An assistant message without ``tool_calls``, and a string, are read
    for ``<tool_call>{...}</tool_call>`` blocks. Malformed calls are left out.
    """
    if isinstance(completion, str):
        return [c for c in parse_tool_calls(completion) if isinstance(c, Action)]
    out: list[Action] = []
    for message in completion or []:
        if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
            continue
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                fn = call.get("function", call) if isinstance(call, Mapping) else {}
                if isinstance(fn.get("name"), str):
                    out.append(Action(fn["name"], fn.get("arguments")))
        elif isinstance(message.get("content"), str):
            out.extend(c for c in parse_tool_calls(message["content"]) if isinstance(c, Action))
    return out


def replay(source: CorpusSource, task_id: str, completion: Any, seed: int = 0) -> float:
    """envsynth's reward score of a completion: its tool calls on a fresh episode of the task, up to ``complete_task``.

    A completion that never calls ``complete_task`` is scored as it stands, with no answer.
    """
    episode = source.start(source.pick(task_id), seed=seed)
    try:
        for action in completion_actions(completion):
            episode.step(action)
            if episode.finished:
                break
        if not episode.finished:
            episode.finish(None)
        reward = episode.state().reward
        return reward.score if reward is not None else 0.0
    finally:
        if not episode.finished:
            episode.finish(None)


def _at(values: Any, i: int, default: Any = None) -> Any:
    """``values[i]`` of a per-completion column, or ``default`` (no such column)."""
    if values is None:
        return default
    return values[i] if isinstance(values, list | tuple) else values


def make_reward(corpus: CorpusSource | Corpus | str | Path | None = None) -> Callable[..., list[float]]:
    """A TRL reward function (named ``envsynth_reward``) over ``corpus`` (None: the rows' ``corpus`` column).

    Called as TRL calls reward functions (``completions`` and the dataset's columns as
    keyword lists, ``environments`` when it runs environments), it returns one score per
    completion: the episode of its :class:`EnvsynthToolEnv` when there is one, else
    :func:`replay` of the completion on its row's task (``task_id``, ``seed``).
    """
    fixed = open_source(corpus) if corpus is not None else None

    def envsynth_reward(completions: list[Any], task_id: list[str], **kwargs: Any) -> list[float]:
        """envsynth's reward of each completion (see :func:`make_reward`)."""
        envs = kwargs.get("environments")
        scores = []
        for i, completion in enumerate(completions):
            env = _at(envs, i)
            if isinstance(env, EnvsynthToolEnv) and env.episode is not None and env.episode.task_id == task_id[i]:
                scores.append(env._score())
                continue
            source = fixed or _row_source(kwargs.get("corpus"), i)
            scores.append(replay(source, task_id[i], completion, seed=int(_at(kwargs.get("seed"), i, 0) or 0)))
        return scores

    return envsynth_reward


def _row_source(corpora: Any, i: int) -> CorpusSource:
    """The corpus of row ``i`` from its ``corpus`` column."""
    path = _at(corpora, i)
    if path is None:
        raise ValueError("envsynth_reward needs the corpus: rows of rl_dataset carry it, or use make_reward(corpus)")
    return open_source(path)


envsynth_reward = make_reward()
"""The reward function for rows of :func:`rl_dataset` (the corpus read from each row's ``corpus`` column)."""


# --- the trainer -----------------------------------------------------------------------------------------------


def _trl() -> Any:
    """The ``trl`` package, or an ImportError naming the extra."""
    try:
        import trl
    except ImportError as exc:
        raise ImportError(f"envsynth's TRL integration needs trl: {EXTRA} ({exc})") from exc
    return trl


def grpo_trainer(
    model: Any,
    corpus: CorpusSource | Corpus | str | Path,
    *,
    args: Any = None,
    processing_class: Any = None,
    callbacks: list[Any] | None = None,
    **filters: Any,
) -> Any:
    """A ``trl.GRPOTrainer`` on a corpus: :func:`rl_dataset`, :func:`environment_factories`, :func:`make_reward`.

    Args:
        model: a model id or path, or a loaded causal LM (its chat template must support tool calling).
        corpus: the corpus.
        args: a ``trl.GRPOConfig``.
        processing_class: the tokenizer (default: the model's).
        callbacks: trainer callbacks.
        filters: :func:`rl_dataset`'s filters (``app``, ``kind``, ``tier``, ``limit``, ``order``...).

    Raises:
        ImportError: without trl (``pip install 'envsynth[trl]'``).
    """
    trl = _trl()
    source = open_source(corpus)
    dataset = rl_dataset(source, **filters)
    return trl.GRPOTrainer(
        model=model,
        reward_funcs=[make_reward(source)],
        args=args,
        train_dataset=dataset,
        processing_class=processing_class,
        callbacks=callbacks,
        environment_factory=environment_factories(source, dataset),
    )
