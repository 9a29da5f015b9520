"""The live episodes of a server: a bounded, thread-safe table with idle reaping.

Pure Python (no web framework): the HTTP layer maps its exceptions to status codes.
Every episode has its own lock (its SQLite connection is used by one call at a time);
the table itself is guarded by one lock held only for dict operations, never across a
tool call. Starting an episode goes through the corpus under a separate lock (its state
caches and lazy app loading are not thread-safe).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from envsynth.corpus.load import Corpus
from envsynth.errors import EnvsynthError
from envsynth.runtime.episode import CallResult
from envsynth.runtime.reward import Reward
from envsynth.serve.net import short
from envsynth.tasks.episode import TaskEpisode

log = logging.getLogger("envsynth.serve")


def public_breakdown(reward: Reward, *, reveal_expected: bool = False) -> list[dict[str, Any]]:
    """The breakdown a trainer gets: which kinds of mismatch occurred where, not the ground truth.

    Args:
        reward: the verifier's reward.
        reveal_expected: the operator opted in to the full detail (messages, keys, fields,
            expected and actual values), as :meth:`Reward.to_dict` gives it.

    Returns:
        By default one ``{"kind", "table", "count"}`` per kind of mismatch and table (in
        the breakdown's order; ``table`` is None for the answer): never a message, a row
        key, a field, an expected value or an expected answer.
    """
    if reveal_expected:
        return list(reward.to_dict()["breakdown"])
    counts: dict[tuple[str, str | None], int] = {}
    for m in reward.breakdown:
        counts[(m.kind, m.table)] = counts.get((m.kind, m.table), 0) + 1
    return [{"kind": kind, "table": table, "count": n} for (kind, table), n in counts.items()]


def public_parts(reward: Reward, *, reveal_expected: bool = False) -> dict[str, Any]:
    """The reward's parts a trainer gets: ``{name: passed}`` (state, answer, policy...), or with
    ``reveal_expected`` each part's ``{passed, detail}`` (a detail may name the expected value)."""
    if reveal_expected:
        return {p.name: p.to_dict() for p in reward.parts}
    return {p.name: p.passed for p in reward.parts}


class ServeError(EnvsynthError):
    """A request the server refuses: ``status`` (HTTP), ``code`` (machine-readable), ``message``."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


@dataclass
class EpisodeHandle:
    """The server's hold on one :class:`TaskEpisode`: its id, its lock and its idle clock.

    Where the episode stands (seed, calls made, reward) is ``episode.state()``; ``task_id``
    is kept here too, to name an episode that fails to end in the log.
    """

    id: str
    task_id: str
    episode: TaskEpisode
    created: float
    last_used: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False


#: why an episode id is no longer live: "finished" (409 on use), "expired" or "deleted" (404)
Gone = str


class EpisodeRegistry:
    """Live episodes of one corpus, at most ``max_episodes`` at a time.

    Args:
        corpus: the corpus episodes start from.
        max_episodes: the bound on live (unfinished, unreaped) episodes.
        idle_timeout: seconds without a request after which :meth:`reap` ends an episode.
        clock: a monotonic clock (tests pass a fake).
        remember: how many ended episode ids to remember, so that using one gives a clear
            "finished" / "expired" error instead of "unknown".
        keep_rewards: how many rewards of finished episodes to keep, so that finishing again
            returns the same reward (a lost response can be fetched again).
        reward_ttl: for how many seconds after its finish a reward is kept.
    """

    def __init__(
        self,
        corpus: Corpus,
        *,
        max_episodes: int = 1024,
        idle_timeout: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        remember: int = 65536,
        keep_rewards: int = 4096,
        reward_ttl: float = 600.0,
    ) -> None:
        if max_episodes < 1:
            raise ValueError("max_episodes must be at least 1")
        if idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive")
        self.corpus = corpus
        self.max_episodes = max_episodes
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._live: dict[str, EpisodeHandle] = {}
        self._reserved = 0
        self._gone: OrderedDict[str, Gone] = OrderedDict()
        self._remember = remember
        self._rewards: OrderedDict[str, tuple[float, Reward]] = OrderedDict()
        self._keep_rewards = keep_rewards
        self._reward_ttl = reward_ttl
        self._lock = threading.Lock()
        self._corpus_lock = threading.Lock()
        self.started = 0
        self.reaped = 0
        self.finished = 0
        self.errors = 0

    def __len__(self) -> int:
        return len(self._live)

    # -- lifecycle -------------------------------------------------------------------------

    def open(self, task_id: str, seed: int = 0) -> EpisodeHandle:
        """Start an episode on ``task_id``.

        Raises:
            ServeError: 404 unknown task; 503 the server holds ``max_episodes`` already.
        """
        try:
            task = self.corpus.task(task_id)
        except KeyError:
            raise ServeError(404, "unknown_task", f"no task {short(task_id)!r} in this corpus") from None
        if not self._reserve():
            self.reap()  # expired episodes make room before anyone is refused
            if not self._reserve():
                raise ServeError(
                    503,
                    "at_capacity",
                    f"the server holds its maximum of {self.max_episodes} live episodes; finish or delete one, or retry later",
                    max_episodes=self.max_episodes,
                    live=len(self._live),
                )
        try:
            with self._corpus_lock:
                ep = self.corpus.start(task, seed=seed)
        except BaseException:
            with self._lock:
                self._reserved -= 1
            raise
        now = self._clock()
        live = EpisodeHandle(id=secrets.token_urlsafe(12), task_id=task.id, episode=ep, created=now, last_used=now)
        with self._lock:
            self._reserved -= 1
            self._live[live.id] = live
            self.started += 1
        return live

    def _reserve(self) -> bool:
        with self._lock:
            if len(self._live) + self._reserved >= self.max_episodes:
                return False
            self._reserved += 1
            return True

    def get(self, episode_id: str) -> EpisodeHandle:
        """The live episode ``episode_id``.

        Raises:
            ServeError: 404 unknown, expired or deleted; 409 finished.
        """
        live = self._live.get(episode_id)
        if live is not None:
            return live
        why = self._gone.get(episode_id)
        if why == "finished":
            raise ServeError(409, "episode_finished", f"episode {episode_id} is finished; start a new one")
        if why == "expired":
            raise ServeError(404, "episode_expired", f"episode {episode_id} was ended after {self.idle_timeout:g}s without a request")
        raise ServeError(404, "unknown_episode", f"no live episode {short(episode_id)!r}")

    def call(self, episode_id: str, name: str, arguments: dict[str, Any] | str | None) -> CallResult:
        """One tool call (never raises for tool-level problems: those are outcomes)."""
        live = self.get(episode_id)
        with live.lock:
            if live.closed:
                self.get(episode_id)  # raises the right error
                raise ServeError(409, "episode_finished", f"episode {episode_id} is finished")
            live.last_used = self._clock()
            return live.episode.call(name, arguments)

    def finish(self, episode_id: str, answer: Any = None) -> Reward:
        """Score the episode and end it; its id then answers 409 to calls.

        Finishing again returns the first finish's reward (whatever ``answer`` is given),
        for ``reward_ttl`` seconds and while it is among the last ``keep_rewards`` kept;
        after that it answers 409 too.
        """
        kept = self.reward_of(episode_id)
        if kept is not None:
            return kept
        live = self.get(episode_id)
        with live.lock:
            if live.closed:  # finished (or ended) while we waited for the lock
                kept = self.reward_of(episode_id)
                if kept is not None:
                    return kept
                self.get(episode_id)
                raise ServeError(409, "episode_finished", f"episode {episode_id} is finished")
            live.closed = True
            try:
                reward = live.episode.finish(answer)
                self._keep(live.id, reward)  # before the id leaves the table: a retry waits for it
            finally:
                self._forget(live.id, "finished")
        with self._lock:
            self.finished += 1
        return reward

    def reward_of(self, episode_id: str) -> Reward | None:
        """The reward of a recently finished episode (None: not finished, or no longer kept)."""
        with self._lock:
            self._drop_old_rewards()
            kept = self._rewards.get(episode_id)
        return kept[1] if kept is not None else None

    def _keep(self, episode_id: str, reward: Reward) -> None:
        with self._lock:
            self._rewards[episode_id] = (self._clock(), reward)
            while len(self._rewards) > self._keep_rewards:
                self._rewards.popitem(last=False)

    def _drop_old_rewards(self) -> None:  # under self._lock
        deadline = self._clock() - self._reward_ttl
        while self._rewards:
            first = next(iter(self._rewards.values()))
            if first[0] > deadline:
                break
            self._rewards.popitem(last=False)

    def delete(self, episode_id: str) -> None:
        """End the episode without scoring it (a finished one is just forgotten)."""
        with self._lock:
            why = self._gone.get(episode_id)
            if why == "finished":
                del self._gone[episode_id]
                self._gone[episode_id] = "deleted"
                self._rewards.pop(episode_id, None)
                return
        live = self.get(episode_id)
        with live.lock:
            if live.closed:
                return
            live.closed = True
            self._forget(live.id, "deleted")
            self._end(live)  # releases its connection; the reward is discarded

    def reap(self) -> int:
        """End episodes idle for ``idle_timeout`` or more; how many were ended."""
        deadline = self._clock() - self.idle_timeout
        with self._lock:
            stale = [e for e in self._live.values() if e.last_used <= deadline]
        n = 0
        for live in stale:
            if not live.lock.acquire(blocking=False):
                continue  # a call is running on it right now: not idle
            try:
                if live.closed or live.last_used > deadline:
                    continue
                live.closed = True
                self._forget(live.id, "expired")
                self._end(live)
                n += 1
            finally:
                live.lock.release()
        with self._lock:
            self.reaped += n
        return n

    def close(self) -> int:
        """End every live episode (server shutdown); how many were ended."""
        with self._lock:
            lives = list(self._live.values())
        n = 0
        for live in lives:
            with live.lock:
                if not live.closed:
                    live.closed = True
                    self._forget(live.id, "deleted")
                    self._end(live)
                    n += 1
        return n

    def _end(self, live: EpisodeHandle) -> None:
        """Release an episode nobody scores; a failure is logged and counted, never raised.

        The episode is already out of the table, so one that cannot be released must not
        stop the reaper, a start at capacity or shutdown from ending the others.
        """
        try:
            live.episode.finish(None)
        except Exception:
            log.exception("envsynth serve: ending episode %s of task %s failed", live.id, live.task_id)
            with self._lock:
                self.errors += 1

    def stats(self) -> dict[str, int]:
        """Live episodes now; episodes started, finished and reaped; episodes whose release failed."""
        return {"live": len(self._live), "started": self.started, "finished": self.finished, "reaped": self.reaped, "errors": self.errors}

    def _forget(self, episode_id: str, why: Gone) -> None:
        with self._lock:
            self._live.pop(episode_id, None)
            self._gone[episode_id] = why
            while len(self._gone) > self._remember:
                self._gone.popitem(last=False)
