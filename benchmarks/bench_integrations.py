"""Oracle episodes per second: through the verifiers environment, and through envsynth's own API.

Both sides play every task of a corpus with the same scripted policy (the task's oracle,
:class:`~envsynth.agents.oracle.OracleAgent`, one tool call per turn, then ``complete_task``):

- ``direct``: ``corpus.start(task)``, then a loop of ``policy.reply(messages)`` and
  ``TaskEpisode.step`` per call, the tool replies appended to the messages, as a trainer
  driving envsynth itself does;
- ``verifiers``: ``env.generate(rows)`` of :func:`envsynth.integrations.verifiers_env.load_environment`,
  its model an in-process stand-in for an OpenAI client that answers with the same policy
  (no HTTP, so the difference is the wrapper: verifiers' rollout loop, state, rubric).

The rounds alternate the two sides; each side's best round is its rate (the least disturbed
round on a shared machine) and the median round is shown next to it.

    .venv/bin/python benchmarks/bench_integrations.py                  # builds a small corpus in a temp dir
    .venv/bin/python benchmarks/bench_integrations.py --corpus out/ --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion, ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_tool_call import Function

import envsynth
from envsynth import catalog
from envsynth.agents.oracle import OracleAgent
from envsynth.corpus import Corpus, build_corpus
from envsynth.integrations.verifiers_env import load_environment
from envsynth.tasks import Action

APPS = ("tempo_music", "harbor_market")


def play_direct(corpus: Corpus, tasks: list[Any]) -> list[float]:
    """Each task's oracle played on its own episode through ``TaskEpisode.step``; the scores."""
    scores = []
    for task in tasks:
        ep, policy = corpus.start(task), OracleAgent(task)
        messages: list[dict[str, Any]] = [{"role": "user", "content": ep.reset().observation}]
        done = False
        while not done:
            msg = policy.reply(messages)
            messages.append(msg)
            for call in msg["tool_calls"]:
                out = ep.step(Action(call["function"]["name"], call["function"]["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": out.observation})
                done = out.done
        scores.append(ep.state().reward.score)
    return scores


class _Completions:
    """``client.chat.completions`` of the stand-in client: the oracle's next message as a ChatCompletion."""

    def __init__(self, by_instruction: dict[str, Any]) -> None:
        self._tasks = by_instruction
        self._made: dict[str, ChatCompletion] = {}  # a reply's response object, made once (it is not the wrapper's cost)

    async def create(self, *, model: str, messages: list[dict[str, Any]], **_: Any) -> ChatCompletion:
        user = next(m["content"] for m in messages if m["role"] == "user")
        msg = OracleAgent(self._tasks[user]).reply(messages)
        key = json.dumps(msg)
        if key not in self._made:
            self._made[key] = _chat_completion(model, msg)
        return self._made[key]


def _chat_completion(model: str, msg: dict[str, Any]) -> ChatCompletion:
    """``msg`` (tool calls only, as the oracle sends them) as a ChatCompletion, built without validation, as a client's parse would give it."""
    calls = [
        ChatCompletionMessageToolCall.model_construct(id=c["id"], type="function", function=Function.model_construct(**c["function"]))
        for c in msg["tool_calls"]
    ]
    message = ChatCompletionMessage.model_construct(role="assistant", content=None, tool_calls=calls)
    choice = Choice.model_construct(index=0, message=message, finish_reason="tool_calls", logprobs=None)
    return ChatCompletion.model_construct(id="c", object="chat.completion", created=0, model=model, choices=[choice], usage=None)


class OracleClient:
    """Enough of an ``AsyncOpenAI`` client for verifiers' chat rollouts, answering with each task's oracle."""

    def __init__(self, corpus: Corpus) -> None:
        self.chat = type("Chat", (), {"completions": _Completions({t.instruction: t for t in corpus.tasks})})()


def play_verifiers(env: Any, client: OracleClient, rows: list[dict[str, Any]]) -> list[float]:
    """Every row rolled out once by ``env.generate`` (sequentially, as the direct side); the rewards."""
    out = asyncio.run(env.generate(rows, client=client, model="oracle", max_concurrent=1, on_start=_quiet, on_progress=_quiet))
    return [o["reward"] for o in out["outputs"]]


def _quiet(*_: Any) -> None:
    """A progress callback that prints nothing (the default draws a progress bar)."""


def measure(corpus: Corpus, rounds: int, repeat: int) -> dict[str, Any]:
    """Both sides over ``repeat`` passes of every task, ``rounds`` alternating rounds; rates in episodes per second."""
    tasks = list(corpus.tasks) * repeat
    env = load_environment(corpus)
    rows = list(env.get_dataset()) * repeat
    client = OracleClient(corpus)
    sides = {"direct": lambda: play_direct(corpus, tasks), "verifiers": lambda: play_verifiers(env, client, rows)}
    for play in sides.values():  # warm up: pooled states, imports, the first rollouts
        assert set(play()) == {1.0}, "the oracle must score 1.0 on every task"
    rates: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, play in sides.items():
            t0 = time.perf_counter()
            scores = play()
            rates[name].append(len(scores) / (time.perf_counter() - t0))
    best = {name: max(r) for name, r in rates.items()}
    return {
        "tasks": len(corpus.tasks),
        "episodes_per_round": len(tasks),
        "rounds": rounds,
        "best": best,
        "median": {name: statistics.median(r) for name, r in rates.items()},
        "overhead": 1 - best["verifiers"] / best["direct"],
        "added_ms_per_episode": 1000 / best["verifiers"] - 1000 / best["direct"],
    }


def _corpus(path: str | None, workdir: Path) -> Corpus:
    """The corpus to play: ``path``, else two catalogue apps with 10 tasks each built into ``workdir``."""
    if path is not None:
        return envsynth.load_corpus(path)
    build_corpus(workdir / "corpus", blueprints=[catalog.load(a) for a in APPS], tasks_per_app=10, states=1, seed=0)
    return envsynth.load_corpus(workdir / "corpus")


def main() -> None:
    """Run the benchmark and print (or write) the result."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", help="a built corpus (default: 2 catalogue apps x 10 tasks, built in a temp dir)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=10, help="passes over the corpus's tasks per round")
    ap.add_argument("--json", help="also write the result to this file")
    args = ap.parse_args()
    logging.getLogger("verifiers").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        res = measure(_corpus(args.corpus, Path(tmp)), args.rounds, args.repeat)
    print(f"{res['tasks']} tasks, {res['episodes_per_round']} oracle episodes per round, {res['rounds']} rounds")
    print(f"{'side':<10} {'best ep/s':>10} {'median ep/s':>12}")
    for name in res["best"]:
        print(f"{name:<10} {res['best'][name]:>10.1f} {res['median'][name]:>12.1f}")
    print(f"verifiers wrapper overhead: {res['overhead']:.1%} of the direct rate, {res['added_ms_per_episode']:.2f} ms added per episode")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
