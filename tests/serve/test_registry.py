"""The episode table behind the server, without HTTP (no extra needed): bounds, reaping, errors."""

from __future__ import annotations

import threading

import pytest

from envsynth.corpus import Corpus
from envsynth.serve.registry import EpisodeRegistry, ServeError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _reader(corpus: Corpus) -> tuple[str, str]:
    task = corpus.tasks[0]
    return task.id, next(n for n in task.visible_tools if n.startswith("search_"))


def test_bound_reap_and_errors(corpus: Corpus) -> None:
    clock = Clock()
    reg = EpisodeRegistry(corpus, max_episodes=2, idle_timeout=10, clock=clock)
    task_id, reader = _reader(corpus)
    a, b = reg.open(task_id), reg.open(task_id)
    with pytest.raises(ServeError) as full:
        reg.open(task_id)
    assert full.value.status == 503 and full.value.code == "at_capacity"
    with pytest.raises(ServeError) as unknown:
        reg.open("nope")
    assert unknown.value.status == 404

    clock.now = 9
    assert reg.call(a.id, reader, {}).outcome == "success"  # a is used, b is not
    clock.now = 12
    assert reg.reap() == 1 and len(reg) == 1
    with pytest.raises(ServeError) as expired:
        reg.call(b.id, reader, {})
    assert (expired.value.status, expired.value.code) == (404, "episode_expired")

    c = reg.open(task_id)  # the slot came back
    assert reg.finish(c.id).score == 0.0
    with pytest.raises(ServeError) as done:
        reg.finish(c.id)
    assert (done.value.status, done.value.code) == (409, "episode_finished")

    clock.now = 100  # a full table reaps before refusing
    d, e = reg.open(task_id), reg.open(task_id)
    assert len(reg) == 2 and reg.stats()["reaped"] == 2
    reg.close()
    assert len(reg) == 0
    for x in (d, e):
        with pytest.raises(ServeError):
            reg.call(x.id, reader, {})


def test_threads_share_the_table(corpus: Corpus) -> None:
    reg = EpisodeRegistry(corpus, max_episodes=64)
    task_id, reader = _reader(corpus)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(10):
                live = reg.open(task_id)
                for _ in range(5):
                    assert reg.call(live.id, reader, {}).outcome == "success"
                reg.finish(live.id)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(reg) == 0 and reg.stats()["finished"] == 80
