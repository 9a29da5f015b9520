"""Where things live in a corpus folder, and small file helpers shared by its stages.

::

    OUT/corpus.json                      the manifest (written last)
    OUT/apps/<app>/                      app folders, as ``envsynth build`` writes them
    OUT/tasks/<app>/state.json           what this app's tasks are built from (checked on resume)
    OUT/tasks/<app>/attempts.jsonl       one line per attempted task index: admitted or rejected
    OUT/tasks/<app>/shard-00000.jsonl    admitted tasks, one Task per line, SHARD_SIZE per shard
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

MANIFEST = "corpus.json"
APPS_DIR = "apps"
TASKS_DIR = "tasks"
STATE_FILE = "state.json"
ATTEMPTS_FILE = "attempts.jsonl"
SHARD_SIZE = 256
FORMAT = "envsynth-corpus"
FORMAT_VERSION = 3  # 3: tasks carry a scenario; 2: task hashes over the record's JSON in field order (1: over key-sorted JSON)


def attempt_budget(tasks_per_app: int) -> int:
    """How many task indexes an app may try before giving up on reaching ``tasks_per_app``."""
    return 4 * tasks_per_app + 20


def shard_name(number: int) -> str:
    """File name of shard ``number`` (``shard-00000.jsonl``)."""
    return f"shard-{number:05d}.jsonl"


def shard_paths(folder: Path) -> list[Path]:
    """The shard files in ``folder``, in order."""
    return sorted(folder.glob("shard-[0-9][0-9][0-9][0-9][0-9].jsonl"))


_TEMP_SUFFIX = re.compile(r"\.[a-z0-9_]{8}")
"""The random part ``tempfile`` gives ``mkstemp``/``mkdtemp`` names: a dot, then 8 of a-z, 0-9, _."""


def is_temp_of(name: str, target: str) -> bool:
    """Whether ``name`` is a temporary file or folder envsynth makes next to ``target``: ``.<target>.<8 chars>``.

    :func:`write_atomic` writes ``.<file>.<random>`` before renaming it onto the file, and
    :func:`envsynth.compiler.build.build_app` writes an app into ``.<app>.<random>/`` before
    renaming it into place; a process killed in between leaves them behind.
    """
    prefix = f".{target}"
    return name.startswith(prefix) and _TEMP_SUFFIX.fullmatch(name[len(prefix) :]) is not None


def clean_temps(folder: Path, targets: Iterable[str]) -> list[Path]:
    """Remove the temporary files and folders a killed write of ``targets`` left in ``folder``.

    Only names of the exact form :func:`is_temp_of` describes are removed, nothing else.

    Returns:
        What was removed.
    """
    if not folder.is_dir():
        return []
    names = list(targets)
    removed = []
    for p in folder.iterdir():
        if any(is_temp_of(p.name, t) for t in names):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
            removed.append(p)
    return removed


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a synced temporary file and a rename.

    A file that already holds exactly ``data`` is left alone (bytes and mtime unchanged).
    """
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
