"""The builder client's reply cache: one JSON file per reply, keyed by the sha256 of what was asked.

The key covers the model, its default parameters, the messages, the structured-output
mode, the schema, the request's parameters and an optional tag, so a rerun of a pipeline
replays without a model call. Files are written atomically; an unreadable or malformed
file is a miss (and is rewritten by the next call).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from envsynth.llm.types import ChatModel, Message

log = logging.getLogger("envsynth.llmbuild.client")  # the client's logger: its warnings read as they did


def cache_key(
    chat: ChatModel, messages: list[Message], mode: str, schema: dict[str, Any] | None, params: dict[str, Any], tag: str | None = None
) -> str:
    """The sha256 of what a call asks: model, its default params, messages, mode, schema, params (and a tag)."""
    asked: dict[str, Any] = {
        "model": chat.model,
        "model_params": getattr(chat, "params", None) or {},
        "messages": messages,
        "mode": mode,
        "schema": schema,
        "params": params,
    }
    if tag is not None:
        asked["tag"] = tag
    canonical = json.dumps(asked, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def cache_path(cache_dir: Path | None, key: str) -> Path | None:
    """Where the entry of ``key`` is kept (None: no cache)."""
    return None if cache_dir is None else cache_dir / key[:2] / f"{key}.json"


def read_entry(cache_dir: Path | None, key: str) -> dict[str, Any] | None:
    """The cached entry of ``key``; None when absent or unreadable (a corrupt file is a miss)."""
    path = cache_path(cache_dir, key)
    if path is None or not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        log.warning("ignoring the unreadable cache file %s", path)
        return None
    if isinstance(entry, dict) and (isinstance(entry.get("message"), dict) or isinstance(entry.get("rejected"), str)):
        return entry
    log.warning("ignoring the malformed cache file %s", path)
    return None


def write_entry(cache_dir: Path | None, key: str, entry: dict[str, Any]) -> None:
    """Write ``entry`` for ``key`` atomically (a temp file in the same folder, then ``os.replace``)."""
    path = cache_path(cache_dir, key)
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:8]}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entry, f, ensure_ascii=False, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
