"""EpisodePool: any number of live episodes, a bounded number of idle connections, exact counts."""

from __future__ import annotations

import random
import threading
from pathlib import Path

from envsynth.corpus import load_corpus
from envsynth.tasks.episode import EpisodePool


def _invariants(pool: EpisodePool) -> None:
    lists = list(pool._idle.values())
    assert all(lists), "an empty list is kept under a task's key"
    assert pool.idle == sum(map(len, lists)) <= pool.size


def test_more_live_episodes_than_the_pool_size(corpus_path: Path) -> None:
    corpus = load_corpus(corpus_path)  # a fresh corpus: its own pool of 256
    first, *others = corpus.tasks
    corpus.start(first).finish()
    held = corpus.start(first)  # takes the only idle connection of the first task
    live = [corpus.start(others[i % len(others)]) for i in range(300)]
    rewards = [ep.finish() for ep in live]  # the 257th used to raise IndexError, and every one after it
    assert len(rewards) == 300 and all(r.score == 0.0 and r.breakdown for r in rewards)
    assert held.finish().score == 0.0
    _invariants(corpus._pool)
    again = corpus.start(first)  # the pool still serves a working copy of s0
    assert again.finish().score == 0.0


def test_threads_keep_the_counts_exact(corpus_path: Path) -> None:
    corpus = load_corpus(corpus_path)
    tasks = corpus.tasks
    inputs = {t.id: (corpus.apps[t.app], corpus.state_bytes(t)) for t in tasks}
    pool = EpisodePool(size=3)
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(40):
                held = []
                for _ in range(rng.randint(1, 5)):
                    t = rng.choice(tasks)
                    app, state = inputs[t.id]
                    held.append(pool.start(app, t, state))
                for ep in held:
                    ep.finish()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _invariants(pool)
    assert pool.idle == 3
