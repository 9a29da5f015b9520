"""The task index of a corpus (``tasks/index.sqlite``): where each task record sits, without its body.

One row per task record, in corpus order (app by manifest order, then shard order): its
position, id, app, kind, composition coordinates (app, task and state index) and the shard
file, byte offset and length of its JSON line. :func:`envsynth.corpus.load_corpus` opens this
file instead of parsing every record, so a corpus of 458,752 records opens in well under a
second and holds only SQLite's page cache (see benchmarks/README.md, "Opening a large corpus").

The build writes it (before ``corpus.json``) with the same bytes on every run. A corpus
without it (built before the index existed), or whose index does not match its manifest or
shards, gets one built from the shards when it is opened: written next to the shards for the
next open, or kept in memory with a one-line warning when the folder is read-only.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import tempfile
import threading
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from envsynth.corpus.errors import CorpusError
from envsynth.corpus.layout import INDEX_FILE, TASKS_DIR, shard_paths
from envsynth.corpus.manifest import CorpusManifest

log = logging.getLogger("envsynth.corpus")

INDEX_FORMAT = "envsynth-task-index"
INDEX_VERSION = 1
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE shards (shard INTEGER PRIMARY KEY, path TEXT NOT NULL, size INTEGER NOT NULL)",
    "CREATE TABLE tasks (pos INTEGER PRIMARY KEY, id TEXT NOT NULL, app TEXT NOT NULL, kind TEXT NOT NULL,"
    " app_index INTEGER NOT NULL, task INTEGER NOT NULL, state INTEGER NOT NULL,"
    " shard INTEGER NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL)",
)
_INDEXES = ("CREATE UNIQUE INDEX tasks_id ON tasks (id)", "CREATE INDEX tasks_app_kind ON tasks (app, kind)")


class IndexEntry(NamedTuple):
    """What the index knows of one task record (its body stays in the shard)."""

    id: str
    app: str
    kind: str
    app_index: int
    task: int
    state: int


class Location(NamedTuple):
    """Where a record's JSON line sits: shard number, byte offset and length (without the newline)."""

    shard: int
    offset: int
    length: int


class IndexData(NamedTuple):
    """An index as built from the shards: shard paths (relative to the corpus) with sizes, and rows."""

    shards: list[tuple[str, int]]
    rows: list[tuple[IndexEntry, Location]]


def scan_shards(root: Path, manifest: CorpusManifest) -> IndexData:
    """Read every shard of the corpus in ``root`` and index its records (app order of the manifest).

    Raises:
        CorpusError: a line that is not a task record, or an app whose shards hold another
            number of records than the manifest says (an interrupted build).
    """
    shards: list[tuple[str, int]] = []
    rows: list[tuple[IndexEntry, Location]] = []
    for app in manifest.apps:
        before = len(rows)
        for path in shard_paths(root / app.tasks_path):
            data = path.read_bytes()
            end = data.rfind(b"\n") + 1  # a partial last line is not a record
            rows += _scan_lines(path, data[:end], len(shards))
            shards.append((path.relative_to(root).as_posix(), len(data)))
        if len(rows) - before != app.records:
            held = len(rows) - before
            raise CorpusError(
                f"{root / app.tasks_path}: holds {held} tasks, the manifest says {app.records} (rerun the build to finish it)"
            )
    return IndexData(shards, rows)


def _scan_lines(path: Path, data: bytes, shard: int) -> Iterator[tuple[IndexEntry, Location]]:
    offset = 0
    for number, line in enumerate(data.splitlines()):
        try:
            rec = json.loads(line)
            c = rec["coordinates"]
            entry = IndexEntry(rec["id"], rec["app"], rec["kind"], c["app"], c["task"], c["state"])
        except (ValueError, KeyError, TypeError) as exc:
            why = f"no field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
            raise CorpusError(f"{path}: line {number + 1} is not a task ({why})") from None
        if not all(isinstance(v, str) for v in entry[:3]) or not all(isinstance(v, int) for v in entry[3:]):
            raise CorpusError(f"{path}: line {number + 1} is not a task (id, app, kind or coordinates of the wrong type)")
        yield entry, Location(shard, offset, len(line))
        offset += len(line) + 1


def _fill(conn: sqlite3.Connection, data: IndexData, manifest: CorpusManifest) -> None:
    """Create the schema in an empty database and insert ``data`` (one transaction, fixed order)."""
    for stmt in _SCHEMA:
        conn.execute(stmt)
    meta = {"format": INDEX_FORMAT, "version": str(INDEX_VERSION), "digest": manifest.digest, "records": str(len(data.rows))}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
    conn.executemany("INSERT INTO shards VALUES (?, ?, ?)", ((n, p, s) for n, (p, s) in enumerate(data.shards)))
    conn.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ((n, *e, *loc) for n, (e, loc) in enumerate(data.rows)))
    for stmt in _INDEXES:
        conn.execute(stmt)
    conn.commit()


def write_index(root: Path, manifest: CorpusManifest, data: IndexData | None = None) -> Path:
    """Write ``root/tasks/index.sqlite`` for ``manifest`` (from ``data``, else by scanning the shards).

    The same corpus always gives the same bytes; an index that already holds them is left alone.
    The file is written to a temporary name, synced, then renamed, so a crash leaves the old
    index or none.

    Raises:
        CorpusError: see :func:`scan_shards`.
        OSError: the folder cannot be written.
    """
    data = scan_shards(root, manifest) if data is None else data
    folder = root / TASKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / INDEX_FILE
    fd, tmp = tempfile.mkstemp(prefix=f".{INDEX_FILE}.", dir=folder)
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            conn.execute("PRAGMA journal_mode = OFF")
            _fill(conn, data, manifest)
        finally:
            conn.close()
        new = Path(tmp).read_bytes()
        if path.is_file() and path.read_bytes() == new:
            Path(tmp).unlink()
            return path
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


class TaskIndex:
    """An open task index: positions, ids, entries and record locations, safe to share between threads.

    Open one with :func:`open_index`. The SQLite connection is reopened in a forked child.
    """

    def __init__(self, root: Path, path: Path | None, image: bytes | None = None) -> None:
        self.root = root
        self.path = path
        self._image = image
        self._lock = threading.Lock()
        self._pid = -1
        self._conn: sqlite3.Connection | None = None
        meta = dict(self._query("SELECT key, value FROM meta"))
        self.meta = meta
        self.shards = [(root / p, size) for p, size in self._query("SELECT path, size FROM shards ORDER BY shard")]
        self._len = int(meta.get("records", "-1"))

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            if self._image is not None:
                conn = sqlite3.connect(":memory:", check_same_thread=False)
                conn.deserialize(self._image)
            else:
                # immutable: no file locks per query (the index is only ever replaced whole, by a rename)
                uri = f"{Path(self.path or '').absolute().as_uri()}?mode=ro&immutable=1"
                conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _query(self, sql: str, params: Iterable[object] = ()) -> list[tuple]:
        with self._lock:
            return self._connect().execute(sql, tuple(params)).fetchall()

    def __len__(self) -> int:
        return self._len

    def location(self, pos: int) -> tuple[str, Location]:
        """The id and location of the record at position ``pos`` (0 <= pos < len)."""
        (row,) = self._query("SELECT id, shard, offset, length FROM tasks WHERE pos = ?", (pos,))
        return row[0], Location(*row[1:])

    def locations(self, start: int, stop: int) -> list[tuple[int, str, Location]]:
        """Position, id and location of the records at positions ``start`` to ``stop - 1``, in order."""
        rows = self._query("SELECT pos, id, shard, offset, length FROM tasks WHERE pos >= ? AND pos < ? ORDER BY pos", (start, stop))
        return [(r[0], r[1], Location(*r[2:])) for r in rows]

    def position(self, task_id: str) -> int | None:
        """The position of the record with id ``task_id``, or None."""
        rows = self._query("SELECT pos FROM tasks WHERE id = ?", (task_id,))
        return rows[0][0] if rows else None

    def app_starts(self) -> dict[str, int]:
        """Each app's first position (an app's records are consecutive, in its shards' order)."""
        return {app: int(pos) for app, pos in self._query("SELECT app, MIN(pos) FROM tasks GROUP BY app")}

    def entries(self, start: int, stop: int) -> list[tuple[int, IndexEntry]]:
        """Position and entry of the records at positions ``start`` to ``stop - 1``, in order."""
        sql = "SELECT pos, id, app, kind, app_index, task, state FROM tasks WHERE pos >= ? AND pos < ? ORDER BY pos"
        return [(r[0], IndexEntry(*r[1:])) for r in self._query(sql, (start, stop))]

    def ids(self, start: int, stop: int) -> list[str]:
        """The ids of the records at positions ``start`` to ``stop - 1``, in order."""
        return [r[0] for r in self._query("SELECT id FROM tasks WHERE pos >= ? AND pos < ? ORDER BY pos", (start, stop))]

    def where(self, app: str | None, kind: str | None) -> array:
        """Positions (in order) of the records of ``app`` and ``kind`` (None: any)."""
        conds = [(c, v) for c, v in (("app", app), ("kind", kind)) if v is not None]
        sql = "SELECT pos FROM tasks" + (" WHERE " + " AND ".join(f"{c} = ?" for c, _ in conds) if conds else "") + " ORDER BY pos"
        return array("q", (r[0] for r in self._query(sql, (v for _, v in conds))))

    def close(self) -> None:
        """Close the connection (a later query reopens it)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._conn = None


def _problem(index: TaskIndex, manifest: CorpusManifest) -> str | None:
    """Why ``index`` does not describe the corpus of ``manifest`` as it is on disk, or None."""
    meta = index.meta
    if meta.get("format") != INDEX_FORMAT or meta.get("version") != str(INDEX_VERSION):
        return f"format {meta.get('format')} {meta.get('version')}, expected {INDEX_FORMAT} {INDEX_VERSION}"
    if meta.get("digest") != manifest.digest or len(index) != manifest.records:
        return "it was written for other tasks than the manifest lists"
    for path, size in index.shards:
        try:
            actual = path.stat().st_size
        except OSError:
            return f"shard {path} is missing"
        if actual != size:
            return f"shard {path} has {actual} bytes, the index says {size}"
    expected = [p for a in manifest.apps for p in shard_paths(index.root / a.tasks_path)]
    if [p for p, _ in index.shards] != expected:
        return "the shard files differ from those it lists"
    return None


def _try_open(root: Path, path: Path, manifest: CorpusManifest) -> tuple[TaskIndex | None, str]:
    """The index in ``path`` if it describes the corpus, else None and why not."""
    try:
        index = TaskIndex(root, path)
    except (sqlite3.DatabaseError, ValueError) as exc:
        return None, f"it is unreadable ({exc})"
    try:
        why = _problem(index, manifest)
    except (sqlite3.DatabaseError, ValueError) as exc:
        why = f"it is unreadable ({exc})"
    if why is None:
        return index, ""
    index.close()
    return None, why


def open_index(root: Path, manifest: CorpusManifest) -> TaskIndex:
    """Open the task index of the corpus in ``root``, building it from the shards when missing or stale.

    A rebuilt index is written next to the shards (a one-line warning says why it was
    rebuilt); when the folder cannot be written it is kept in memory (the warning says so,
    and the next open scans the shards again).

    Raises:
        CorpusError: the shards do not hold what the manifest says (see :func:`scan_shards`).
    """
    path = root / TASKS_DIR / INDEX_FILE
    why = "it is missing (a corpus built before the index existed)"
    if path.is_file():
        index, why = _try_open(root, path, manifest)
        if index is not None:
            return index
    data = scan_shards(root, manifest)
    try:
        write_index(root, manifest, data)
    except OSError as exc:
        conn = sqlite3.connect(":memory:")
        _fill(conn, data, manifest)
        image = conn.serialize()
        conn.close()
        log.warning(
            "%s: task index rebuilt from the shards in memory, as %s; it cannot be written (%s), so every open will"
            " scan the shards: make the folder writable and open it once",
            path,
            why,
            exc.strerror or exc,
        )
        return TaskIndex(root, None, image)
    log.warning("%s: task index rebuilt from the shards, as %s", path, why)
    return TaskIndex(root, path)
