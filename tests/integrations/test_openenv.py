"""The OpenEnv integration: the Environment in process, and OpenEnv's server and client over a real uvicorn."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv")
uvicorn = pytest.importorskip("uvicorn")

from integration_helpers import oracle_calls  # noqa: E402

from envsynth.corpus import Corpus  # noqa: E402
from envsynth.integrations.openenv_env import (  # noqa: E402
    NO_EPISODE,
    EnvsynthAction,
    EnvsynthEnvClient,
    EnvsynthEnvironment,
    create_app,
)
from envsynth.integrations.source import open_source  # noqa: E402


class _Server:
    """OpenEnv's app for the corpus on a free loopback port, served by uvicorn in a daemon thread."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the OpenEnv server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture(scope="module")
def server(integration_corpus_path: Path) -> Iterator[_Server]:
    with _Server(create_app(integration_corpus_path, max_concurrent_envs=8)) as s:
        yield s


def _client(server: _Server) -> Any:
    return EnvsynthEnvClient(base_url=server.url).sync()


def _play_oracle(env: Any, task: Any) -> Any:
    """The oracle's calls and its answer through ``env`` (a sync client or an Environment); the last step's result."""

    def step(name: str, args: dict[str, Any]) -> str:
        out = env.step(EnvsynthAction(name=name, arguments=args))
        obs = getattr(out, "observation", out)
        assert obs.outcome == "success", obs.content
        return obs.content

    oracle_calls(task, step)
    return env.step(EnvsynthAction(name="complete_task", arguments={"answer": task.expected_answer}))


def test_oracle_scores_one_over_the_server(server: _Server, integration_corpus: Corpus) -> None:
    for task in integration_corpus:
        with _client(server) as env:
            first = env.reset(task_id=task.id, seed=0)
            assert first.observation.content == task.instruction and not first.done
            assert [t["function"]["name"] for t in first.observation.tools][-1] == "complete_task"
            out = _play_oracle(env, task)
            assert out.done and out.reward == 1.0, (task.id, out)
            assert all(out.observation.parts.values())
            state = env.state()
            assert state.task_id == task.id and state.done and state.score == 1.0 and state.calls == len(task.oracle)


def test_doing_nothing_scores_zero_over_the_server(server: _Server, integration_corpus: Corpus) -> None:
    task = integration_corpus.tasks[0]
    with _client(server) as env:
        env.reset(task_id=task.id)
        out = env.step(EnvsynthAction(name="complete_task", arguments={}))
        assert out.done and out.reward == 0.0
        again = env.step(EnvsynthAction(name="complete_task"))
        assert again.done and again.observation.code == "episode_finished"


def test_rejected_calls_are_observations(server: _Server, integration_corpus: Corpus) -> None:
    with _client(server) as env:
        env.reset(task_id=integration_corpus.tasks[0].id)
        out = env.step(EnvsynthAction(name="no_such_tool", arguments={}))
        assert not out.done and out.observation.outcome == "anticipated_rejection" and out.observation.code == "unknown_tool"
        out = env.step(EnvsynthAction(name="complete_task", arguments="{not json"))
        assert not out.done and out.observation.code == "invalid_arguments"


def test_reset_by_seed_picks_tasks_deterministically(server: _Server, integration_corpus: Corpus) -> None:
    n = len(integration_corpus)
    with _client(server) as env:
        picked = [env.reset(seed=s).observation.task_id for s in (0, 1, n + 1)]
    tasks = integration_corpus.tasks
    assert picked == [tasks[0].id, tasks[1].id, tasks[1].id]


def test_concurrent_sessions_are_isolated(server: _Server, integration_corpus: Corpus) -> None:
    task = next(t for t in integration_corpus if t.kind == "action")
    with _client(server) as a, _client(server) as b:
        a.reset(task_id=task.id, seed=0)
        b.reset(task_id=task.id, seed=0)
        oracle_calls(task, lambda name, args: a.step(EnvsynthAction(name=name, arguments=args)).observation.content)
        assert a.state().calls == len(task.oracle) and b.state().calls == 0
        assert b.step(EnvsynthAction(name="complete_task")).reward == 0.0  # none of a's writes are in b's state
        assert not a.state().done
        assert a.step(EnvsynthAction(name="complete_task")).reward == 1.0
        b.reset(task_id=task.id, seed=0)  # and b plays it on its own fresh state: a's writes are not there either
        assert _play_oracle(b, task).reward == 1.0


def test_environment_in_process(integration_corpus: Corpus) -> None:
    env = EnvsynthEnvironment(open_source(integration_corpus))
    assert env.step(EnvsynthAction(name="complete_task")).content == NO_EPISODE
    task = integration_corpus.tasks[-1]
    obs = env.reset(task_id=task.id, seed=0, episode_id="e1")
    assert obs.task_id == task.id and obs.reward is None
    out = _play_oracle(env, task)
    assert out.reward == 1.0 and env.state.episode_id == "e1" and env.state.step_count == len(task.oracle) + 1
    env.reset(task_id=task.id)
    env.close()
    assert env.state.task_id is None


def test_reset_refuses_unknown_task_and_arguments(integration_corpus: Corpus) -> None:
    env = EnvsynthEnvironment(integration_corpus)
    with pytest.raises(ValueError, match="no task"):
        env.reset(task_id="nope")
    with pytest.raises(ValueError, match="unknown reset arguments"):
        env.reset(colour="red")


def test_server_describes_itself(server: _Server) -> None:
    import httpx

    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get("/health").json()["status"] == "healthy"
        meta = c.get("/metadata").json()
        assert meta["name"] == "envsynth"
        schema = c.get("/schema").json()
        assert {"name", "arguments"} <= set(schema["action"]["properties"])
        json.dumps(schema)


def test_app_from_env_needs_the_variable(monkeypatch: pytest.MonkeyPatch, integration_corpus_path: Path) -> None:
    from envsynth.integrations.openenv_env import CORPUS_VARIABLE, app_from_env

    monkeypatch.delenv(CORPUS_VARIABLE, raising=False)
    with pytest.raises(RuntimeError, match=CORPUS_VARIABLE):
        app_from_env()
    monkeypatch.setenv(CORPUS_VARIABLE, str(integration_corpus_path))
    assert any(getattr(r, "path", None) == "/ws" for r in app_from_env().routes)


def test_sessions_in_parallel_threads_each_score_their_own(integration_corpus: Corpus) -> None:
    from concurrent.futures import ThreadPoolExecutor

    source = open_source(integration_corpus)
    tasks = list(integration_corpus)

    def play(k: int) -> tuple[float, float]:
        env = EnvsynthEnvironment(source)
        task = tasks[k % len(tasks)]
        env.reset(task_id=task.id, seed=k)
        won = _play_oracle(env, task).reward
        env.reset(task_id=task.id, seed=k)
        lost = env.step(EnvsynthAction(name="complete_task")).reward
        env.close()
        return won, lost

    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(play, range(24)))
    assert scores == [(1.0, 0.0)] * 24


def test_an_invalid_action_is_an_error_and_the_session_goes_on(server: _Server, integration_corpus: Corpus) -> None:
    class RawClient(EnvsynthEnvClient):
        def _step_payload(self, action: Any) -> dict[str, Any]:
            return action  # sent as is: what a client of another language may send

    task = integration_corpus.tasks[0]
    with RawClient(base_url=server.url).sync() as env:
        env.reset(task_id=task.id)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step({"name": "complete_task", "arguments": [1], "colour": "red"})
        assert env.state().calls == 0
        assert env.step({"name": "complete_task", "arguments": {}}).reward == 0.0
