"""Reading a corpus back: its tasks, its apps (loaded on first use) and episodes on its tasks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from envsynth.corpus.errors import CorpusError
from envsynth.corpus.index import open_index
from envsynth.corpus.layout import APPS_DIR, FORMAT_VERSION, MANIFEST
from envsynth.corpus.lazy import TaskSeq
from envsynth.corpus.manifest import CorpusManifest, digest
from envsynth.corpus.states import StateStore
from envsynth.runtime.app import App, AppLoadError
from envsynth.runtime.parts import ALL, ScoreRule
from envsynth.tasks.episode import EpisodePool
from envsynth.tasks.model import Task

if TYPE_CHECKING:
    from envsynth.tasks.episode import TaskEpisode


class LazyApps(Mapping[str, App]):
    """App name -> :class:`App`, each loaded from the corpus folder on first access."""

    def __init__(self, root: Path, names: list[str]) -> None:
        self._root = root
        self._names = names
        self._loaded: dict[str, App] = {}

    def __getitem__(self, name: str) -> App:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._loaded:
            try:
                self._loaded[name] = App.load(self._root / APPS_DIR / name)
            except AppLoadError as exc:
                raise CorpusError(str(exc)) from None
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    @property
    def loaded(self) -> list[str]:
        """Names of the apps loaded so far."""
        return list(self._loaded)

    def __len__(self) -> int:
        return len(self._names)


class Corpus:
    """A corpus folder written by :func:`envsynth.corpus.build_corpus`.

    Attributes:
        path: the folder (an absolute path, so that what records it, such as a run's
            ``run.json``, can be read from any working directory).
        manifest: its ``corpus.json``.
        tasks: every task, by app (manifest order), then shard order (task index, then state):
            a sequence that reads each record from its shard when asked for (see
            :class:`~envsynth.corpus.lazy.TaskSeq`: ``where(app=, kind=)``, ``ids()``, ``entries()``).
        apps: app name -> :class:`App`, loaded on first access.
    """

    def __init__(self, path: Path, manifest: CorpusManifest, tasks: TaskSeq, state_cache: int = 1024) -> None:
        self.path = path
        self.manifest = manifest
        self.tasks = tasks
        self.apps = LazyApps(path, [a.name for a in manifest.apps if a.error is None])
        self._store = StateStore(path, manifest.shard_size)
        self._app_starts: dict[str, int] | None = None
        self._states: OrderedDict[str, bytes] = OrderedDict()
        self._state_cache = state_cache
        self._pool = EpisodePool(size=min(state_cache, 256))

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def task(self, task_id: str) -> Task:
        """The task with id ``task_id``.

        Raises:
            KeyError: no such task in this corpus.
        """
        try:
            return self.tasks.by_id(task_id)
        except KeyError:
            raise KeyError(f"no task {task_id!r} in the corpus at {self.path}") from None

    def state_bytes(self, task: Task | str) -> bytes:
        """The SQLite bytes of the task's initial state s0 (cached: the last ``state_cache`` tasks).

        Read from the states the build stored next to the task shards; rebuilt from the task's
        rows when the corpus has none for it (a corpus built before they were stored).
        """
        from envsynth.tasks.state import state_bytes

        t = self.task(task) if isinstance(task, str) else task
        key = t.hash or t.id
        data = self._states.get(key)
        if data is None:
            data = self.stored_state(t) or state_bytes(self.apps[t.app], t)
            self._states[key] = data
            while len(self._states) > self._state_cache:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(key)
        return data

    def stored_state(self, task: Task) -> bytes | None:
        """The s0 bytes the build stored for ``task``, None when there are none (see :mod:`envsynth.corpus.states`)."""
        index = self.tasks.task_index
        pos = self.tasks.position_of(task)
        if pos is None:
            return None
        if self._app_starts is None:  # an app's records come together, in shard order: its first position
            self._app_starts = index.app_starts()
        return self._store.read(task.app, pos - self._app_starts[task.app], task.hash)

    def start(self, task: Task | str, seed: int = 0, score_rule: ScoreRule = ALL) -> TaskEpisode:
        """A fresh episode on ``task`` (a Task or its id): its own copy of s0, the task's visible tools.

        ``score_rule``: how its reward's parts make the score (default: every part must pass).
        """
        t = self.task(task) if isinstance(task, str) else task
        return self._pool.start(self.apps[t.app], t, self.state_bytes(t), seed=seed, score_rule=score_rule)

    def verify(self) -> None:
        """Check every task's hash against its content and the corpus digest against the manifest.

        Raises:
            CorpusError: the first mismatch found.
        """
        hashes = []
        for t in self.tasks:
            if t.hash != t.content_hash():
                raise CorpusError(f"{self.path}: task {t.id} does not match its hash (edited after the build?)")
            hashes.append(t.hash)
        if digest(hashes) != self.manifest.digest:
            raise CorpusError(f"{self.path / MANIFEST}: the tasks do not match the manifest's digest")


def load_corpus(path: str | Path, *, state_cache: int = 1024) -> Corpus:
    """Load the corpus in ``path``: manifest and task index now, task records and apps on first use.

    A corpus without a task index (built by an older envsynth), or whose index does not match
    its shards, gets one built from the shards (see :func:`~envsynth.corpus.index.open_index`).

    Args:
        path: a corpus folder (``envsynth build OUT --tasks-per-app T``).
        state_cache: how many tasks' initial states to keep in memory for :meth:`Corpus.start`.

    Raises:
        CorpusError: a missing folder or manifest, an invalid manifest, or shards that do
            not hold what the manifest says (an interrupted build: rerun it). A record that
            is not a valid task raises it when it is read.
    """
    root = Path(path)
    if not root.is_dir():
        raise CorpusError(f"no corpus folder at {root}")
    mpath = root / MANIFEST
    if not mpath.is_file():
        hint = " (it holds apps only: add tasks with `envsynth build OUT --tasks-per-app T`)" if (root / APPS_DIR).is_dir() else ""
        raise CorpusError(f"{root} is not a corpus: no {MANIFEST}{hint}")
    try:
        manifest = CorpusManifest.model_validate_json(mpath.read_bytes())
    except ValidationError as exc:
        e = exc.errors()[0]
        where = ".".join(str(x) for x in e["loc"]) or "(top)"
        raise CorpusError(f"{mpath}: {where}: {e['msg']}") from None
    if manifest.version != FORMAT_VERSION:
        raise CorpusError(
            f"{mpath}: corpus format {manifest.version} (envsynth {manifest.envsynth_version}); this envsynth reads format"
            f" {FORMAT_VERSION}: rebuild the corpus into a new folder"
        )
    root = root.absolute()
    return Corpus(root, manifest, TaskSeq.open(open_index(root, manifest)), state_cache)
