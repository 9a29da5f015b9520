"""Code blocks against real task episodes: tools as functions, meta-tools, the oracle as code."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from sandbox_helpers import oracle_block

from envsynth.corpus import Corpus
from envsynth.sandbox import CodeSandbox, tool_documentation
from envsynth.tasks.model import Task


def _get_call(corpus: Corpus, task: Task) -> tuple[str, str, Any] | None:
    """A get_ tool the task can see, with its key parameter and the key of a row of the task's initial state."""
    s0 = sqlite3.connect(":memory:")
    s0.deserialize(corpus.state_bytes(task))
    app = corpus.apps[task.app]
    return next(
        (
            (t, spec.params[0].name, row[0])
            for t in sorted(task.visible_tools)
            if t.startswith("get_") and (spec := app.spec_by_name[t]).params and spec.bindings
            for row in [s0.execute(f'SELECT "{spec.params[0].name}" FROM "{spec.bindings[0].entity}" LIMIT 1').fetchone()]
            if row is not None
        ),
        None,
    )


def test_printing_tool_results(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    task, (reader, param, value) = next((t, call) for t in sbx_corpus.tasks if (call := _get_call(sbx_corpus, t)) is not None)
    tep = sbx_corpus.start(task)
    ep = sandbox.episode(tep)
    obs = ep.run(f"r = {reader}({param}={json.dumps(value)})\nprint(type(r).__name__, r)")
    assert obs.error is None, obs.text
    assert obs.text.startswith("dict "), obs.text
    assert str(value) in obs.text
    obs = ep.run(f"print(r[{param!r}])")  # variables persist between blocks of an episode
    assert obs.error is None and obs.text.strip() == str(value)
    ep.close()


def test_meta_tools(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = sbx_corpus.tasks[0]
    tep = sbx_corpus.start(task)
    ep = sandbox.episode(tep)
    obs = ep.run("print(list_apps())\nprint([t['name'] for t in list_tools()])")
    assert obs.error is None, obs.text
    apps, names = obs.text.strip().splitlines()
    assert apps == f"[{task.app!r}]"
    assert eval(names) == [*task.visible_tools, "complete_task"]  # only the task's visible tools
    name = task.visible_tools[0]
    obs = ep.run(f"print(get_tool_documentation({name!r}))")
    schema = next(s for s in tep.tools if s["function"]["name"] == name)
    assert obs.text.strip() == tool_documentation(schema).strip()
    obs = ep.run("get_tool_documentation('no_such_tool')")
    assert obs.error and "ToolError: Unknown tool 'no_such_tool'" in obs.error
    ep.close()


def test_rejections_are_tool_errors_and_catchable(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = sbx_corpus.tasks[0]
    ep = sandbox.episode(sbx_corpus.start(task))
    reader = next(t for t in task.visible_tools if t.startswith("get_"))
    obs = ep.run(f"try:\n    {reader}('nope_000000')\nexcept ToolError as e:\n    print('rejected:', e)")
    assert obs.error is None and obs.text.startswith("rejected:"), obs.text
    obs = ep.run(f"{reader}(bogus=1)")
    assert obs.error and "ToolError" in obs.error
    obs = ep.run("1/0")
    assert obs.error and obs.error.endswith("ZeroDivisionError: division by zero")
    assert 'File "<code>", line 1' in obs.error
    obs = ep.run("def f(:\n  pass")
    assert obs.error and "SyntaxError" in obs.error
    assert not ep.done
    ep.close()


def test_oracle_as_code_block_scores_one(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    assert sbx_corpus.tasks
    for task in sbx_corpus.tasks:
        ep = sandbox.episode(sbx_corpus.start(task, seed=3))
        obs = ep.run(oracle_block(task))
        assert obs.error is None, obs.text
        assert obs.done and ep.done
        reward = ep.finish()
        assert reward.score == 1.0, reward.breakdown
        after = ep.run("print('more')")
        assert after.done and after.error


def test_finish_without_complete_task(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    task = sbx_corpus.tasks[0]
    ep = sandbox.episode(sbx_corpus.start(task))
    ep.run("print('nothing')")
    assert ep.finish().score == 0.0  # do-nothing scores 0

    ep = sandbox.episode(sbx_corpus.start(task))
    body = oracle_block(task).replace("complete_task(answer=solve(None))", "answer = solve(None)")
    assert ep.run(body).error is None
    answer = ep.run("print(answer)").output.strip()
    reward = ep.finish(None if task.expected_answer is None else answer)
    assert reward.score == 1.0, reward.breakdown


def test_output_truncated(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    ep = sandbox.episode(sbx_corpus.start(sbx_corpus.tasks[0]))
    obs = ep.run("print('y' * 100000)")
    assert obs.error is None
    assert obs.text.startswith("y" * 2000)
    assert "[output truncated: 98001 more characters]" in obs.text
    ep.close()


def test_tool_calls_from_threads(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    ep = sandbox.episode(sbx_corpus.start(sbx_corpus.tasks[0]))
    code = (
        "import threading\n"
        "out = []\n"
        "def work():\n"
        "    for _ in range(20):\n"
        "        out.append(len(list_tools()))\n"
        "ts = [threading.Thread(target=work) for _ in range(4)]\n"
        "[t.start() for t in ts]\n"
        "[t.join() for t in ts]\n"
        "print(len(out), len(set(out)))\n"
    )
    obs = ep.run(code)
    assert obs.error is None and obs.text.strip() == "80 1", obs.text
    ep.close()


def test_episodes_on_short_lived_threads(sbx_corpus: Corpus, sandbox: CodeSandbox) -> None:
    # workers are started by the pool's own thread: a caller thread ending does not kill them
    from concurrent.futures import ThreadPoolExecutor

    def first_block():
        ep = sandbox.episode(sbx_corpus.start(sbx_corpus.tasks[0]))
        ep.run("x = 41")
        return ep

    with ThreadPoolExecutor(max_workers=3) as pool:
        eps = [f.result() for f in [pool.submit(first_block) for _ in range(3)]]
    for ep in eps:
        obs = ep.run("print(x + 1)")
        assert obs.error is None and obs.text.strip() == "42", obs.text
        ep.close()


def test_default_pool(sbx_corpus: Corpus) -> None:
    from envsynth.sandbox import CodeActEpisode, default_pool

    ep = CodeActEpisode(sbx_corpus.start(sbx_corpus.tasks[0]))
    assert ep.pool is default_pool()
    obs = ep.run("print('hello from', list_apps()[0])")
    assert obs.text == f"hello from {sbx_corpus.tasks[0].app}\n"
    ep.close()
