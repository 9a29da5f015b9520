"""The HTTP server: a real uvicorn on loopback, driven with httpx."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from envsynth.blueprint.policy import policy_text

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from serve_helpers import distinctive  # noqa: E402

from envsynth.corpus import Corpus  # noqa: E402
from envsynth.runtime.answerpath import answer_in  # noqa: E402
from envsynth.tasks.model import Task  # noqa: E402
from envsynth.tasks.planning.refs import resolve  # noqa: E402

FORBIDDEN = ("oracle", "expected", "state", "answer_step", "answer_field", "visible_tools", "coordinates", "hash", "stats", "seed")


def replay_oracle(client: httpx.Client, task: Task, seed: int = 0) -> dict[str, Any]:
    """Start an episode, run the task's oracle (refs resolved from earlier results) over HTTP, finish."""
    r = client.post("/episodes", json={"task_id": task.id, "seed": seed})
    assert r.status_code == 201, r.text
    eid = r.json()["episode_id"]
    results: list[Any] = []
    for call in task.oracle:
        args = {**call.args, **{p: resolve(ref, results) for p, ref in call.refs.items()}}
        res = client.post(f"/episodes/{eid}/call", json={"name": call.tool, "arguments": args})
        assert res.status_code == 200, res.text
        body = res.json()
        assert body["outcome"] == "success", (task.id, call.tool, body)
        results.append(json.loads(body["content"]))
    answer = answer_in(results[task.answer_step], task.answer_field) if task.answer_step is not None and task.answer_field else None
    done = client.post(f"/episodes/{eid}/finish", json={"answer": answer})
    assert done.status_code == 200, done.text
    return {"episode_id": eid, **done.json()}


def _error(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text)
    body = r.json()
    assert body["error"] == code and body["detail"], body
    return body


def test_health_and_task_listing(server: Any, corpus: Corpus) -> None:
    with server.client() as c:
        h = c.get("/health").json()
        assert h["status"] == "ok" and h["tasks"] == len(corpus.tasks) and h["max_episodes"] == 1024
        page = c.get("/tasks").json()
        assert page["total"] == len(corpus.tasks)
        assert [t["id"] for t in page["tasks"]] == [t.id for t in corpus.tasks]
        assert set(page["tasks"][0]) == {"id", "app", "kind", "instruction"}
        second = c.get("/tasks", params={"offset": 2, "limit": 3}).json()
        assert [t["id"] for t in second["tasks"]] == [t.id for t in corpus.tasks[2:5]]
        assert (second["offset"], second["limit"]) == (2, 3)
        assert c.get("/tasks", params={"offset": 10_000}).json()["tasks"] == []
        kind = corpus.tasks[0].kind
        only = c.get("/tasks", params={"kind": kind}).json()
        assert only["total"] == sum(t.kind == kind for t in corpus.tasks)
        _error(c.get("/tasks", params={"limit": 0}), 422, "invalid_request")
        _error(c.get("/tasks", params={"offset": -1}), 422, "invalid_request")


def test_task_detail_is_public_only(server: Any, corpus: Corpus) -> None:
    with server.client() as c:
        for task in corpus.tasks:
            r = c.get(f"/tasks/{task.id}")
            assert r.status_code == 200
            d = r.json()
            assert set(d) == {"id", "app", "kind", "instruction", "tools", "policy"}  # no user profile: it can hold the answer
            assert d["policy"] == policy_text(corpus.apps[task.app].blueprint)  # the app's policy, as the agent reads it
            assert d["instruction"] == task.instruction
            names = [t["function"]["name"] for t in d["tools"]]
            assert names[-1] == "complete_task" and set(names[:-1]) == set(task.visible_tools)
            text = r.text
            assert task.oracle_program not in text
            assert json.dumps(task.expected_effects) not in text
            assert not any(k in d for k in FORBIDDEN)
            public = json.dumps({k: v for k, v in d.items() if k != "tools"})
            assert not any(f'"{k}"' in public for k in FORBIDDEN)
            # the tools are exactly the visible schemas: nothing else rides along
            assert d["tools"] == corpus.start(task).tools
            if distinctive(task.expected_answer):
                assert json.dumps(task.expected_answer) not in json.dumps({k: d[k] for k in ("id", "app", "kind", "instruction")})
            _error(c.get(f"/tasks/{task.id}/user"), 403, "user_profile_disabled")
        _error(c.get("/tasks/no-such-task"), 404, "unknown_task")


def test_oracle_scores_one_and_nothing_scores_zero(server: Any, corpus: Corpus) -> None:
    with server.client() as c:
        for task in corpus.tasks:
            got = replay_oracle(c, task, seed=3)
            assert got["score"] == 1.0 and got["passed"] and got["breakdown"] == [], (task.id, got)
            r = c.post("/episodes", json={"task_id": task.id})
            eid = r.json()["episode_id"]
            assert r.json()["instruction"] == task.instruction
            nothing = c.post(f"/episodes/{eid}/finish", json={})
            assert nothing.status_code == 200
            assert nothing.json()["score"] == 0.0 and nothing.json()["breakdown"], task.id
            # the parts come as names and verdicts only: no detail that could name the ground truth
            parts = nothing.json()["parts"]
            assert set(parts) >= {"state"} and all(v is True or v is False for v in parts.values()), parts
            assert ("answer" in parts) == (task.expected_answer is not None) and not all(parts.values())
            assert all(v is True for v in got["parts"].values()), got


def test_episode_lifecycle_and_errors(server: Any, corpus: Corpus) -> None:
    task = corpus.tasks[0]
    with server.client() as c:
        started = c.post("/episodes", json={"task_id": task.id, "seed": 1}).json()
        eid = started["episode_id"]
        tools = c.get(f"/episodes/{eid}/tools").json()["tools"]
        assert tools == started["tools"] and tools[-1]["function"]["name"] == "complete_task"
        info = c.get(f"/episodes/{eid}").json()
        assert info["task_id"] == task.id and info["seed"] == 1 and info["calls"] == 0

        # tool-level problems are data (200), not HTTP errors
        r = c.post(f"/episodes/{eid}/call", json={"name": "no_such_tool", "arguments": {}})
        assert r.status_code == 200 and r.json()["outcome"] == "anticipated_rejection" and r.json()["code"] == "unknown_tool"
        reader = next(n for n in task.visible_tools if n.startswith(("search_", "get_")))
        r = c.post(f"/episodes/{eid}/call", json={"name": reader, "arguments": {"bogus_argument": 1}})
        assert r.status_code == 200 and r.json()["code"] == "invalid_arguments"
        r = c.post(f"/episodes/{eid}/call", json={"name": reader, "arguments": "{not json"})
        assert r.status_code == 200 and r.json()["code"] == "invalid_arguments"
        assert c.get(f"/episodes/{eid}").json()["calls"] == 3

        # malformed requests: 422 with a clear body
        _error(c.post("/episodes", json={"seed": 1}), 422, "invalid_request")
        _error(c.post("/episodes", json={"task_id": task.id, "extra": 1}), 422, "invalid_request")
        _error(c.post("/episodes", json={"task_id": task.id, "seed": "x"}), 422, "invalid_request")
        bad = _error(c.post("/episodes", content=b"{nope", headers={"content-type": "application/json"}), 422, "invalid_request")
        assert bad["errors"]
        _error(c.post(f"/episodes/{eid}/call", json={"arguments": {}}), 422, "invalid_request")
        _error(c.post(f"/episodes/{eid}/call", json={"name": reader, "args": {}}), 422, "invalid_request")
        _error(c.post(f"/episodes/{eid}/finish", json={"answer": 1, "more": 2}), 422, "invalid_request")

        # unknown task / episode: 404
        _error(c.post("/episodes", json={"task_id": "no-such-task"}), 404, "unknown_task")
        for method, path in [("GET", "/episodes/zzz"), ("GET", "/episodes/zzz/tools"), ("DELETE", "/episodes/zzz")]:
            _error(c.request(method, path), 404, "unknown_episode")
        _error(c.post("/episodes/zzz/call", json={"name": reader}), 404, "unknown_episode")
        _error(c.post("/episodes/zzz/finish", json={}), 404, "unknown_episode")
        _error(c.get("/no/such/route"), 404, "not_found")
        _error(c.put("/episodes"), 405, "method_not_allowed")

        # finished: calls 409, finish again gives the same reward; deleted: 404
        first = c.post(f"/episodes/{eid}/finish", json={"answer": None})
        assert first.status_code == 200
        _error(c.post(f"/episodes/{eid}/call", json={"name": reader}), 409, "episode_finished")
        again = c.post(f"/episodes/{eid}/finish", json={"answer": "something else"})
        assert again.status_code == 200 and again.json() == first.json()
        _error(c.get(f"/episodes/{eid}/tools"), 409, "episode_finished")
        assert c.delete(f"/episodes/{eid}").status_code == 200
        _error(c.post(f"/episodes/{eid}/call", json={"name": reader}), 404, "unknown_episode")

        # delete a live episode: its slot is freed
        other = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
        before = c.get("/health").json()["live_episodes"]
        assert c.delete(f"/episodes/{other}").json() == {"episode_id": other, "deleted": True}
        assert c.get("/health").json()["live_episodes"] == before - 1
        _error(c.delete(f"/episodes/{other}"), 404, "unknown_episode")
        _error(c.post(f"/episodes/{eid}/finish", json={}), 404, "unknown_episode")  # deleted: its reward is forgotten


def test_unexpected_failure_is_a_200(start_server: Any, corpus: Corpus) -> None:
    s = start_server()
    task = corpus.tasks[0]
    app = s.app.state.corpus.apps[task.app]  # the server's own copy of the app
    name = task.oracle[0].tool

    def crash(*_: Any, **__: Any) -> Any:
        raise RuntimeError("injected environment bug")

    original = app.functions[name]
    app.functions[name] = crash
    try:
        with s.client() as c:
            eid = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
            r = c.post(f"/episodes/{eid}/call", json={"name": name, "arguments": task.oracle[0].args})
            assert r.status_code == 200
            body = r.json()
            assert body["outcome"] == "unexpected_failure" and "injected" not in body["content"]
            assert c.post(f"/episodes/{eid}/finish", json={}).status_code == 200
    finally:
        app.functions[name] = original


def test_capacity_is_bounded(start_server: Any, corpus: Corpus) -> None:
    s = start_server(max_episodes=2)
    task = corpus.tasks[0]
    with s.client() as c:
        a = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
        b = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
        full = c.post("/episodes", json={"task_id": task.id})
        body = _error(full, 503, "at_capacity")
        assert body["max_episodes"] == 2 and body["live"] == 2 and full.headers["retry-after"]
        assert "maximum of 2" in body["detail"]
        c.post(f"/episodes/{a}/finish", json={})
        cnew = c.post("/episodes", json={"task_id": task.id})
        assert cnew.status_code == 201
        _error(c.post("/episodes", json={"task_id": task.id}), 503, "at_capacity")
        c.delete(f"/episodes/{b}")
        assert c.post("/episodes", json={"task_id": task.id}).status_code == 201
        assert c.get("/health").json()["live_episodes"] == 2


def test_idle_episodes_are_reaped(start_server: Any, corpus: Corpus) -> None:
    s = start_server(idle_timeout=1.5, max_episodes=1)  # 15x the gap between the busy episode's calls: a loaded machine stays inside it
    task = corpus.tasks[0]
    reader = next(n for n in task.visible_tools if n.startswith(("search_", "get_")))
    with s.client() as c:
        idle = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
        deadline = time.monotonic() + 10
        while c.get("/health").json()["live_episodes"] and time.monotonic() < deadline:
            time.sleep(0.05)
        h = c.get("/health").json()
        assert h["live_episodes"] == 0 and h["reaped"] == 1
        _error(c.post(f"/episodes/{idle}/call", json={"name": reader}), 404, "episode_expired")
        # an episode in use is kept alive by its calls
        busy = c.post("/episodes", json={"task_id": task.id}).json()["episode_id"]
        for _ in range(25):  # 2.5 s of calls: longer than the idle timeout
            time.sleep(0.1)
            assert c.post(f"/episodes/{busy}/call", json={"name": reader, "arguments": {}}).status_code == 200
        assert c.post(f"/episodes/{busy}/finish", json={}).status_code == 200


def test_concurrent_episodes_from_threads(server: Any, corpus: Corpus) -> None:
    jobs = [(t, seed) for seed in range(3) for t in corpus.tasks]

    def run(job: tuple[Task, int]) -> float:
        task, seed = job
        with server.client() as c:
            return float(replay_oracle(c, task, seed=seed)["score"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        scores = list(pool.map(run, jobs))
    assert scores == [1.0] * len(jobs)
    with server.client() as c:
        assert c.get("/health").json()["live_episodes"] == 0


def test_interleaved_episodes_keep_their_own_state(server: Any, corpus: Corpus) -> None:
    """Many episodes open at once on the same task: each sees only its own writes."""
    task = next(t for t in corpus.tasks if t.kind == "action")
    with server.client() as c:
        eids = [c.post("/episodes", json={"task_id": task.id, "seed": i}).json()["episode_id"] for i in range(6)]
        # run the oracle in half of them, step by step across episodes
        results: dict[str, list[Any]] = {e: [] for e in eids[::2]}
        for call in task.oracle:
            for e in eids[::2]:
                args = {**call.args, **{p: resolve(ref, results[e]) for p, ref in call.refs.items()}}
                body = c.post(f"/episodes/{e}/call", json={"name": call.tool, "arguments": args}).json()
                assert body["outcome"] == "success", body
                results[e].append(json.loads(body["content"]))
        scores = [c.post(f"/episodes/{e}/finish", json={}).json()["score"] for e in eids]
    assert scores == [1.0, 0.0] * 3


def test_core_does_not_import_fastapi() -> None:
    code = "import sys, envsynth, envsynth.serve, envsynth.corpus; assert 'fastapi' not in sys.modules and 'uvicorn' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_extra_gives_install_hint() -> None:
    code = "import sys; sys.modules['fastapi'] = None\ntry:\n    import envsynth.serve.http\nexcept ImportError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "pip install 'envsynth[serve]'" in out


def test_openapi_documents_every_endpoint(server: Any) -> None:
    with server.client() as c:
        spec = c.get("/openapi.json").json()
    paths = spec["paths"]
    assert set(paths) >= {
        "/health",
        "/tasks",
        "/tasks/{task_id}",
        "/episodes",
        "/episodes/{episode_id}",
        "/episodes/{episode_id}/tools",
        "/episodes/{episode_id}/call",
        "/episodes/{episode_id}/finish",
    }
    assert "delete" in paths["/episodes/{episode_id}"]
    assert spec["components"]["schemas"]["ToolCall"]["additionalProperties"] is False


def test_bad_settings_are_refused(corpus_path: Any) -> None:
    from envsynth.serve.http import create_app

    with pytest.raises(ValueError, match="max_episodes"):
        create_app(corpus_path, max_episodes=0)
    with pytest.raises(ValueError, match="idle_timeout"):
        create_app(corpus_path, idle_timeout=0)
    with pytest.raises(ValueError, match="call_mode"):
        create_app(corpus_path, call_mode="fork")  # type: ignore[arg-type]
