"""The SkyRL-gym integration: scripted model texts through env.init / env.step, scored by envsynth's reward."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym")

from integration_helpers import oracle_calls  # noqa: E402

from envsynth.corpus import Corpus  # noqa: E402
from envsynth.integrations.skyrl_env import ENV_ID, NO_CALL, EnvsynthTextEnv, parse_tool_calls, register  # noqa: E402
from envsynth.tasks.trainer import Action  # noqa: E402


def _call(name: str, arguments: Any = None) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def _response(out: dict[str, Any]) -> str:
    """The one tool response of a step's observation, without its tags."""
    (message,) = out["observations"]
    assert message["role"] == "user"
    body = message["content"]
    assert body.startswith("<tool_response>\n") and body.endswith("\n</tool_response>")
    return body.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")


def _make(path: Path, **extras: Any) -> Any:
    return skyrl_gym.make(ENV_ID, env_config={"corpus": str(path)}, extras=extras)


def test_oracle_texts_score_one(integration_corpus_path: Path, integration_corpus: Corpus) -> None:
    for task in integration_corpus:
        env = _make(integration_corpus_path, task_id=task.id, seed=0)
        prompt, info = env.init([])
        assert prompt[-1] == {"role": "user", "content": task.instruction} and info["task_id"] == task.id
        assert "<tool_call>" in prompt[0]["content"]

        def step(name: str, args: dict[str, Any], env: Any = env) -> str:
            out = env.step(f"I will call {name}.\n{_call(name, args)}")
            assert not out["done"] and out["reward"] == 0.0
            return _response(out)

        oracle_calls(task, step)
        out = env.step(_call("complete_task", {"answer": task.expected_answer}))
        assert out["done"] and out["reward"] == 1.0 and out["observations"] == [], task.id
        assert env.get_metrics()["score"] == 1.0


def test_all_calls_in_one_text(integration_corpus_path: Path, integration_corpus: Corpus) -> None:
    task = next(t for t in integration_corpus if not any(c.refs for c in t.oracle))
    env = _make(integration_corpus_path, task_id=task.id)
    env.init([{"role": "user", "content": "from the dataset"}])
    text = "".join(_call(c.tool, c.args) for c in task.oracle) + _call("complete_task", {"answer": task.expected_answer})
    out = env.step(text)
    assert out["done"] and out["reward"] == 1.0


def test_doing_nothing_scores_zero(integration_corpus_path: Path, integration_corpus: Corpus) -> None:
    env = _make(integration_corpus_path, task_id=integration_corpus.tasks[0].id)
    env.init([])
    out = env.step(_call("complete_task", {}))
    assert out["done"] and out["reward"] == 0.0


def test_malformed_calls_are_explained(integration_corpus_path: Path, integration_corpus: Corpus) -> None:
    env = _make(integration_corpus_path, task_id=integration_corpus.tasks[0].id)
    env.init([])
    out = env.step('<tool_call>{"name": "get_product", oops}</tool_call>')
    assert not out["done"] and "not valid JSON" in _response(out)
    out = env.step('<tool_call>["get_product"]</tool_call>')
    assert 'string "name"' in _response(out)
    out = env.step('<tool_call>{"name": "get_product", "args": {}}</tool_call>')
    assert "keys other than" in _response(out)
    out = env.step('<tool_call>{"name": "get_product"')
    assert "no closing </tool_call>" in _response(out)
    out = env.step("<tool_call>" + "[" * 100_000 + "</tool_call>")
    assert "not valid JSON" in _response(out) and len(_response(out)) < 500
    out = env.step("I am done.")
    assert out["observations"][0]["content"] == NO_CALL and not out["done"]
    out = env.step(_call("no_such_tool", {}))
    assert "Unknown tool" in _response(out)
    assert env.get_metrics()["parse_errors"] == 5 and env.get_metrics()["calls"] == 1


def test_max_turns_ends_the_episode(integration_corpus_path: Path, integration_corpus: Corpus) -> None:
    env = _make(integration_corpus_path, task_id=integration_corpus.tasks[0].id, max_turns=2)
    env.init([])
    assert not env.step("thinking")["done"]
    out = env.step("still thinking")
    assert out["done"] and out["reward"] == 0.0
    assert env.step(_call("complete_task"))["done"]


def test_task_by_seed_and_corpus_in_extras(integration_corpus: Corpus) -> None:
    n = len(integration_corpus)
    env = EnvsynthTextEnv(extras={"corpus": integration_corpus, "seed": n + 1})
    assert env.episode.task_id == integration_corpus.tasks[1].id
    env.close()
    assert env.episode.finished
    with pytest.raises(ValueError, match="needs a corpus"):
        EnvsynthTextEnv(extras={"task_id": "x"})


def test_parse_tool_calls() -> None:
    text = 'a <tool_call>{"name": "f", "arguments": "{\\"x\\": 1}"}</tool_call> b <tool_call>{"name": "g"}</tool_call>'
    assert parse_tool_calls(text) == [Action("f", '{"x": 1}'), Action("g", None)]
    assert parse_tool_calls("no calls") == []
    register()  # registering again changes nothing
    assert ENV_ID in skyrl_gym.registry
