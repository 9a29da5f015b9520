"""Steps/s through the OpenEnv and SkyRL-gym environments (in process) against envsynth's trainer view, and the memory of N sessions.

    .venv/bin/envsynth build /tmp/openenv_corpus -d harbor_market -T 5 -S 2
    .venv/bin/python benchmarks/bench_openenv.py /tmp/openenv_corpus --steps 20000 --sessions 1000 --server

Steps: one episode runs ``--steps`` calls of a cheap read tool (the first ``search_*`` tool
that finds a row, with ``limit: 1``, on the first task that has one) back to back, through ``TaskEpisode.step`` (the trainer view),
``EnvsynthEnvironment.step`` (OpenEnv) and ``EnvsynthTextEnv.step`` (SkyRL-gym: the call as
``<tool_call>`` text). Episodes: whole episodes (reset, the oracle's calls, complete_task)
through the trainer view and the OpenEnv environment. Memory: ``--sessions`` OpenEnv
environments in this process, each reset on a task (round robin) and one call made, with
the process's resident set size (``/proc/self/status``) before, with all of them live, and
after closing them. ``--server`` also starts the OpenEnv server (``uvicorn --factory
...:app_from_env`` in a subprocess) and measures one WebSocket session's sequential steps/s
and the server's RSS with ``--sessions`` WebSocket sessions open at once (each reset on the first task, with its own seed, and one
call made).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from envsynth.corpus import Corpus, load_corpus
from envsynth.integrations.openenv_env import CORPUS_VARIABLE, EnvsynthAction, EnvsynthEnvClient, EnvsynthEnvironment
from envsynth.integrations.skyrl_env import EnvsynthTextEnv
from envsynth.integrations.source import CorpusSource
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.trainer import Action


def rss_mb(pid: int | str = "self") -> float:
    """A process's resident set size in MB (this one's by default)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status")


def cheap_read(tools: list[dict[str, Any]], probe: Callable[[str, dict[str, Any]], str] | None = None) -> tuple[str, dict[str, Any]]:
    """A ``search_*`` tool among ``tools`` and arguments that make it cheap (``limit: 1``).

    With ``probe`` (``name, arguments -> result text``), the first search that finds a row;
    without, the first search.
    """
    searches = []
    for t in tools:
        fn = t["function"]
        if fn["name"].startswith("search_"):
            searches.append((fn["name"], {"limit": 1} if "limit" in fn["parameters"].get("properties", {}) else {}))
    if not searches:
        raise SystemExit("no search tool among the task's tools")
    for name, args in searches if probe is not None else []:
        if json.loads(probe(name, args)).get("total", 0) > 0:
            return name, args
    return searches[0]


def rate(n: int, run: Callable[[int], None], rounds: int = 3) -> float:
    """The best of ``rounds`` rates per second of ``run(n)`` (the machine is shared: the best is the least disturbed)."""
    best = 0.0
    for _ in range(rounds):
        t0 = time.perf_counter()
        run(n)
        best = max(best, n / (time.perf_counter() - t0))
    return best


def oracle_args(task: Task, results: list[Any], i: int) -> dict[str, Any]:
    """The arguments of the oracle's call ``i``, refs filled in from ``results``."""
    call = task.oracle[i]
    return {**call.args, **{k: resolve(r, results) for k, r in call.refs.items()}}


def probe_read(source: CorpusSource, tasks: list[Task]) -> tuple[Task, tuple[str, dict[str, Any]]]:
    """The first task with a search that finds a row in its state, and that read (:func:`cheap_read`), probed on throwaway episodes.

    A task's state holds only the rows its request needs (and distractors), so many searches
    find nothing; without any that does, the first task and its first search.
    """
    for task in tasks:
        ep = source.start(task)
        try:
            read = cheap_read(ep.tools, lambda n, a, ep=ep: ep.step(Action(n, a)).observation)
            if json.loads(ep.step(Action(*read)).observation).get("total", 0) > 0:
                return task, read
        finally:
            ep.finish(None)
    ep = source.start(tasks[0])
    ep.finish(None)
    return tasks[0], cheap_read(ep.tools)


def step_rates(source: CorpusSource, task: Task, read: tuple[str, dict[str, Any]], steps: int) -> dict[str, float]:
    """Calls of the cheap ``read`` per second through each view, on one episode each."""
    name, args = read
    ep = source.start(task)
    action = Action(name, args)

    def direct(n: int) -> None:
        for _ in range(n):
            ep.step(action)

    env = EnvsynthEnvironment(source)
    env.reset(task_id=task.id)
    oe_action = EnvsynthAction(name=name, arguments=args)

    def openenv(n: int) -> None:
        for _ in range(n):
            env.step(oe_action)

    text_env = EnvsynthTextEnv(extras={"corpus": source, "task_id": task.id, "max_turns": 3 * steps + 1})
    text_env.init([])
    text = f"Let me look.\n<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"

    def skyrl(n: int) -> None:
        for _ in range(n):
            text_env.step(text)

    out = {"trainer view": rate(steps, direct), "OpenEnv Environment": rate(steps, openenv), "SkyRL-gym text env": rate(steps, skyrl)}
    ep.finish(None)
    env.close()
    text_env.close()
    return out


def episode_rates(source: CorpusSource, tasks: list[Task], episodes: int) -> dict[str, float]:
    """Whole oracle episodes (start, the oracle's calls, complete_task) per second through each view."""

    def direct(n: int) -> None:
        for k in range(n):
            task = tasks[k % len(tasks)]
            ep = source.start(task)
            results: list[Any] = []
            for i in range(len(task.oracle)):
                out = ep.step(Action(task.oracle[i].tool, oracle_args(task, results, i)))
                results.append(json.loads(out.observation))
            ep.step(Action("complete_task", {"answer": task.expected_answer}))

    env = EnvsynthEnvironment(source)

    def openenv(n: int) -> None:
        for k in range(n):
            task = tasks[k % len(tasks)]
            env.reset(task_id=task.id)
            results: list[Any] = []
            for i in range(len(task.oracle)):
                obs = env.step(EnvsynthAction(name=task.oracle[i].tool, arguments=oracle_args(task, results, i)))
                results.append(json.loads(obs.content))
            env.step(EnvsynthAction(name="complete_task", arguments={"answer": task.expected_answer}))

    return {"trainer view": rate(episodes, direct), "OpenEnv Environment": rate(episodes, openenv)}


def session_memory(source: CorpusSource, sessions: int) -> dict[str, float]:
    """RSS (MB) before, with ``sessions`` live OpenEnv environments (one call made in each), and after closing them."""
    gc.collect()
    before = rss_mb()
    envs = []
    for i in range(sessions):
        env = EnvsynthEnvironment(source)
        obs = env.reset(seed=i)
        name, args = cheap_read(obs.tools)
        env.step(EnvsynthAction(name=name, arguments=args))
        envs.append(env)
    gc.collect()
    live = rss_mb()
    for env in envs:
        env.close()
    envs.clear()
    gc.collect()
    return {"before": before, "live": live, "after": rss_mb()}


def free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(corpus: str, sessions: int) -> tuple[subprocess.Popen[bytes], str]:
    """``uvicorn --factory ...:app_from_env`` over ``corpus`` in a subprocess; its process and URL once it answers."""
    import httpx

    port = free_port()
    env = {**os.environ, CORPUS_VARIABLE: corpus, "ENVSYNTH_MAX_SESSIONS": str(sessions + 8)}
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "envsynth.integrations.openenv_env:app_from_env", "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "error"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the OpenEnv server did not start")


async def server_figures(url: str, pid: int, task: Task, read: tuple[str, dict[str, Any]], steps: int, sessions: int) -> dict[str, float]:
    """Sequential steps/s of one WebSocket session (``read`` on ``task``), then the server's RSS with ``sessions`` sessions open at once."""
    action = EnvsynthAction(name=read[0], arguments=read[1])
    async with EnvsynthEnvClient(base_url=url) as env:
        await env.reset(task_id=task.id)
        t0 = time.perf_counter()
        for _ in range(steps):
            await env.step(action)
        ws_rate = steps / (time.perf_counter() - t0)
    before = rss_mb(pid)
    clients = [EnvsynthEnvClient(base_url=url, connect_timeout_s=60, message_timeout_s=120) for _ in range(sessions)]
    for i in range(0, sessions, 50):  # connect in batches: the server makes one thread per session
        await asyncio.gather(*(c.connect() for c in clients[i : i + 50]))
    await asyncio.gather(*(c.reset(task_id=task.id, seed=i) for i, c in enumerate(clients)))
    await asyncio.gather(*(c.step(action) for c in clients))
    live = rss_mb(pid)
    await asyncio.gather(*(c.close() for c in clients))
    return {"ws steps/s": ws_rate, "before": before, "live": live}


def report_server(corpus: str, task: Task, read: tuple[str, dict[str, Any]], steps: int, sessions: int) -> None:
    """Start the server, measure it (:func:`server_figures`), stop it and print the figures."""
    proc, url = start_server(corpus, sessions)
    try:
        fig = asyncio.run(server_figures(url, proc.pid, task, read, steps, sessions))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    per = (fig["live"] - fig["before"]) * 1024 / sessions
    print(f"server      one WebSocket session: {fig['ws steps/s']:,.0f} steps/s (sequential)")
    print(
        f"server      {sessions} WebSocket sessions: RSS {fig['before']:.0f} MB with one, {fig['live']:.0f} MB live ({per:.0f} KB/session)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", help="a corpus folder (envsynth build OUT ...)")
    p.add_argument("--steps", type=int, default=20000, help="cheap calls per view and round (best of 3 rounds)")
    p.add_argument("--episodes", type=int, default=500, help="whole oracle episodes per view and round (best of 3 rounds)")
    p.add_argument("--sessions", type=int, default=1000, help="live OpenEnv sessions for the memory figure")
    p.add_argument("--server", action="store_true", help="also measure a real server (uvicorn subprocess, WebSocket clients)")
    a = p.parse_args()
    corpus: Corpus = load_corpus(a.corpus)
    source = CorpusSource(corpus)
    tasks = list(corpus)
    print(f"corpus: {a.corpus} ({len(tasks)} tasks)")
    task, read = probe_read(source, tasks)
    print(f"cheap read: {read[0]} {json.dumps(read[1])} on {task.id}")
    for view, r in step_rates(source, task, read, a.steps).items():
        print(f"steps/s     {view:22s} {r:10,.0f}")
    for view, r in episode_rates(source, tasks, a.episodes).items():
        print(f"episodes/s  {view:22s} {r:10,.0f}")
    mem = session_memory(source, a.sessions)
    per = (mem["live"] - mem["before"]) * 1024 / a.sessions
    print(
        f"memory      {a.sessions} sessions: RSS {mem['before']:.0f} MB before, {mem['live']:.0f} MB live ({per:.0f} KB/session), {mem['after']:.0f} MB after closing"
    )
    if a.server:
        report_server(a.corpus, task, read, min(a.steps, 5000), a.sessions)


if __name__ == "__main__":
    main()
