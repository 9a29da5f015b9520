"""Where things live in a corpus folder, and small file helpers shared by its stages.

::

    OUT/corpus.json                      the manifest (written last)
    OUT/apps/<app>/                      app folders, as ``envsynth build`` writes them
    OUT/tasks/<app>/state.json           what this app's tasks are built from (checked on resume)
    OUT/tasks/<app>/attempts.jsonl       one line per attempted task index: admitted or rejected
    OUT/tasks/<app>/shard-00000.jsonl    admitted tasks, one Task per line, SHARD_SIZE per shard
    OUT/tasks/index.sqlite               the task index: id, app, kind, coordinates and shard offset of each
                                         task, in corpus order (written before the manifest; see corpus/index.py)
    OUT/tasks/<app>/states-00000.bin     their initial states as SQLite bytes (see corpus/states.py)
    OUT/tasks/<app>/states-template.db   the app's empty database the stored states are told apart from
"""

from __future__ import annotations

from pathlib import Path

MANIFEST = "corpus.json"
APPS_DIR = "apps"
TASKS_DIR = "tasks"
STATE_FILE = "state.json"
ATTEMPTS_FILE = "attempts.jsonl"
INDEX_FILE = "index.sqlite"
SHARD_SIZE = 256
FORMAT = "envsynth-corpus"
FORMAT_VERSION = 4  # 4: tasks carry difficulty, tier and constructs; 3: tasks carry a scenario; 2: task hashes over the record's JSON in field order (1: over key-sorted JSON)


def attempt_budget(tasks_per_app: int) -> int:
    """How many task indexes an app may try before giving up on reaching ``tasks_per_app``."""
    return 4 * tasks_per_app + 20


def shard_name(number: int) -> str:
    """File name of shard ``number`` (``shard-00000.jsonl``)."""
    return f"shard-{number:05d}.jsonl"


def shard_paths(folder: Path) -> list[Path]:
    """The shard files in ``folder``, in order."""
    return sorted(folder.glob("shard-[0-9][0-9][0-9][0-9][0-9].jsonl"))
