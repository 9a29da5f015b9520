"""HTTP server throughput: tool calls per second over loopback with many concurrent episodes.

Run from the repository root (needs the ``serve`` extra: fastapi, uvicorn, httpx):

    .venv/bin/envsynth build /tmp/http_corpus -d harbor_market -T 5 -S 2      # once
    .venv/bin/python benchmarks/bench_http.py /tmp/http_corpus                 # both clients x both call modes (~1.5 min)
    .venv/bin/python benchmarks/bench_http.py /tmp/http_corpus --client raw --mode inline --connections 8 --json out.json

What is measured. The server (``envsynth.serve.http.serve``, one uvicorn worker) runs in a
subprocess on 127.0.0.1 and a free port (``--mode`` its call mode, ``--stack plain`` for
asyncio + h11 instead of uvloop + httptools). The client is one process with either one
``httpx.AsyncClient`` or a minimal asyncio HTTP/1.1 client (``--client raw``), each with a
bounded pool of ``--connections`` keep-alive connections (handed out first come, first
served). It opens ``--episodes`` episodes (over the corpus's tasks, round-robin), then each
episode runs ``--calls`` calls of a cheap read tool (the task's first visible ``search_*``
tool with ``limit: 1``, or ``get_*`` with an id from the oracle) back to back, all
episodes at once; then every episode is finished. Calls per second = all calls / wall
time of the call phase; latency percentiles are per call, client side (waiting for a free
connection, request, body read); server and client CPU per call come from ``/proc`` and
``time.process_time``. Warm-up: one untimed round of 5 calls per episode. Bounded: at most
``--episodes x --calls`` calls and ``--time-limit`` seconds per run (stopped early and
reported as such). Client and server share the machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SERVER = """
import sys
from envsynth.serve.http import serve
serve(sys.argv[1], "127.0.0.1", int(sys.argv[2]), call_mode=sys.argv[3], max_episodes=4096, log_level="error",
      loop=sys.argv[4], http=sys.argv[5])
"""


class RawPool:
    """A minimal HTTP/1.1 keep-alive client (asyncio streams), to measure the server rather than the client.

    ``connections`` persistent connections shared through a queue; JSON bodies only.
    """

    def __init__(self, url: str, connections: int) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.host, self.port, self.size = host, int(port), connections
        self.free: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.waiters: collections.deque[asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]] = collections.deque()

    async def _acquire(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.free:
            return self.free.pop()
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        return await fut

    def _release(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        # hand the connection to the longest waiter (FIFO): a plain queue lets the releasing
        # task take it straight back and starves the others, which inflates the tail latency
        if self.waiters:
            self.waiters.popleft().set_result(conn)
        else:
            self.free.append(conn)

    async def __aenter__(self) -> RawPool:
        for _ in range(self.size):
            r, w = await asyncio.open_connection(self.host, self.port)
            sock = w.get_extra_info("socket")
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.free.append((r, w))
        return self

    async def __aexit__(self, *_: object) -> None:
        for _, w in self.free:
            w.close()

    async def post(self, path: str, body: Any) -> tuple[int, bytes]:
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        r, w = await self._acquire()
        try:
            w.write(head.encode() + data)
            status_line = await r.readuntil(b"\r\n")
            length = 0
            while (line := await r.readuntil(b"\r\n")) != b"\r\n":
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
            payload = await r.readexactly(length)
        finally:
            self._release((r, w))
        return int(status_line.split()[1]), payload


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(corpus: str, mode: str, stack: str = "auto") -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = free_port()
    loop, http = ("asyncio", "h11") if stack == "plain" else ("auto", "auto")
    proc = subprocess.Popen([sys.executable, "-c", SERVER, corpus, str(port), mode, loop, http])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the server did not start")


def cheap_read(tools: list[dict[str, Any]], oracle_args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A read tool and arguments that make it cheap."""
    by_name = {t["function"]["name"]: t["function"] for t in tools}
    for name, fn in by_name.items():
        if name.startswith("search_"):
            props = fn["parameters"].get("properties", {})
            return name, ({"limit": 1} if "limit" in props else {})
    for name, fn in by_name.items():
        if name.startswith("get_"):
            req = fn["parameters"].get("required", [])
            if all(r in oracle_args for r in req):
                return name, {r: oracle_args[r] for r in req}
    raise SystemExit("no cheap read tool among the task's tools")


async def run_mode(
    corpus: str, mode: str, episodes: int, calls: int, connections: int, time_limit: float, client_kind: str, stack: str = "auto"
) -> dict[str, Any]:
    import httpx

    from envsynth import load_corpus

    tasks = load_corpus(corpus).tasks
    proc, url = start_server(corpus, mode, stack)
    try:
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
            eps: list[tuple[str, str, dict[str, Any]]] = []
            for i in range(episodes):
                t = tasks[i % len(tasks)]
                r = await client.post("/episodes", json={"task_id": t.id, "seed": i})
                r.raise_for_status()
                body = r.json()
                oracle_args = {k: v for c in t.oracle for k, v in c.args.items()}
                name, args = cheap_read(body["tools"], oracle_args)
                eps.append((body["episode_id"], name, args))

            if client_kind == "raw":
                raw = await RawPool(url, connections).__aenter__()

                async def post(path: str, body: Any) -> tuple[int, bytes]:
                    return await raw.post(path, body)
            else:

                async def post(path: str, body: Any) -> tuple[int, bytes]:
                    r = await client.post(path, json=body)
                    return r.status_code, r.content

            async def one(eid: str, name: str, args: dict[str, Any]) -> float:
                t0 = time.perf_counter()
                status, payload = await post(f"/episodes/{eid}/call", {"name": name, "arguments": args})
                dt = time.perf_counter() - t0
                if status != 200 or json.loads(payload)["outcome"] != "success":
                    raise RuntimeError(f"call failed: {status} {payload[:200]!r}")
                return dt

            await asyncio.gather(*(one(*e) for e in eps for _ in range(5)))  # warm-up

            stop_at = time.monotonic() + time_limit
            latencies: list[float] = []
            stopped_early = False

            async def worker(eid: str, name: str, args: dict[str, Any]) -> None:
                nonlocal stopped_early
                for _ in range(calls):
                    if time.monotonic() > stop_at:
                        stopped_early = True
                        return
                    latencies.append(await one(eid, name, args))

            cpu0 = cpu_seconds(proc.pid)
            ccpu0 = time.process_time()
            t0 = time.perf_counter()
            await asyncio.gather(*(worker(*e) for e in eps))
            wall = time.perf_counter() - t0
            cpu1 = cpu_seconds(proc.pid)
            ccpu = time.process_time() - ccpu0
            if client_kind == "raw":
                await raw.__aexit__()
            for eid, _, _ in eps:
                (await client.post(f"/episodes/{eid}/finish", json={})).raise_for_status()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    q = statistics.quantiles(latencies, n=100)
    return {
        "mode": mode,
        "client": client_kind,
        "server_stack": stack,
        "episodes": episodes,
        "connections": connections,
        "calls": len(latencies),
        "wall_s": round(wall, 3),
        "calls_per_s": round(len(latencies) / wall, 1),
        "latency_ms": {
            "p50": round(q[49] * 1e3, 2),
            "p90": round(q[89] * 1e3, 2),
            "p99": round(q[98] * 1e3, 2),
            "max": round(max(latencies) * 1e3, 2),
            "top5": [round(x * 1e3, 1) for x in sorted(latencies)[-5:]],
        },
        "server_cpu_us_per_call": None if cpu0 is None or cpu1 is None else round((cpu1 - cpu0) / len(latencies) * 1e6, 1),
        "client_cpu_us_per_call": round(ccpu / len(latencies) * 1e6, 1),
        "stopped_early": stopped_early,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("corpus", help="a corpus folder (envsynth build OUT -T 5)")
    p.add_argument("--mode", choices=["inline", "threadpool", "both"], default="both")
    p.add_argument("--episodes", type=int, default=64)
    p.add_argument("--calls", type=int, default=200, help="calls per episode")
    p.add_argument("--connections", type=int, default=64)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per mode, at most")
    p.add_argument("--client", choices=["httpx", "raw", "both"], default="both", help="httpx.AsyncClient or a minimal asyncio client")
    p.add_argument(
        "--stack", choices=["auto", "plain"], default="auto", help="uvicorn's auto (uvloop + httptools when installed) or asyncio + h11"
    )
    p.add_argument("--json", type=Path, help="write the results here")
    a = p.parse_args()
    modes = ["inline", "threadpool"] if a.mode == "both" else [a.mode]
    clients = ["httpx", "raw"] if a.client == "both" else [a.client]
    results = [
        asyncio.run(run_mode(a.corpus, m, a.episodes, a.calls, a.connections, a.time_limit, c, a.stack)) for c in clients for m in modes
    ]
    env = {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}
    for r in results:
        lat = r["latency_ms"]
        print(
            f"{r['client']:>5} client, {r['server_stack']} stack, {r['mode']:>10}: {r['calls']} calls, {r['episodes']} episodes, {r['connections']} connections: "
            f"{r['calls_per_s']:,.0f} calls/s; latency p50 {lat['p50']} ms, p90 {lat['p90']} ms, "
            f"p99 {lat['p99']} ms, max {lat['max']} ms; server CPU {r['server_cpu_us_per_call']} us/call, client CPU {r['client_cpu_us_per_call']} us/call"
            f"{' (stopped at the time limit)' if r['stopped_early'] else ''}"
        )
    if a.json:
        a.json.write_text(json.dumps({"env": env, "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
