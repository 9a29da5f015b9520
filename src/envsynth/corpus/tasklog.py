"""One app's task files: an append-only, crash-safe log of attempts and sharded tasks.

Every attempted task index ends as one line of ``attempts.jsonl`` (admitted, with the
hashes of its tasks, or rejected, with the reason). An admitted index first appends its
tasks to the shards, then appends its attempt line: the attempt line is the commit. Every
line is handed to the operating system as it is written, so a crash of the process loses
nothing; the files are synced to disk (shards first, then the log) at most every
``SYNC_SECONDS`` and when closed, so a power failure loses at most the last moments of
work. Reopening keeps the longest prefix of attempts whose tasks are all in the shards,
and cuts what follows (a partial line, the tasks of an attempt in flight, attempts whose
tasks never reached the disk), so a resumed run writes exactly the bytes an uninterrupted
one would.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, ValidationError

from envsynth.corpus.errors import CorpusError
from envsynth.corpus.layout import ATTEMPTS_FILE, SHARD_SIZE, shard_name, shard_paths
from envsynth.tasks.model import Rejection, Task

SYNC_SECONDS = 1.0  # longest time between syncs of the task files to disk


class Attempt(BaseModel):
    """What became of one task index: admitted (``hashes`` of its tasks) or rejected (``reason``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: int
    hashes: list[str] = []
    tier: str | None = None
    """The difficulty tier of an admitted index's first state (what ``--difficulty`` quotas count)."""
    reason: str | None = None
    detail: str = ""

    @property
    def admitted(self) -> bool:
        return self.reason is None


def complete_lines(path: Path) -> list[bytes]:
    """The newline-terminated lines of ``path`` (each with its newline); a partial last line is left out."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1].splitlines(keepends=True)


def _cut(path: Path, lines: list[bytes]) -> None:
    """Truncate ``path`` to ``lines`` (a prefix of its complete lines); delete it when empty."""
    if not lines:
        path.unlink(missing_ok=True)
        return
    size = sum(len(line) for line in lines)
    if path.stat().st_size != size:
        os.truncate(path, size)


def _sync(f: IO[bytes]) -> None:
    f.flush()
    os.fsync(f.fileno())


class TaskLog:
    """The task files of one app in ``folder``; open with :meth:`open`, then :meth:`admit` / :meth:`reject`.

    Attributes:
        attempts: the committed attempts, by task index (0, 1, 2...).
        records: how many tasks the shards hold.
    """

    def __init__(self, folder: Path, attempts: list[Attempt], records: int, shard_size: int = SHARD_SIZE) -> None:
        self.folder = folder
        self.attempts = attempts
        self.records = records
        self.shard_size = shard_size
        self._admitted = sum(a.admitted for a in attempts)
        self._shard: IO[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._synced = time.monotonic()

    @classmethod
    def open(cls, folder: Path, shard_size: int = SHARD_SIZE) -> TaskLog:
        """Open (creating) the task files in ``folder`` and cut whatever a crash left incomplete.

        Raises:
            CorpusError: a committed line that is not an attempt, or attempts out of order.
        """
        folder.mkdir(parents=True, exist_ok=True)
        log_path = folder / ATTEMPTS_FILE
        attempts = [_parse_attempt(log_path, n, line) for n, line in enumerate(complete_lines(log_path))]
        shards = [complete_lines(p) for p in shard_paths(folder)]
        available = 0
        for lines in shards:  # a shard counts only while every shard before it is full
            available += len(lines)
            if len(lines) < shard_size:
                break
        keep, records = 0, 0
        for a in attempts:
            if records + len(a.hashes) > available:
                break
            keep, records = keep + 1, records + len(a.hashes)
        _cut(log_path, complete_lines(log_path)[:keep])
        for number, (path, lines) in enumerate(zip(shard_paths(folder), shards)):
            _cut(path, lines[: max(0, min(shard_size, records - number * shard_size))])
        return cls(folder, attempts[:keep], records, shard_size)

    @property
    def admitted(self) -> int:
        """Number of admitted task indexes."""
        return self._admitted

    def admit(self, task_index: int, tasks: list[Task]) -> None:
        """Append ``tasks`` (the admitted records of ``task_index``) and commit the attempt."""
        self._check_next(task_index)
        for t in tasks:
            self._shard_file().write(t.model_dump_json().encode() + b"\n")
            self.records += 1
        if self._shard is not None:
            self._shard.flush()
        self._commit(Attempt(task=task_index, hashes=[t.hash for t in tasks], tier=tasks[0].tier if tasks else None))
        self._admitted += 1

    def tiers(self) -> list[str | None]:
        """The tiers of the admitted task indexes, in order."""
        return [a.tier for a in self.attempts if a.admitted]

    def reject(self, task_index: int, rejection: Rejection) -> None:
        """Commit a rejected attempt of ``task_index``."""
        self._check_next(task_index)
        self._commit(Attempt(task=task_index, reason=rejection.reason, detail=rejection.detail))

    def sync(self) -> None:
        """Sync the open files to disk, shards before the log (so the log never commits tasks the disk lacks)."""
        for f in (self._shard, self._log):
            if f is not None:
                _sync(f)
        self._synced = time.monotonic()

    def close(self) -> None:
        """Sync and close the open files (idempotent)."""
        self.sync()
        for f in (self._shard, self._log):
            if f is not None:
                f.close()
        self._shard = self._log = None

    def __enter__(self) -> TaskLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_next(self, task_index: int) -> None:
        if task_index != len(self.attempts):
            raise ValueError(f"{self.folder}: expected task index {len(self.attempts)}, got {task_index}")

    def _shard_file(self) -> IO[bytes]:
        if self.records % self.shard_size == 0 or self._shard is None:
            if self._shard is not None:
                _sync(self._shard)
                self._shard.close()
            self._shard = open(self.folder / shard_name(self.records // self.shard_size), "ab")  # noqa: SIM115
        return self._shard

    def _commit(self, attempt: Attempt) -> None:
        if self._log is None:
            self._log = open(self.folder / ATTEMPTS_FILE, "ab")  # noqa: SIM115
        self._log.write(attempt.model_dump_json(exclude_defaults=True).encode() + b"\n")
        self._log.flush()
        self.attempts.append(attempt)
        if time.monotonic() - self._synced >= SYNC_SECONDS:
            self.sync()


def _parse_attempt(path: Path, number: int, line: bytes) -> Attempt:
    try:
        a = Attempt.model_validate_json(line)
    except ValidationError as exc:
        raise CorpusError(f"{path}: line {number + 1} is not an attempt record ({exc.errors()[0]['msg']})") from None
    if a.task != number:
        raise CorpusError(f"{path}: line {number + 1} records task index {a.task}, expected {number}")
    return a


def read_tasks(folder: Path) -> Iterator[Task]:
    """The tasks in the shards of ``folder``, in order.

    Raises:
        CorpusError: a line that is not a valid task.
    """
    for path in shard_paths(folder):
        for number, line in enumerate(complete_lines(path)):
            try:
                yield Task.model_validate_json(line)
            except ValidationError as exc:
                raise CorpusError(f"{path}: line {number + 1} is not a task ({exc.errors()[0]['msg']})") from None
