"""Steps/s through the OpenEnv and SkyRL-gym environments (in process) against envsynth's trainer view, and the memory of N sessions.

    .venv/bin/envsynth build /tmp/openenv_corpus -d harbor_market -T 5 -S 2
    .venv/bin/python benchmarks/bench_openenv.py /tmp/openenv_corpus --steps 20000 --sessions 1000

Steps: one episode runs ``--steps`` calls of a cheap read tool (the task's first ``search_*``
tool with ``limit: 1``) back to back, through ``TaskEpisode.step`` (the trainer view),
``EnvsynthEnvironment.step`` (OpenEnv) and ``EnvsynthTextEnv.step`` (SkyRL-gym: the call as
``<tool_call>`` text). Episodes: whole episodes (reset, the oracle's calls, complete_task)
through the trainer view and the OpenEnv environment. Memory: ``--sessions`` OpenEnv
environments in this process, each reset on a task (round robin) and one call made, with
the process's resident set size (``/proc/self/status``) before, with all of them live, and
after closing them.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

from envsynth.corpus import Corpus, load_corpus
from envsynth.integrations.openenv_env import EnvsynthAction, EnvsynthEnvironment
from envsynth.integrations.skyrl_env import EnvsynthTextEnv
from envsynth.integrations.source import CorpusSource
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.trainer import Action


def rss_mb() -> float:
    """This process's resident set size in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("no VmRSS in /proc/self/status")


def cheap_read(tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The first ``search_*`` tool among ``tools`` and arguments that make it cheap."""
    for t in tools:
        fn = t["function"]
        if fn["name"].startswith("search_"):
            return fn["name"], ({"limit": 1} if "limit" in fn["parameters"].get("properties", {}) else {})
    raise SystemExit("no search tool among the task's tools")


def rate(n: int, run: Callable[[int], None]) -> float:
    """``run(n)``'s rate per second."""
    t0 = time.perf_counter()
    run(n)
    return n / (time.perf_counter() - t0)


def oracle_args(task: Task, results: list[Any], i: int) -> dict[str, Any]:
    """The arguments of the oracle's call ``i``, refs filled in from ``results``."""
    call = task.oracle[i]
    return {**call.args, **{k: resolve(r, results) for k, r in call.refs.items()}}


def step_rates(source: CorpusSource, task: Task, steps: int) -> dict[str, float]:
    """Cheap calls per second through each view, on one episode each."""
    ep = source.start(task)
    name, args = cheap_read(ep.tools)
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

    text_env = EnvsynthTextEnv(extras={"corpus": source, "task_id": task.id, "max_turns": steps + 1})
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", help="a corpus folder (envsynth build OUT ...)")
    p.add_argument("--steps", type=int, default=20000, help="cheap calls per view")
    p.add_argument("--episodes", type=int, default=500, help="whole oracle episodes per view")
    p.add_argument("--sessions", type=int, default=1000, help="live OpenEnv sessions for the memory figure")
    a = p.parse_args()
    corpus: Corpus = load_corpus(a.corpus)
    source = CorpusSource(corpus)
    tasks = list(corpus)
    print(f"corpus: {a.corpus} ({len(tasks)} tasks)")
    for view, r in step_rates(source, tasks[0], a.steps).items():
        print(f"steps/s     {view:22s} {r:10,.0f}")
    for view, r in episode_rates(source, tasks, a.episodes).items():
        print(f"episodes/s  {view:22s} {r:10,.0f}")
    mem = session_memory(source, a.sessions)
    per = (mem["live"] - mem["before"]) * 1024 / a.sessions
    print(
        f"memory      {a.sessions} sessions: RSS {mem['before']:.0f} MB before, {mem['live']:.0f} MB live ({per:.0f} KB/session), {mem['after']:.0f} MB after closing"
    )


if __name__ == "__main__":
    main()
