"""``Corpus.tasks``: the corpus's task records as a sequence that reads each record when it is asked for.

A :class:`TaskSeq` behaves like the list of tasks it replaces (``len``, integer and negative
indexes, slices (lists), iteration, ``==`` with a list, ``in``, ``.index``) but holds only the
task index (:mod:`envsynth.corpus.index`) and a small LRU of recently read records. Filtering
by app or kind (:meth:`TaskSeq.where`) and listing ids or entries (:meth:`TaskSeq.ids`,
:meth:`TaskSeq.entries`) read the index only, never a record.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import ValidationError

from envsynth.corpus.errors import CorpusError
from envsynth.corpus.index import IndexEntry, Location, TaskIndex
from envsynth.tasks.model import Task

RECENT = 512  # records kept in the LRU (a record is ~29 KB in memory)
_CHUNK = 1024  # index rows read per query while iterating records
_SPAN = 65536  # index rows read per query while listing ids or entries


class _Records:
    """Reads records from the shards by location, keeping the last ``recent`` in an LRU (shared by views)."""

    def __init__(self, index: TaskIndex, recent: int) -> None:
        self.task_index = index
        self.recent = recent
        self.reads = 0  # records parsed from the shards so far
        self._lru: OrderedDict[int, Task] = OrderedDict()
        self._lock = threading.Lock()
        self._where: dict[int, tuple[weakref.ref[Task], int]] = {}  # id(record) -> (the record, its position) while it lives

    def cached(self, pos: int) -> Task | None:
        with self._lock:
            task = self._lru.get(pos)
            if task is not None:
                self._lru.move_to_end(pos)
            return task

    def keep(self, pos: int, task: Task) -> Task:
        with self._lock:
            task = self._lru.setdefault(pos, task)  # a record read twice at once: the first copy wins
            self._lru.move_to_end(pos)
            while len(self._lru) > self.recent:
                self._lru.popitem(last=False)
            self._remember(task, pos)
            return task

    def _remember(self, task: Task, pos: int) -> None:
        """Note where ``task`` was read, for as long as the object lives (its entry goes with it)."""
        key = id(task)
        entry = self._where.get(key)
        if entry is not None and entry[0]() is task:
            return
        where = self._where
        self._where[key] = (weakref.ref(task, lambda _, key=key: where.pop(key, None)), pos)

    def position_of(self, task: Task) -> int | None:
        """The position of ``task``: noted when this object was read from the shards, else looked up by its id."""
        entry = self._where.get(id(task))
        if entry is not None and entry[0]() is task:  # this very object (an address is reused only after it dies)
            return entry[1]
        return self.task_index.position(task.id)

    def get(self, pos: int) -> Task:
        task = self.cached(pos)
        if task is not None:
            return task
        task_id, loc = self.task_index.location(pos)
        path = self.task_index.shards[loc.shard][0]
        try:
            with open(path, "rb") as f:
                f.seek(loc.offset)
                line = f.read(loc.length)
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read task {task_id} ({exc.strerror or exc})") from None
        return self.keep(pos, self.parse(path, task_id, loc, line))

    def parse(self, path: Path, task_id: str, loc: Location, line: bytes) -> Task:
        self.reads += 1
        try:
            task = Task.model_validate_json(line)
        except ValidationError as exc:
            raise CorpusError(
                f"{path}: at byte {loc.offset} is not a task ({exc.errors()[0]['msg']}): the shard changed after it was indexed"
            ) from None
        if task.id != task_id:
            raise CorpusError(
                f"{path}: at byte {loc.offset} holds task {task.id}, the index says {task_id}: the shard changed after it was indexed"
            )
        return task

    def scan(self, positions: Sequence[int]) -> Iterator[Task]:
        """The records at ``positions`` (ascending), reading each shard they sit in once."""
        shard, data = -1, b""
        for start in range(0, len(positions), _CHUNK):
            chunk = positions[start : start + _CHUNK]
            rows = {p: (i, loc) for p, i, loc in self.task_index.locations(chunk[0], chunk[-1] + 1)}
            for pos in chunk:
                task = self.cached(pos)
                if task is None:
                    task_id, loc = rows[pos]
                    if loc.shard != shard:
                        shard, data = loc.shard, self.task_index.shards[loc.shard][0].read_bytes()
                    line = data[loc.offset : loc.offset + loc.length]
                    task = self.keep(pos, self.parse(self.task_index.shards[shard][0], task_id, loc, line))
                yield task


class TaskSeq(Sequence[Task]):
    """The tasks of a corpus (or of a filtered view of it), read on demand.

    Attributes:
        task_index: the corpus's task index.
    """

    def __init__(self, records: _Records, positions: Sequence[int] | None = None) -> None:
        self._records = records
        self.task_index = records.task_index
        self._positions: Sequence[int] = range(len(records.task_index)) if positions is None else positions

    @classmethod
    def open(cls, index: TaskIndex, recent: int = RECENT) -> TaskSeq:
        """All tasks of ``index``, keeping the ``recent`` last read records in memory."""
        return cls(_Records(index, recent))

    @property
    def reads(self) -> int:
        """How many records have been read from the shards (and parsed) so far."""
        return self._records.reads

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice) -> Task | list[Task]:
        if isinstance(i, slice):
            return self._slice(i)
        if not isinstance(i, int):
            raise TypeError(f"task indexes must be integers or slices, not {type(i).__name__}")
        return self._records.get(self._positions[i])  # IndexError out of range, as a list

    def _slice(self, s: slice) -> list[Task]:
        wanted = self._positions[s]
        ordered = sorted(set(wanted))
        got = dict(zip(ordered, self._records.scan(ordered)))
        return [got[p] for p in wanted]

    def __iter__(self) -> Iterator[Task]:
        return self._records.scan(self._positions)

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, Task):
            return False
        pos = self.task_index.position(value.id)
        return pos is not None and self._has(pos) and self._records.get(pos) == value

    def _has(self, pos: int) -> bool:
        i = bisect_left(self._positions, pos)  # positions ascend
        return i < len(self._positions) and self._positions[i] == pos

    def position_of(self, task: Task) -> int | None:
        """The position of ``task`` in the corpus (not in this view), None when the corpus has no task of its id.

        A record read from this corpus knows its position without a look-up in the index.
        """
        return self._records.position_of(task)

    def index_of(self, task_id: str) -> int | None:
        """The index in this sequence of the task with id ``task_id``, or None."""
        pos = self.task_index.position(task_id)
        if pos is None or not self._has(pos):
            return None
        return bisect_left(self._positions, pos)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:  # type: ignore[override]
        """The index of ``value`` (a Task) in this sequence, as ``list.index``.

        Raises:
            ValueError: it is not in the sequence.
        """
        i = self.index_of(value.id) if isinstance(value, Task) and value in self else None
        if i is None or i < start or (stop is not None and i >= stop):
            raise ValueError(f"{value!r} is not in the tasks") from None
        return i

    def by_id(self, task_id: str) -> Task:
        """The task with id ``task_id`` in this sequence.

        Raises:
            KeyError: no such task.
        """
        pos = self.task_index.position(task_id)
        if pos is None or not self._has(pos):
            raise KeyError(task_id)
        return self._records.get(pos)

    def where(self, app: str | None = None, kind: str | None = None) -> TaskSeq:
        """The tasks of ``app`` and of ``kind`` (None: any), in order, from the index alone."""
        found = self.task_index.where(app, kind)
        if not isinstance(self._positions, range) or len(self._positions) != len(self.task_index):
            mine = set(self._positions)
            found = array("q", (p for p in found if p in mine))
        return TaskSeq(self._records, found)

    def entries(self) -> Iterator[IndexEntry]:
        """The index entries (id, app, kind, coordinates) of these tasks, in order, without reading a record."""
        for lo, hi, chunk in self._spans():
            rows = self.task_index.entries(lo, hi)
            yield from (e for _, e in rows) if chunk is None else (e for p, e in rows if p in chunk)

    def ids(self) -> Iterator[str]:
        """The ids of these tasks, in order, without reading a record."""
        for lo, hi, chunk in self._spans():
            if chunk is None:
                yield from self.task_index.ids(lo, hi)
            else:
                yield from (e.id for p, e in self.task_index.entries(lo, hi) if p in chunk)

    def _spans(self) -> Iterator[tuple[int, int, set[int] | None]]:
        """Position spans covering these tasks, in order: (start, stop, the positions wanted or None for all)."""
        if isinstance(self._positions, range) and self._positions.step == 1:
            for lo in range(self._positions.start, self._positions.stop, _SPAN):
                yield lo, min(lo + _SPAN, self._positions.stop), None
            return
        for start in range(0, len(self._positions), _CHUNK):
            chunk = self._positions[start : start + _CHUNK]
            yield chunk[0], chunk[-1] + 1, set(chunk)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]  # a sequence, compared by value

    def __repr__(self) -> str:
        return f"<TaskSeq of {len(self)} tasks from {self.task_index.root}>"
