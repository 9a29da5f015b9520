"""An apps-only build (``envsynth build OUT`` without tasks) over an :class:`~envsynth.scale.executor.Executor`.

Each app is built by one submitted function into ``OUT/<name>/``; an app depends only on
its blueprint and seed, so the folders are the same whichever worker builds them and in
whatever order. Rows come back in blueprint order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import Any

from envsynth.blueprint.models import Blueprint
from envsynth.compiler.build import FolderInUseError
from envsynth.scale.executor import Executor


def build_one_app(bp: Blueprint, out: str, seed: int, keep_failed: bool, force: bool) -> dict[str, Any]:
    """Build one app into ``out`` (runs on a worker) and return its summary row.

    Returns:
        ``{"name", "ok": True, "tables", "tools", "writes", "cases", "unexpected_failures"}``;
        ``{"name", "ok": False, "error"}`` when its tests fail; ``{"name", "refused"}`` when
        its folder holds files envsynth did not write.
    """
    from envsynth.compiler.build import BuildError, build_app

    try:
        built = build_app(bp, out, seed, keep_failed=keep_failed, force=force)
    except FolderInUseError as exc:
        return {"name": bp.name, "refused": str(exc)}
    except BuildError as exc:
        return {"name": bp.name, "ok": False, "error": str(exc)}
    counts = built.report.counts()
    return {
        "name": bp.name,
        "ok": True,
        "tables": len(bp.entities),
        "tools": len(built.app.specs),
        "writes": sum(s.mode == "write" for s in built.app.specs),
        "cases": counts["cases"],
        "unexpected_failures": counts["unexpected_failure"],
    }


def build_apps(
    bps: Sequence[Blueprint],
    out: str | Path,
    executor: Executor,
    *,
    seed: int = 0,
    keep_failed: bool = False,
    force: bool = False,
    on_start: Callable[[str], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Build every blueprint's app into ``out``, ``executor.slots`` at a time; rows in blueprint order.

    A row is :func:`build_one_app`'s, with ``path`` (``out/<name>``) on a built app.

    Args:
        bps: the blueprints.
        out: the folder the app folders go into (every worker must see it at the same path).
        executor: where the builds run.
        seed: the seed of sample data, fixtures and ids.
        keep_failed: keep ``<name>.failed/`` of an app whose tests fail.
        force: see :func:`envsynth.compiler.build.build_app`.
        on_start: called with an app's name when its build is submitted.
        on_done: called with an app's row when its build ends.

    Raises:
        FolderInUseError: an app folder holds files envsynth did not write (builds not yet
            started are cancelled).
    """
    target = str(Path(out).resolve())
    todo = list(bps)
    rows: dict[str, dict[str, Any]] = {}
    pending: set[Future[dict[str, Any]]] = set()
    try:
        while todo or pending:
            while todo and len(pending) < executor.slots:
                bp = todo.pop(0)
                if on_start is not None:
                    on_start(bp.name)
                pending.add(executor.submit(build_one_app, bp, target, seed, keep_failed, force))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                row = f.result()
                if "refused" in row:
                    raise FolderInUseError(row["refused"])
                if row["ok"]:
                    row = {"name": row["name"], "ok": True, "path": str(Path(out) / row["name"])} | row
                rows[row["name"]] = row
                if on_done is not None:
                    on_done(row)
    finally:
        for f in pending:
            f.cancel()
    return [rows[bp.name] for bp in bps]
