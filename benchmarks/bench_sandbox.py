"""Round trips of warm sandboxed workers: ``.venv/bin/python benchmarks/bench_sandbox.py [CORPUS] [-n N]``.

Without CORPUS a one-app corpus (harbor_market, T=2) is built in a temporary folder.
Prints the mode, the cost of a fresh worker, and the median/p90 wall time of a trivial
code block and of a code block making one tool call, on one warm worker.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def _stats(xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[int(0.9 * (len(xs) - 1))]
    return f"median {statistics.median(xs) * 1e6:8.0f} us   p90 {p90 * 1e6:8.0f} us   (n={len(xs)})"


def main(argv: list[str] | None = None) -> None:
    from envsynth import catalog
    from envsynth.corpus import build_corpus, load_corpus
    from envsynth.sandbox import CodeSandbox, Limits

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", nargs="?")
    parser.add_argument("-n", type=int, default=2000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.corpus
        if path is None:
            path = Path(tmp) / "corpus"
            build_corpus(path, blueprints=[catalog.load("harbor_market")], tasks_per_app=2, states=1)
        corpus = load_corpus(path)
        task = corpus.tasks[0]
        with CodeSandbox(workers=1, limits=Limits()) as sb:
            print(f"mode: {sb.mode} ({sb.pool.mode.reason})")
            spawn = []
            for _ in range(10):
                t0 = time.perf_counter()
                w = sb.pool._spawn()
                w.ready()
                spawn.append(time.perf_counter() - t0)
                w.kill()
            print(f"fresh worker (spawn to ready):      {_stats(spawn)}")
            ep = sb.episode(corpus.start(task))
            ep.run("pass")  # take the worker, send the tool stubs
            trivial = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                obs = ep.run("x = 1 + 1")
                trivial.append(time.perf_counter() - t0)
                assert obs.error is None
            print(f"trivial code block (warm worker):   {_stats(trivial)}")
            reader = next(t for t in task.visible_tools if t.startswith("get_"))
            schema = next(s for s in ep.episode.tools if s["function"]["name"] == reader)
            param = next(iter(schema["function"]["parameters"]["properties"]))
            value = next((c.args[param] for c in task.oracle if param in c.args), "x")
            code = f"try:\n    r = {reader}({param}={value!r})\nexcept ToolError:\n    r = None"
            one_call = []
            for _ in range(args.n):
                t0 = time.perf_counter()
                obs = ep.run(code)
                one_call.append(time.perf_counter() - t0)
                assert obs.error is None, obs.text
            print(f"code block with one tool call:      {_stats(one_call)}   [{reader}]")
            t0 = time.perf_counter()
            direct = []
            tep = ep.episode
            for _ in range(args.n):
                t0 = time.perf_counter()
                tep.call(reader, {param: value})
                direct.append(time.perf_counter() - t0)
            print(f"the same tool call, in-process:     {_stats(direct)}")
            ep.close()


if __name__ == "__main__":
    main()
