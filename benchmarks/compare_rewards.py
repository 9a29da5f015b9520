"""Rewards, breakdowns and effects of every task of a corpus under seven agents, as JSON lines: run it with
two checkouts' ``src`` on the path and compare the files (they must be identical when a change keeps
evaluation results).

Per task, each episode started cold (``state_cache=0``) unless said otherwise:

- ``oracle``: the oracle's calls and answer;
- ``pooled``: the same on a pooled connection (``state_cache=1024``, the task's second start);
- ``nothing``: no call, no answer;
- ``partial``: all but the oracle's last call, its answer if it still has one;
- ``repeat``: the oracle's calls, then its last call again;
- ``rejected``: each oracle call first made with a wrong id (rejected, a write undone), then right;
- ``wrong``: the oracle's calls and a wrong answer.

Each line holds the reward (score and breakdown), the final effects and the effects after the
first call (mid-episode).

Usage (from the repository root):
    PYTHONPATH=BEFORE/src .venv/bin/python benchmarks/compare_rewards.py CORPUS before.jsonl
    PYTHONPATH=src .venv/bin/python benchmarks/compare_rewards.py CORPUS after.jsonl
    cmp before.jsonl after.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def _args(call: Any, results: list[Any]) -> dict[str, Any]:
    args = dict(call.args)
    for p, ref in call.refs.items():
        args[p] = results[ref.step][ref.field] if results[ref.step] is not None else None
    return args


def _wrong(args: dict[str, Any]) -> dict[str, Any]:
    """The arguments with every id-like string value replaced by one that names no row."""
    return {k: (v.rsplit("_", 1)[0] + "_000000" if isinstance(v, str) and k.endswith("_id") else v) for k, v in args.items()}


def play(ep: Any, task: Any, variant: str) -> tuple[Any, Any]:
    """Run ``variant`` on ``ep``; the answer it gives and the effects after its first call."""
    calls = list(task.oracle)
    if variant == "nothing":
        return None, None
    if variant == "partial":
        calls = calls[:-1]
    elif variant == "repeat":
        calls = calls + calls[-1:]
    results: list[Any] = []
    mid = None
    for c in calls:
        args = _args(c, results)
        if variant == "rejected":
            ep.call(c.tool, _wrong(args))
        results.append(ep.call(c.tool, args).data)
        if mid is None:
            mid = ep.effects().to_dict()
    if variant == "wrong":
        return "certainly not the answer", mid
    if task.answer_step is None or task.answer_step >= len(results) or results[task.answer_step] is None:
        return None, mid
    from envsynth.runtime.answerpath import answer_in

    return answer_in(results[task.answer_step], task.answer_field), mid


VARIANTS = ("oracle", "pooled", "nothing", "partial", "repeat", "rejected", "wrong")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    from envsynth.corpus import load_corpus

    cold, pooled = load_corpus(args.corpus, state_cache=0), load_corpus(args.corpus, state_cache=1024)
    with args.out.open("w") as f:
        for task in cold.tasks:
            for variant in VARIANTS:
                if variant == "pooled":
                    pooled.start(task, seed=1).finish()  # its connection goes back to the pool
                    ep = pooled.start(task, seed=1)
                else:
                    ep = cold.start(task, seed=1)
                answer, mid = play(ep, task, variant)
                reward = ep.finish(answer)
                line = {"task": task.id, "variant": variant, "reward": reward.to_dict(), "effects": ep.effects().to_dict(), "mid": mid}
                f.write(json.dumps(line, sort_keys=True, default=repr) + "\n")


if __name__ == "__main__":
    main()
