"""Files written safely: atomic writes and the temporaries a killed write leaves behind.

Shared by every stage that writes a folder (app builds, corpus builds).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

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
