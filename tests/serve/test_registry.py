"""The episode table behind the server, without HTTP (no extra needed): bounds, reaping, errors."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from envsynth.corpus import Corpus, load_corpus
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
        reg.call(c.id, reader, {})
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


def test_a_full_table_reaps_more_episodes_than_the_pool_holds(corpus_path: Path) -> None:
    corpus = load_corpus(corpus_path)  # its own pool of 256 connections
    clock = Clock()
    reg = EpisodeRegistry(corpus, max_episodes=300, idle_timeout=10, clock=clock)
    first, *others = corpus.tasks
    reader = next(n for n in first.visible_tools if n.startswith("search_"))
    reg.finish(reg.open(first.id).id)
    held = reg.open(first.id)  # takes the pooled connection back
    for i in range(299):
        reg.open(others[i % len(others)].id)
    with pytest.raises(ServeError) as full:
        reg.open(first.id)
    assert full.value.status == 503
    clock.now = 20
    assert reg.call(held.id, reader, {}).outcome == "success"  # held is busy, the 299 others idle
    live = reg.open(first.id)  # reaps the 299 first (the 257th released raised IndexError)
    assert reg.stats() == {"live": 2, "started": 302, "finished": 1, "reaped": 299, "errors": 0}
    assert reg.finish(live.id).score == 0.0 and reg.finish(held.id).score == 0.0


def test_an_episode_that_fails_to_end_does_not_stop_the_others(corpus: Corpus, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    reg = EpisodeRegistry(corpus, max_episodes=3, idle_timeout=10, clock=clock)
    task_id, _ = _reader(corpus)
    lives = [reg.open(task_id) for _ in range(3)]

    class Broken:
        def finish(self, answer: Any = None) -> Any:
            raise RuntimeError("cannot release")

    good = lives[0].episode
    lives[0].episode = Broken()  # type: ignore[assignment]
    clock.now = 20
    assert reg.reap() == 3 and len(reg) == 0
    assert reg.stats()["errors"] == 1 and "cannot release" in caplog.text
    good.finish()
    spare = reg.open(task_id)
    spare.episode, kept = Broken(), spare.episode  # type: ignore[assignment]
    reg.close()  # shutdown goes on past it
    assert len(reg) == 0 and reg.stats()["errors"] == 2
    kept.finish()


def test_finish_again_returns_the_kept_reward_for_a_while(corpus: Corpus) -> None:
    clock = Clock()
    reg = EpisodeRegistry(corpus, idle_timeout=1000, clock=clock, keep_rewards=2, reward_ttl=60)
    task_id, reader = _reader(corpus)
    a, b, c = (reg.open(task_id) for _ in range(3))
    first = reg.finish(a.id, "x")
    assert reg.finish(a.id, "y") is first and reg.finish(a.id) is first
    with pytest.raises(ServeError) as called:
        reg.call(a.id, reader, {})
    assert called.value.status == 409
    clock.now = 61  # past the ttl: a plain 409
    with pytest.raises(ServeError) as late:
        reg.finish(a.id)
    assert (late.value.status, late.value.code) == (409, "episode_finished")
    reg.finish(b.id)
    reg.finish(c.id)
    d = reg.open(task_id)
    reg.finish(d.id)  # keeps b's out: at most 2 kept
    with pytest.raises(ServeError):
        reg.finish(b.id)
    assert reg.finish(c.id).score == 0.0 and reg.finish(d.id).score == 0.0


def test_errors_do_not_echo_huge_ids(corpus: Corpus) -> None:
    reg = EpisodeRegistry(corpus)
    huge = "z" * 50_000
    for fn in (lambda: reg.open(huge), lambda: reg.get(huge), lambda: reg.finish(huge), lambda: reg.delete(huge)):
        with pytest.raises(ServeError) as err:
            fn()
        assert len(err.value.message) < 200 and "50000 characters" in err.value.message


def test_concurrent_finishes_all_get_the_one_reward(corpus: Corpus) -> None:
    reg = EpisodeRegistry(corpus)
    task_id, _ = _reader(corpus)
    for _ in range(5):
        live = reg.open(task_id)
        got: list[Any] = []
        barrier = threading.Barrier(8)

        def finish(live_id: str = live.id, barrier: threading.Barrier = barrier, got: list[Any] = got) -> None:
            barrier.wait()
            got.append(reg.finish(live_id, "x"))

        threads = [threading.Thread(target=finish) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 8 and all(r is got[0] for r in got)
    assert reg.stats()["finished"] == 5 and len(reg) == 0
