"""The HTTP server under abuse: capacity and reaping with many live episodes, deeply nested and
huge bodies, no ground truth in rewards, token auth, idempotent finish (real uvicorn on loopback)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")

from serve_helpers import distinctive, says  # noqa: E402

from envsynth.corpus import Corpus  # noqa: E402
from envsynth.tasks.model import Task  # noqa: E402
from envsynth.tasks.planning.refs import resolve  # noqa: E402


def _error(r: Any, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, (r.status_code, r.text[:500])
    assert r.headers["content-type"].startswith("application/json"), r.text[:500]
    body = r.json()
    assert body["error"] == code and body["detail"], body
    return body


def _reader(task: Task) -> str:
    return next(n for n in task.visible_tools if n.startswith(("search_", "get_")))


def _start(c: Any, task: Task) -> str:
    r = c.post("/episodes", json={"task_id": task.id})
    assert r.status_code == 201, r.text
    return str(r.json()["episode_id"])


def _empty_first_pool_entry(c: Any, task: Task) -> str:
    """Finish one episode on ``task``, then hold a new one: its pooled connection is taken again.

    Before the fix this left an empty list first in the pool, and the 257th connection given
    back raised IndexError (so did every release after it).
    """
    c.post(f"/episodes/{_start(c, task)}/finish", json={})
    return _start(c, task)


def test_at_capacity_with_many_live_episodes(start_server: Any, corpus: Corpus) -> None:
    s = start_server(max_episodes=300)
    first, *others = corpus.tasks
    with s.client() as c:
        held = _empty_first_pool_entry(c, first)
        eids = [_start(c, others[i % len(others)]) for i in range(299)]
        full = _error(c.post("/episodes", json={"task_id": first.id}), 503, "at_capacity")
        assert full["live"] == 300 and full["max_episodes"] == 300 and "maximum of 300" in full["detail"]
        scores = [c.post(f"/episodes/{e}/finish", json={}).json()["score"] for e in eids]  # the 257th was a 500
        assert scores == [0.0] * 299
        assert c.post("/episodes", json={"task_id": first.id}).status_code == 201
        assert c.post(f"/episodes/{held}/finish", json={}).json()["score"] == 0.0
        h = c.get("/health").json()
        assert (h["live_episodes"], h["finished"], h["errors"]) == (1, 301, 0)


def test_reaper_ends_every_idle_episode_under_load(start_server: Any, corpus: Corpus) -> None:
    s = start_server(reap_interval=0.1)
    registry = s.app.state.registry
    first, *others = corpus.tasks
    stop = threading.Event()
    busy_errors: list[str] = []
    with s.client() as c:
        held = _empty_first_pool_entry(c, first)

        def keep_busy() -> None:  # one agent keeps working the whole time
            with s.client() as b:
                while not stop.is_set():
                    r = b.post(f"/episodes/{held}/call", json={"name": _reader(first), "arguments": {}})
                    if r.status_code != 200:
                        busy_errors.append(r.text)
                    time.sleep(0.05)

        def open_many(k: int) -> None:  # agents that start an episode and go away
            with s.client() as o:
                for i in range(75):
                    _start(o, others[(k + i) % len(others)])

        threads = [threading.Thread(target=keep_busy)] + [threading.Thread(target=open_many, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads[1:]:
            t.join()
        registry.idle_timeout = 1.0  # all 300 go idle at once (opening them takes longer than that)
        deadline = time.monotonic() + 15
        while c.get("/health").json()["live_episodes"] > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        stop.set()
        threads[0].join()
        h = c.get("/health").json()
        assert (h["live_episodes"], h["started"], h["reaped"], h["errors"]) == (1, 302, 300, 0), h
        assert busy_errors == []
        # the pool still works: new episodes finish with a reward (every release raised before)
        for task in others[:5]:
            r = c.post(f"/episodes/{_start(c, task)}/finish", json={})
            assert r.status_code == 200 and r.json()["score"] == 0.0, r.text[:300]
        assert c.post(f"/episodes/{held}/finish", json={}).status_code == 200


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/episodes/{eid}/call", json.dumps({"name": "{reader}", "arguments": "[" * 5000})),
        ("/episodes/{eid}/call", json.dumps({"name": "{reader}", "arguments": DEEP})),
        ("/episodes/{eid}/call", '{"name": "{reader}", "arguments": {"a": ' + DEEP + "}}"),
        ("/episodes/{eid}/call", '{"name": "{reader}", "arguments": ' + "[" * 5000 + "}"),
        ("/episodes", '{"task_id": ' + DEEP + "}"),
        ("/episodes", '{"task_id": "{task}", "seed": ' + "[" * 5000 + "}"),
        ("/episodes/{eid}/finish", '{"answer": ' + DEEP + "}"),
        ("/episodes/{eid}/finish", '{"answer": ' + "{" * 5000 + "}"),
    ],
)
def test_deeply_nested_json_is_a_422_and_the_server_stays_healthy(server: Any, corpus: Corpus, path: str, body: str) -> None:
    task = next(t for t in corpus.tasks if t.kind == "action")
    with server.client() as c:
        eid = _start(c, task)
        url = path.replace("{eid}", eid)
        data = body.replace("{reader}", task.oracle[0].tool).replace("{task}", task.id)
        _error(c.post(url, content=data, headers={"content-type": "application/json"}), 422, "invalid_request")
        # the same connection goes on, and the episode is intact: its oracle still scores 1.0
        results: list[Any] = []
        for call in task.oracle:
            args = {**call.args, **{p: resolve(ref, results) for p, ref in call.refs.items()}}
            res = c.post(f"/episodes/{eid}/call", json={"name": call.tool, "arguments": json.dumps(args)}).json()
            assert res["outcome"] == "success", res
            results.append(json.loads(res["content"]))
        assert c.post(f"/episodes/{eid}/finish", json={}).json()["score"] == 1.0
        assert c.get("/health").json()["status"] == "ok"


def test_huge_ids_are_not_echoed(server: Any, corpus: Corpus) -> None:
    huge = "x" * 100_000
    long_id = "x" * 20_000  # (httpx refuses URLs over 64 KB)
    task = corpus.tasks[0]
    with server.client() as c:
        eid = _start(c, task)
        answers = [
            (c.get(f"/episodes/{long_id}"), 404, "unknown_episode"),
            (c.post(f"/episodes/{long_id}/call", json={"name": "a"}), 404, "unknown_episode"),
            (c.post(f"/episodes/{long_id}/finish", json={}), 404, "unknown_episode"),
            (c.delete(f"/episodes/{long_id}"), 404, "unknown_episode"),
            (c.get(f"/tasks/{long_id}"), 404, "unknown_task"),
            (c.post("/episodes", json={"task_id": huge}), 422, "invalid_request"),
            (c.post(f"/episodes/{eid}/call", json={"name": huge, "arguments": {}}), 422, "invalid_request"),
            (c.post(f"/episodes/{eid}/call", json={"name": "a", huge: 1}), 422, "invalid_request"),
        ]
        for r, status, code in answers:
            _error(r, status, code)
            assert len(r.content) < 2000 and "x" * 100 not in r.text, r.text[:300]
        many = _error(c.post("/episodes", json={f"field{i}": i for i in range(1000)}), 422, "invalid_request")
        assert len(many["errors"]) == 10
        c.post(f"/episodes/{eid}/finish", json={})


def _attack_answers(response: Any) -> list[Any]:
    """Every value of a finish response a later agent could pass as its answer."""
    out: list[Any] = []

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            out.extend(v.keys())
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            out.append(v)
            for x in v:
                walk(x)
        elif v is not None:
            out.append(v)
            if isinstance(v, str):
                out.extend(w.strip("'\".,:") for w in v.split())

    walk(response)
    return out


def _replay_with_answer(c: Any, task: Task, answer: Any) -> float:
    """Do the task's writes right (the oracle), then answer ``answer``: the answer decides the score."""
    eid = _start(c, task)
    results: list[Any] = []
    for call in task.oracle:
        args = {**call.args, **{p: resolve(ref, results) for p, ref in call.refs.items()}}
        results.append(json.loads(c.post(f"/episodes/{eid}/call", json={"name": call.tool, "arguments": args}).json()["content"]))
    return float(c.post(f"/episodes/{eid}/finish", json={"answer": answer}).json()["score"])


def _leaks(c: Any, task: Task) -> bool:
    """Whether a do-nothing episode's finish response lets a new episode score 1.0 on the answer."""
    eid = _start(c, task)
    response = c.post(f"/episodes/{eid}/finish", json={"answer": "no idea"}).json()
    candidates = {json.dumps(a, sort_keys=True): a for a in _attack_answers(response)}
    return any(_replay_with_answer(c, task, a) == 1.0 for a in candidates.values())


def test_finish_gives_no_ground_truth_by_default(start_server: Any, corpus: Corpus) -> None:
    answered = [t for t in corpus.tasks if distinctive(t.expected_answer)]
    assert answered, "the test corpus needs tasks with an answer"
    s = start_server()
    with s.client() as c:
        for task in corpus.tasks:
            eid = _start(c, task)
            r = c.post(f"/episodes/{eid}/finish", json={"answer": "no idea"})
            body = r.json()
            assert body["score"] == 0.0 and body["breakdown"]
            for entry in body["breakdown"]:
                assert set(entry) == {"kind", "table", "count"} and entry["count"] >= 1, entry
            if distinctive(task.expected_answer):
                assert not says(body, task.expected_answer)
        for task in answered:
            assert not _leaks(c, task), task.id
    # the operator's opt-in: the full detail, which is exactly what let answers leak before
    with start_server(reveal_expected=True).client() as c:
        assert all(_leaks(c, task) for task in answered)


def test_finish_twice_returns_the_same_reward(server: Any, corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.kind == "action")
    with server.client() as c:
        eid = _start(c, task)
        first = c.post(f"/episodes/{eid}/finish", json={"answer": "a"})
        for body in ({}, {"answer": "b"}, None):
            again = c.post(f"/episodes/{eid}/finish", json=body) if body is not None else c.post(f"/episodes/{eid}/finish")
            assert again.status_code == 200 and again.json() == first.json()
        _error(c.post(f"/episodes/{eid}/call", json={"name": _reader(task)}), 409, "episode_finished")


def test_token_auth(start_server: Any, corpus: Corpus) -> None:
    task = corpus.tasks[0]
    s = start_server(token="trainer-secret", user_token="simulator-secret")
    with s.client() as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic trainer-secret"}):
            for r in (c.get("/health", headers=headers), c.post("/episodes", json={"task_id": task.id}, headers=headers)):
                _error(r, 401, "unauthorized")
                assert r.headers["www-authenticate"] == "Bearer"
        ok = {"Authorization": "Bearer trainer-secret"}
        assert c.get("/health", headers=ok).json()["live_episodes"] == 0  # nothing started by the refused requests
        eid = c.post("/episodes", json={"task_id": task.id}, headers=ok).json()["episode_id"]
        assert c.post(f"/episodes/{eid}/finish", headers=ok).status_code == 200
        # the user profile: the simulator's token only
        _error(c.get(f"/tasks/{task.id}/user", headers=ok), 401, "unauthorized")
        sim = {"Authorization": "Bearer simulator-secret"}
        assert c.get(f"/tasks/{task.id}/user", headers=sim).json() == task.user.model_dump(mode="json")
        assert c.get("/health", headers=sim).status_code == 200
        assert "user" not in c.get(f"/tasks/{task.id}", headers=sim).json()


def test_user_token_alone_guards_only_the_profile(start_server: Any, corpus: Corpus) -> None:
    task = corpus.tasks[0]
    s = start_server(user_token="simulator-secret")
    with s.client() as c:
        assert c.get("/health").status_code == 200
        _error(c.get(f"/tasks/{task.id}/user"), 401, "unauthorized")
        r = c.get(f"/tasks/{task.id}/user", headers={"Authorization": "Bearer simulator-secret"})
        assert r.json()["name"] == task.user.name


def test_exposure_policy() -> None:
    from envsynth.serve.net import check_exposure, is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.5", "example.org", ""]))
    assert check_exposure("127.0.0.1", None, False, what="s") is None
    assert check_exposure("0.0.0.0", "tok", False, what="s") is None
    with pytest.raises(ValueError, match="needs a token"):
        check_exposure("0.0.0.0", None, False, what="s")
    warning = check_exposure("0.0.0.0", None, True, what="s")
    assert warning is not None and "without authentication" in warning
    with pytest.raises(ValueError, match="empty"):
        check_exposure("127.0.0.1", " ", False, what="s")


def test_bearer_auth_closes_an_unauthorized_websocket() -> None:
    import asyncio

    from envsynth.serve.net import BearerAuth

    reached: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["type"])

    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {}

    auth = BearerAuth(app, ["tok"])
    asyncio.run(auth({"type": "websocket", "headers": []}, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}] and reached == []
    asyncio.run(auth({"type": "websocket", "headers": [(b"authorization", b"Bearer tok")]}, receive, send))
    asyncio.run(auth({"type": "lifespan"}, receive, send))
    assert reached == ["websocket", "lifespan"]
