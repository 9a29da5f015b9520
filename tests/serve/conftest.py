"""A small corpus built once, and real uvicorn servers on loopback in background threads."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from envsynth import catalog
from envsynth.corpus import Corpus, build_corpus, load_corpus

# FastAPI, uvicorn and httpx (the ``serve`` extra) are imported inside the fixtures, so that
# the tests that need none of them still run without the extra.


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("serve") / "corpus"
    build_corpus(out, blueprints=[catalog.load("harbor_market")], tasks_per_app=4, states=2, distractors=1, seed=0)
    return out


@pytest.fixture(scope="session")
def corpus(corpus_path: Path) -> Corpus:
    """The test's own view of the corpus (oracles come from here, never from the server)."""
    return load_corpus(corpus_path)


class Server:
    """A uvicorn server on 127.0.0.1 (a free port) in a daemon thread."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

    def client(self) -> Any:
        import httpx

        return httpx.Client(base_url=self.url, timeout=10)


@pytest.fixture
def start_server(corpus_path: Path) -> Iterator[Callable[..., Server]]:
    """Start a server over the test corpus with ``create_app`` keyword arguments; stopped at teardown."""
    from envsynth.serve.http import create_app

    running: list[Server] = []

    def start(**kwargs: Any) -> Server:
        s = Server(create_app(corpus_path, **kwargs)).__enter__()
        running.append(s)
        return s

    yield start
    for s in running:
        s.__exit__()


@pytest.fixture(scope="module", params=["inline", "threadpool"])
def server(request: pytest.FixtureRequest, corpus_path: Path) -> Iterator[Server]:
    """A default server per call mode, shared by a module's tests."""
    from envsynth.serve.http import create_app

    with Server(create_app(corpus_path, call_mode=request.param)) as s:
        yield s
