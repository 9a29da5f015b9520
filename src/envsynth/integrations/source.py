"""A corpus shared by the episodes of many sessions in one process: thread-safe starts, tasks picked by id or seed.

The trainer integrations (OpenEnv, SkyRL-gym) run one environment object per session,
often each in its own thread. They share one :class:`CorpusSource`: the corpus is loaded
once, and starting an episode goes through one lock (the corpus's state caches and lazy
app loading are not thread-safe). Once started, an episode has its own SQLite connection
and needs no lock of the source.
"""

from __future__ import annotations

import threading
from pathlib import Path

from envsynth.corpus.load import Corpus, load_corpus
from envsynth.tasks.episode import TaskEpisode
from envsynth.tasks.model import Task

_OPENED: dict[Path, CorpusSource] = {}
_OPENED_LOCK = threading.Lock()


class CorpusSource:
    """One loaded corpus and the lock its episodes start under.

    Attributes:
        corpus: the corpus.
    """

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._lock = threading.Lock()
        self._cursor = 0

    def __len__(self) -> int:
        return len(self.corpus)

    def pick(self, task_id: str | None = None, seed: int | None = None) -> Task:
        """The task of an episode: ``task_id`` if given, else the task at ``seed`` (modulo the corpus size), else the next one.

        Without a task id or a seed, each call takes the next task in corpus order (shared by
        every session of the source, wrapping around at the end).

        Raises:
            ValueError: an unknown ``task_id``, or an empty corpus.
        """
        with self._lock:
            if task_id is not None:
                try:
                    return self.corpus.task(task_id)
                except KeyError:
                    raise ValueError(f"no task {str(task_id)[:64]!r} in the corpus at {self.corpus.path}") from None
            n = len(self.corpus)
            if not n:
                raise ValueError(f"the corpus at {self.corpus.path} has no tasks")
            if seed is None:
                index, self._cursor = self._cursor % n, self._cursor + 1
            else:
                index = seed % n
            return self.corpus.tasks[index]

    def start(self, task: Task, seed: int = 0) -> TaskEpisode:
        """A fresh episode on ``task`` (its own copy of s0), started under the source's lock."""
        with self._lock:
            return self.corpus.start(task, seed=seed)


def open_source(corpus: CorpusSource | Corpus | str | Path) -> CorpusSource:
    """A :class:`CorpusSource` for ``corpus``: itself, a loaded corpus, or a folder (loaded once per process and path)."""
    if isinstance(corpus, CorpusSource):
        return corpus
    if isinstance(corpus, Corpus):
        return CorpusSource(corpus)
    path = Path(corpus).absolute()
    with _OPENED_LOCK:
        source = _OPENED.get(path)
        if source is None:
            source = _OPENED[path] = CorpusSource(load_corpus(path))
        return source
