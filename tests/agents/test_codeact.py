"""Code-acting rollouts: the oracle as one code block, a scripted model that errs and recovers, timeouts, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chat_server import chat_server, completion
from envsynth.agents import CODE_SYSTEM_PROMPT, ChatAgent, OracleCodeAgent, UserSimulator, extract_code, oracle_code
from envsynth.corpus import Corpus
from envsynth.llm import ScriptedProvider
from envsynth.llm.types import Message
from envsynth.rollout import RunError, Trajectory, run_batch, run_episode, summarize
from envsynth.rollout.command import run_command
from envsynth.rollout.config import RunConfig
from envsynth.sandbox import CodeSandbox, Limits


@pytest.fixture(scope="module")
def sandbox() -> Iterator[CodeSandbox]:
    with CodeSandbox(workers=2, limits=Limits(wall=3.0, cpu=1.0, memory=256 << 20, output=4000)) as sb:
        yield sb


def block(code: str, text: str = "Let me run this.") -> Message:
    return {"role": "assistant", "content": f"{text}\n```python\n{code}\n```"}


def run_code(corpus: Corpus, sandbox: CodeSandbox, task: Any, policy: Any) -> Trajectory:
    return asyncio.run(run_episode(corpus, task, policy, seed=0, sandbox=sandbox))


def test_extract_code_joins_python_blocks_and_ignores_other_fences() -> None:
    text = "First:\n```python\nx = 1\n```\nthen\n```py\nprint(x)\n```\n```json\n{}\n```"
    assert extract_code(text) == "x = 1\n\nprint(x)"
    assert extract_code("Done, the order is cancelled.") is None
    assert extract_code("```\nplain fence\n```") is None
    assert extract_code("```python\nprint(1)") == "print(1)"  # cut at a stop sequence


def test_code_oracle_scores_one_on_every_task(corpus: Corpus, sandbox: CodeSandbox) -> None:
    for task in corpus.tasks:
        traj = run_code(corpus, sandbox, task, OracleCodeAgent(task))
        assert traj.score == 1.0, (task.id, traj.messages[-1], traj.reward)
        assert traj.stop_reason == "complete_task" and traj.turns == 1 and traj.error is None
        roles = [m["role"] for m in traj.messages]
        assert roles == ["system", "user", "assistant", "user"]
        assert traj.messages[-1]["content"].startswith("Observation:")
        asked = ["ask_user"] if task.clarify else []  # a must-ask task's user is asked first
        assert [c["tool"] for c in traj.tool_calls] == asked + [c.tool for c in task.oracle] + ["complete_task"]
        assert all(c["outcome"] == "success" for c in traj.tool_calls)


def test_scripted_code_agent_recovers_from_a_bad_call(corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = corpus.tasks[0]
    first = task.oracle[0].tool
    script = [
        block(f"print({first}(not_a_parameter=1))"),
        block("for t in list_tools():\n    print(t['name'])"),
        block(oracle_code(task)),
    ]
    llm = ScriptedProvider(script)
    traj = run_code(corpus, sandbox, task, ChatAgent(llm, system_prompt=CODE_SYSTEM_PROMPT))
    assert traj.score == 1.0 and traj.stop_reason == "complete_task" and traj.turns == 3
    observations = [m["content"] for m in traj.messages if m["role"] == "user"][1:]
    assert "ToolError" in observations[0]
    assert first in observations[1] and "complete_task" in observations[1]
    assert observations[2].endswith("Task completed.")
    assert traj.tool_calls[0] == {
        "turn": 1,
        "tool": first,
        "outcome": "anticipated_rejection",
        "code": "invalid_arguments",
        "arguments": {"not_a_parameter": 1},
    }
    # the model saw the tools in the system prompt, no function schemas, and every observation
    assert first in llm.requests[0][0]["content"] and "{tools}" not in llm.requests[0][0]["content"]
    assert len(llm.requests[2]) == 6


def test_a_block_that_loops_forever_times_out_and_the_episode_goes_on(corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = corpus.tasks[0]
    script = [
        block("import time\nwhile True:\n    time.sleep(0.05)"),
        block("while True:\n    pass"),
        block(oracle_code(task)),
    ]
    traj = run_code(corpus, sandbox, task, ChatAgent(ScriptedProvider(script), system_prompt=CODE_SYSTEM_PROMPT))
    observations = [m["content"] for m in traj.messages if m["role"] == "user"][1:]
    assert "TimeoutError" in observations[0]
    assert "CPUTimeExceeded" in observations[1] or "TimeoutError" in observations[1]
    assert traj.score == 1.0 and traj.stop_reason == "complete_task"


def test_final_message_without_code_ends_and_scores_the_state(corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = next(t for t in corpus.tasks if t.kind != "info")
    traj = run_code(corpus, sandbox, task, ChatAgent(ScriptedProvider(["I cannot help with that."]), system_prompt=CODE_SYSTEM_PROMPT))
    assert traj.stop_reason == "final_message" and traj.score == 0.0 and traj.tool_calls == []


def test_a_message_without_code_goes_to_the_user_simulator(corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = next(t for t in corpus.tasks if t.kind != "info")
    question = "What would you like me to do?"

    def agent(messages: list[Message], tools: Any, i: int) -> Any:
        return question if i == 0 else {"role": "assistant", "content": f"```python\n{oracle_code(task)}```"}

    user_llm = ScriptedProvider(["Hello, can you help me?", task.instruction])
    policy = ChatAgent(ScriptedProvider(agent), system_prompt=CODE_SYSTEM_PROMPT)
    traj = asyncio.run(run_episode(corpus, task, policy, seed=0, sandbox=sandbox, user=UserSimulator(user_llm, task)))
    assert traj.score == 1.0 and traj.stop_reason == "complete_task" and traj.user_turns == 2
    assert [m["content"] for m in traj.messages[1:4]] == ["Hello, can you help me?", question, task.instruction]
    assert user_llm.requests[1][-1] == {"role": "user", "content": question}


def test_turn_limit_in_code_mode(corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = corpus.tasks[0]
    llm = ScriptedProvider(lambda messages, tools, i: block("print(list_apps())"))
    traj = run_code(corpus, sandbox, task, ChatAgent(llm, system_prompt=CODE_SYSTEM_PROMPT, max_turns=3))
    assert traj.stop_reason == "max_turns" and traj.turns == 3 and traj.score == 0.0


def test_run_batch_in_code_mode(corpus: Corpus, sandbox: CodeSandbox, tmp_path: Path) -> None:
    res = run_batch(corpus, lambda task, attempt: OracleCodeAgent(task), concurrency=4, out=tmp_path / "run", sandbox=sandbox)
    assert res.written == len(corpus.tasks) and res.errors == 0
    assert summarize(tmp_path / "run").to_dict()["pass@1"] == 1.0


def test_cli_oracle_code_mode(corpus_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "envsynth.cli",
        "run",
        str(corpus_path),
        "--agent",
        "oracle",
        "--mode",
        "code",
        "--out",
        str(out),
        "--json",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["pass@1"] == 1.0 and summary["stop_reasons"] == {"complete_task": summary["episodes"]}
    assert json.loads((out / "run.json").read_text())["mode"] == "code"
    bad = subprocess.run([*cmd[:-3], "--mode", "shell", "--out", str(tmp_path / "r2")], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "--mode" in bad.stderr and "Traceback" not in bad.stderr


def test_run_command_openai_code_mode_against_a_local_server(corpus: Corpus, corpus_path: Path, tmp_path: Path) -> None:
    pytest.importorskip("openai")
    by_instruction: dict[str, Any] = {}
    for t in corpus.tasks:  # the states of a task share its instruction: keep one task per instruction
        by_instruction.setdefault(t.instruction, t)
    chosen = [t.id for t in by_instruction.values()][:3]
    bodies: list[dict[str, Any]] = []

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        bodies.append(body)
        instruction = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return 200, completion(body["model"], OracleCodeAgent(by_instruction[instruction]).reply(body["messages"]))

    with chat_server(reply) as base_url:
        config = RunConfig(corpus=corpus_path, out=tmp_path / "run", agent="code", model="m", base_url=base_url, api_key="k", tasks=chosen)
        s = run_command(config).to_dict()
    assert s["episodes"] == 3 and s["pass@1"] == 1.0
    assert bodies and all("tools" not in b for b in bodies)
    assert bodies[0]["messages"][0]["content"].startswith(CODE_SYSTEM_PROMPT.split("\n")[0])
    with pytest.raises(RunError, match="holds a code-mode run"):
        run_command(RunConfig(corpus=corpus_path, out=tmp_path / "run", agent="oracle"))  # function mode into a code-mode run folder
    with pytest.raises(ValueError, match="'function' or 'code'"):
        RunConfig(corpus=corpus_path, out=tmp_path / "r2", agent="oracle", mode="shell")
    with pytest.raises(ValueError, match="agent 'code' acts in code mode"):
        RunConfig(corpus=corpus_path, out=tmp_path / "r2", agent="code", mode="function", model="m")
