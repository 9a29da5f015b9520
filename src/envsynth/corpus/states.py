"""Stored initial states: each task's s0 as SQLite bytes, written by the build next to its shard.

An episode then starts from bytes read from disk instead of rebuilding the database from
the task's rows (the rows stay in the task record, which remains the reference)::

    OUT/tasks/<app>/states-template.db   the app's empty database (its schema), pages of PAGE_SIZE bytes
    OUT/tasks/<app>/states-00000.bin     s0 of the tasks of shard-00000.jsonl, in the same order

A states file starts with :data:`MAGIC`, then holds one frame per task: the length of the
frame's payload (4 bytes, little endian), the task's hash (32 bytes) and the payload, the
pages in which s0 differs from the template: s0's page count and the number of pages
listed (4 bytes each), per page its number (from 0, 4 bytes) and the lengths of its bytes
before and after its longest run of zeros (2 bytes each), then those bytes, page by page.
Decoding is a copy of the template and a few slices per page (no decompression). s0 is the
template with the task's rows inserted on a fresh connection, so the same rows give the
same bytes and a build gives the same files run after run.

The files are derived data: opening the writer makes them agree with the shards (frames of
tasks no shard holds are cut, missing ones are written from the shards' task records), and
a reader that finds no frame, or a frame of another task, returns None so that the caller
rebuilds the state from the task's rows (corpora built before the store existed).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import struct
import threading
from array import array
from collections import OrderedDict
from pathlib import Path
from typing import IO

from envsynth.corpus.layout import TASKS_DIR, shard_paths
from envsynth.files import write_atomic
from envsynth.runtime.app import App
from envsynth.runtime.state import insert_rows
from envsynth.tasks.model import Task
from envsynth.tasks.state import merged

MAGIC = b"envsynth-states-2\n"
TEMPLATE = "states-template.db"
PAGE_SIZE = 512
"""Page size of stored states: the smallest SQLite allows, so that a state of a few rows per table
is a few dozen KB (a copy per episode) rather than ~200 KB at the default 4096."""
OPEN_FILES = 64  # states files a reader keeps open (the least recently used closed first)
_HEAD = struct.Struct("<I32s")
_COUNTS = struct.Struct("<II")
_PAGE = struct.Struct("<IHH")  # page number, bytes kept before its zero run, bytes kept after it
_ZEROS_RE = re.compile(rb"\x00+")
_ZERO_PAGE = bytes(PAGE_SIZE)
_ZERO_VIEW = memoryview(_ZERO_PAGE)


def states_name(number: int) -> str:
    """File name of the states of shard ``number`` (``states-00000.bin``)."""
    return f"states-{number:05d}.bin"


def template_bytes(schema: str) -> bytes:
    """The empty database of ``schema`` with :data:`PAGE_SIZE` pages (the same bytes for the same schema)."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.executescript(schema)
        return conn.serialize()
    finally:
        conn.close()


def state_image(app: App, template: bytes, task: Task) -> bytes:
    """s0 of ``task``: its rows inserted into ``template`` on a fresh connection.

    Raises:
        sqlite3.IntegrityError: rows that break a key, CHECK or foreign key constraint.
    """
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.deserialize(template)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN")
        insert_rows(conn, app.order, merged(task.state.core, task.state.distractors))
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise sqlite3.IntegrityError(f"task {task.id}: foreign key violations: {problems[:3]}")
        conn.execute("COMMIT")
        return conn.serialize()
    finally:
        conn.close()


def encode(template: bytes, image: bytes) -> bytes:
    """The payload of a frame: the pages of ``image`` that differ from ``template``, each without its
    longest run of zero bytes (the free middle of a page)."""
    size = PAGE_SIZE
    pages = len(image) // size
    heads, parts = [], []
    for n in range(pages):
        page = image[n * size : (n + 1) * size]
        if page == template[n * size : (n + 1) * size]:
            continue
        start, end = _zero_run(page)
        heads.append(_PAGE.pack(n, start, size - end))
        parts += [page[:start], page[end:]]
    return b"".join([_COUNTS.pack(pages, len(heads)), *heads, *parts])


def _zero_run(page: bytes) -> tuple[int, int]:
    """Start and end of the longest run of zero bytes of ``page`` (the first one of that length; (0, 0): none)."""
    best = (0, 0)
    for m in _ZEROS_RE.finditer(page):
        if m.end() - m.start() > best[1] - best[0]:
            best = (m.start(), m.end())
    return best


def decode(template: bytes, payload: bytes) -> bytes:
    """The image :func:`encode` made ``payload`` from.

    One copy: the image is joined from slices of the template and of the payload. Its pages come
    in ascending order, and every page past the template's end is among them (encode wrote them so).
    """
    size = PAGE_SIZE
    raw = memoryview(payload)
    pages, count = _COUNTS.unpack_from(raw)
    base = memoryview(template)
    parts: list[memoryview] = []
    at = _COUNTS.size + _PAGE.size * count
    done = 0  # pages joined so far
    for n, head, tail in _PAGE.iter_unpack(raw[_COUNTS.size : at]):
        if n > done:
            parts.append(base[done * size : n * size])
        mid = at + head
        parts += (raw[at:mid], _ZERO_VIEW[: size - head - tail], raw[mid : mid + tail])
        at = mid + tail
        done = n + 1
    if pages > done:
        parts.append(base[done * size : pages * size])
    return b"".join(parts)


def _frames(data: bytes) -> list[tuple[bytes, int, int]]:
    """(task hash, payload offset, payload length) of each complete frame of a states file's bytes."""
    out = []
    at = len(MAGIC) if data.startswith(MAGIC) else len(data)
    while at + _HEAD.size <= len(data):
        length, digest = _HEAD.unpack_from(data, at)
        if at + _HEAD.size + length > len(data):
            break
        out.append((digest, at + _HEAD.size, length))
        at += _HEAD.size + length
    return out


def _shard_hashes(path: Path) -> list[bytes]:
    """The hashes of the complete task records of a shard, as raw bytes."""
    data = path.read_bytes()
    lines = data[: data.rfind(b"\n") + 1].splitlines()
    return [bytes.fromhex(json.loads(line)["hash"]) for line in lines]


class StateWriter:
    """Appends the s0 of admitted tasks to an app's states files, in shard order.

    Open it with :meth:`open` after :meth:`TaskLog.open` has cut the shards; it first makes
    the states files agree with them.
    """

    def __init__(self, folder: Path, app: App, template: bytes, shard_size: int, records: int) -> None:
        self.folder = folder
        self.app = app
        self.template = template
        self.shard_size = shard_size
        self.records = records
        self._file: IO[bytes] | None = None

    @classmethod
    def open(cls, folder: Path, app: App, shard_size: int) -> StateWriter:
        """The writer of ``folder``'s states, made to hold one frame per task of its shards."""
        path = folder / TEMPLATE
        if path.is_file():  # frames are differences from this template: keep it
            template = path.read_bytes()
        else:
            template = template_bytes(app.schema)
            write_atomic(path, template)
        writer = cls(folder, app, template, shard_size, 0)
        writer._reconcile()
        return writer

    def _reconcile(self) -> None:
        shards = shard_paths(self.folder)
        total = 0
        for number, shard in enumerate(shards):
            hashes = _shard_hashes(shard)
            total += len(hashes)
            path = self.folder / states_name(number)
            data = path.read_bytes() if path.is_file() else b""
            frames = _frames(data)
            keep = 0
            while keep < min(len(frames), len(hashes)) and frames[keep][0] == hashes[keep]:
                keep += 1
            end = frames[keep - 1][1] + frames[keep - 1][2] if keep else len(MAGIC)
            if not data.startswith(MAGIC):
                path.write_bytes(MAGIC)
            elif len(data) != end:
                os.truncate(path, end)
            self.records = number * self.shard_size + keep
            if keep < len(hashes):
                lines = shard.read_bytes().splitlines()
                self.add([Task.model_validate_json(line) for line in lines[keep : len(hashes)]])
        self.close()
        self.records = total
        for stale in sorted(self.folder.glob("states-[0-9][0-9][0-9][0-9][0-9].bin"))[len(shards) :]:
            stale.unlink()

    def add(self, tasks: list[Task]) -> None:
        """Append the frames of ``tasks`` (sealed: with their hash), the next records of the shards."""
        for task in tasks:
            payload = encode(self.template, state_image(self.app, self.template, task))
            self._states_file().write(_HEAD.pack(len(payload), bytes.fromhex(task.hash)) + payload)
            self.records += 1
        if self._file is not None:
            self._file.flush()

    def _states_file(self) -> IO[bytes]:
        if self.records % self.shard_size == 0 or self._file is None:
            self.close()
            path = self.folder / states_name(self.records // self.shard_size)
            fresh = not path.is_file() or path.stat().st_size == 0
            self._file = open(path, "ab")  # noqa: SIM115
            if fresh:
                self._file.write(MAGIC)
        return self._file

    def close(self) -> None:
        """Sync and close the open states file (idempotent)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def __enter__(self) -> StateWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Frames:
    """Where the frames of one states file are: payload offsets and lengths, and the tasks' hashes."""

    __slots__ = ("hashes", "lengths", "offsets")

    def __init__(self, data: bytes) -> None:
        frames = _frames(data)
        self.offsets = array("Q", [o for _, o, _ in frames])
        self.lengths = array("I", [n for _, _, n in frames])
        self.hashes = b"".join(h for h, _, _ in frames)


class StateStore:
    """Reads stored s0 bytes of a corpus's tasks (thread-safe).

    Per app it keeps the template, per states file where its frames are (about 44 bytes per
    task), and up to :data:`OPEN_FILES` open files.
    """

    def __init__(self, root: Path, shard_size: int) -> None:
        self.root = root
        self.shard_size = shard_size
        self._templates: dict[str, bytes | None] = {}
        self._frames: dict[tuple[str, int], _Frames | None] = {}
        self._fds: OrderedDict[tuple[str, int], int] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, app: str, position: int, task_hash: str) -> bytes | None:
        """s0 of the task with hash ``task_hash``, record ``position`` (from 0) of ``app``'s shards;
        None when the corpus holds no stored state for it."""
        if not task_hash:
            return None
        key = (app, position // self.shard_size)
        k = position % self.shard_size
        with self._lock:
            template = self._template(app)
            frames = self._frames.get(key) if key in self._frames else self._index(key)
            if template is None or frames is None or k >= len(frames.offsets):
                return None
            if frames.hashes[32 * k : 32 * (k + 1)] != bytes.fromhex(task_hash):
                return None
            payload = os.pread(self._fd(key), frames.lengths[k], frames.offsets[k])
        return decode(template, payload)

    def _path(self, key: tuple[str, int]) -> Path:
        return self.root / TASKS_DIR / key[0] / states_name(key[1])

    def _template(self, app: str) -> bytes | None:
        if app not in self._templates:
            path = self.root / TASKS_DIR / app / TEMPLATE
            self._templates[app] = path.read_bytes() if path.is_file() else None
        return self._templates[app]

    def _index(self, key: tuple[str, int]) -> _Frames | None:
        path = self._path(key)
        frames = self._frames[key] = _Frames(path.read_bytes()) if path.is_file() else None
        return frames

    def _fd(self, key: tuple[str, int]) -> int:
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
            return fd
        fd = self._fds[key] = os.open(self._path(key), os.O_RDONLY)
        if len(self._fds) > OPEN_FILES:
            os.close(self._fds.popitem(last=False)[1])
        return fd

    def close(self) -> None:
        """Close the open states files."""
        with self._lock:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()
