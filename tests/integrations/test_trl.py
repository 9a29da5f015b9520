"""TRL: the GRPO dataset, the tool environments (TRL's environment_factory), envsynth_reward, and a training step.

The dataset, environments and reward need no TRL and run everywhere; the tests that build a
GRPOTrainer skip without trl (``pip install 'envsynth[trl]'``, torch included).
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from integration_helpers import oracle_calls

from envsynth.integrations import trl_env
from envsynth.integrations.trl_env import (
    EnvsynthToolEnv,
    completion_actions,
    environment_factories,
    envsynth_reward,
    make_reward,
    tool_set_name,
)

EXAMPLE = Path(__file__).parents[2] / "examples" / "train_trl_grpo.py"


def _env(corpus_path: Path, task: Any) -> EnvsynthToolEnv:
    """A reset environment of the task's tool set, as TRL makes and resets one."""
    env = environment_factories(corpus_path)[tool_set_name(task)]()
    env.reset(task_id=task.id, prompt=[], app=task.app)  # TRL passes every column of the row
    return env


def _trl_rollout(corpus_path: Path, task: Any) -> tuple[EnvsynthToolEnv, list[dict[str, Any]]]:
    """The oracle played through the environment's methods as TRL's tool loop calls them, and the completion TRL would keep."""
    env = _env(corpus_path, task)
    completion: list[dict[str, Any]] = []

    def call(name: str, arguments: dict[str, Any]) -> str:
        completion.append(
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}]}
        )
        result = str(getattr(env, name)(**arguments))
        completion.append({"role": "tool", "name": name, "content": result})
        return result

    oracle_calls(task, call)
    call("complete_task", {"answer": task.expected_answer} if task.expected_answer is not None else {})
    return env, completion


def test_environment_methods_are_the_task_tools(integration_corpus_path, integration_corpus):
    for task in integration_corpus.tasks:
        cls = environment_factories(integration_corpus_path)[tool_set_name(task)]
        ep = integration_corpus.start(task)
        want = {t["function"]["name"]: t["function"]["parameters"] for t in ep.tools}
        ep.finish()
        methods = {n: m for n, m in inspect.getmembers(cls, predicate=inspect.isfunction) if not n.startswith("_") and n != "reset"}
        assert set(methods) == set(want)
        for name, method in methods.items():
            params = {n: p for n, p in inspect.signature(method).parameters.items() if n != "self"}
            assert set(params) == set(want[name].get("properties", {}))
            required = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
            assert required == set(want[name].get("required", []))


def test_transformers_reads_the_tool_schemas_back(integration_corpus_path, integration_corpus):
    utils = pytest.importorskip("transformers.utils")
    task = integration_corpus.tasks[0]
    env = _env(integration_corpus_path, task)
    ep = integration_corpus.start(task)
    for tool in ep.tools:
        fn = tool["function"]
        got = utils.get_json_schema(getattr(env, fn["name"]))["function"]
        assert got["name"] == fn["name"] and got["description"] == " ".join(fn["description"].split())
        props = fn["parameters"].get("properties", {})
        assert set(got["parameters"]["properties"]) == set(props)
        assert set(got["parameters"].get("required", [])) == set(fn["parameters"].get("required", []))
        for name, p in props.items():
            assert got["parameters"]["properties"][name].get("enum") == p.get("enum")
    ep.finish()


def test_oracle_through_the_environment_scores_1(integration_corpus_path, integration_corpus):
    for task in integration_corpus.tasks:
        env, completion = _trl_rollout(integration_corpus_path, task)
        assert make_reward(integration_corpus_path)([completion], [task.id], environments=[env]) == [1.0]


def test_doing_nothing_scores_0(integration_corpus_path, integration_corpus):
    task = integration_corpus.tasks[0]
    env = _env(integration_corpus_path, task)
    nothing = [{"role": "assistant", "content": "All done."}]
    assert make_reward(integration_corpus_path)([nothing], [task.id], environments=[env]) == [0.0]
    assert envsynth_reward([nothing], [task.id], corpus=[str(integration_corpus_path)]) == [0.0]


def test_replayed_completions_score_as_played(integration_corpus_path, integration_corpus):
    """Without the environments (a completion made elsewhere), the completion's calls run again on a fresh episode."""
    completions, ids = [], []
    for task in integration_corpus.tasks:
        _, completion = _trl_rollout(integration_corpus_path, task)
        completions.append(completion)
        ids.append(task.id)
    texts = [
        "".join(
            f"<tool_call>{json.dumps({'name': c['function']['name'], 'arguments': c['function']['arguments']})}</tool_call>"
            for m in comp
            for c in m.get("tool_calls", [])
        )
        for comp in completions
    ]
    assert envsynth_reward(completions, ids, corpus=[str(integration_corpus_path)] * len(ids)) == [1.0] * len(ids)
    assert make_reward(integration_corpus_path)(texts, ids) == [1.0] * len(ids)
    assert make_reward(integration_corpus_path)([[{"role": "assistant", "content": t}] for t in texts], ids) == [1.0] * len(ids)
    cut = [comp[:-2] for comp in completions]  # no complete_task: scored as it stands, with no answer
    assert make_reward(integration_corpus_path)(cut, ids) == [
        1.0 if t.kind == "action" and t.expected_answer is None else 0.0 for t in integration_corpus.tasks
    ]


def test_completion_actions_formats():
    calls = [{"type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}}]
    assert [(a.name, a.arguments) for a in completion_actions([{"role": "assistant", "content": "", "tool_calls": calls}])] == [
        ("a", '{"x": 1}')
    ]
    text = 'hi <tool_call>{"name": "b", "arguments": {"y": 2}}</tool_call> <tool_call>not json</tool_call>'
    assert [(a.name, a.arguments) for a in completion_actions(text)] == [("b", {"y": 2})]
    assert completion_actions([{"role": "tool", "content": '<tool_call>{"name": "c"}</tool_call>'}]) == []


def test_reward_needs_a_corpus(integration_corpus):
    with pytest.raises(ValueError, match="needs the corpus"):
        envsynth_reward(["x"], [integration_corpus.tasks[0].id])


def test_rl_dataset_rows(integration_corpus_path, integration_corpus):
    pytest.importorskip("datasets")
    ds = trl_env.rl_dataset(integration_corpus_path)
    assert ds.num_rows == len(integration_corpus.tasks)
    forbidden = {"oracle", "expected_effects", "expected_answer", "answer"}
    for row, task in zip(ds, integration_corpus.tasks, strict=True):
        assert not forbidden & set(row)
        assert row["task_id"] == task.id and row["environment"] == tool_set_name(task)
        assert Path(row["corpus"]) == Path(integration_corpus_path).absolute()
        assert row["prompt"][-1] == {"role": "user", "content": task.instruction}
        ep = integration_corpus.start(task)
        assert row["tools"] == ep.tools
        ep.finish()
    assert set(ds["environment"]) == set(environment_factories(integration_corpus_path, ds))
    kinds = {t.kind for t in integration_corpus.tasks}
    one = sorted(kinds)[0]
    assert {r["kind"] for r in trl_env.rl_dataset(integration_corpus_path, kind=one)} == {one}
    assert trl_env.rl_dataset(integration_corpus_path, limit=1).num_rows == 1


def test_grpo_trainer_without_trl_names_the_extra():
    code = (
        "import sys\nsys.modules['trl'] = None\n"
        "from envsynth.integrations.trl_env import grpo_trainer\n"
        "try:\n    grpo_trainer('m', 'nowhere')\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "pip install 'envsynth[trl]'" in out.stdout, out.stderr


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("train_trl_grpo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grpo_trainer_offers_each_prompt_its_task_tools(integration_corpus_path, integration_corpus, monkeypatch, tmp_path):
    pytest.importorskip("trl")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    example = _example()
    ds = trl_env.rl_dataset(integration_corpus_path)
    tokenizer = example.tiny_tokenizer(example.training_texts(ds), vocab_size=600)
    trainer = trl_env.grpo_trainer(
        example.tiny_model(tokenizer), integration_corpus_path, args=example.config(tmp_path, 1, 8), processing_class=tokenizer
    )
    assert set(trainer._env_tools) == set(ds["environment"])
    for task in integration_corpus.tasks:
        ep = integration_corpus.start(task)
        assert {t.__name__ for t in trainer._env_tools[tool_set_name(task)]} == {t["function"]["name"] for t in ep.tools}
        ep.finish()
    # a tool call as the model writes it, parsed as TRL parses generations (after the prompt, with its tools), runs on the environment
    from trl.chat_template_utils import parse_response

    task = integration_corpus.tasks[0]
    tools = trainer._env_tools[tool_set_name(task)]
    prefix = tokenizer.apply_chat_template(ds[0]["prompt"], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False)
    step = task.oracle[0]
    text = f"<tool_call>\n{json.dumps({'name': step.tool, 'arguments': step.args})}\n</tool_call><|im_end|>"
    message = parse_response(tokenizer, tokenizer(text, add_special_tokens=False)["input_ids"], prefix=list(prefix), tools=tools)
    call = message["tool_calls"][0]["function"]
    env = _env(integration_corpus_path, task)
    assert json.loads(getattr(env, call["name"])(**call["arguments"])) is not None
    assert env.episode.state().calls == 1


def test_example_trains_offline(integration_corpus_path, tmp_path):
    pytest.importorskip("trl")
    result = _example().main(["--corpus", str(integration_corpus_path), "--steps", "1", "--completion-tokens", "8", "--out", str(tmp_path)])
    assert result["steps"] == 1
    assert "rewards/envsynth_reward/mean" in result["last"]
