"""Build stage: blueprint -> compiled, procedurally tested app folder (atomic, all or nothing).

A build replaces only what a build wrote: an existing app folder is replaced when its
``app.json`` carries envsynth's provenance and it holds nothing but an app's own files
(:data:`APP_FILES`, their temporary files, Python's cache of ``tools.py``). A folder
holding other files, or whose schema.sql or tools.py were edited, is kept as it is unless
``force`` (then the app's own files are replaced and the others kept); a folder envsynth
did not write is never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from envsynth import __version__
from envsynth.blueprint.models import Blueprint
from envsynth.compiler.compile import app_files, canonical_json, compile_app, sha256, write_files
from envsynth.errors import EnvsynthError
from envsynth.files import clean_temps, is_temp_of
from envsynth.runtime.app import App
from envsynth.testing.procedural import TestReport, test_app

if TYPE_CHECKING:
    from envsynth.graph.model import ToolGraph


class AppStage(Protocol):
    """What a builder adds to an app after its graph stage and before the folder is sealed.

    The procedural builder adds nothing; the LLM builder proposes dependency edges (each kept
    only if a chain through it executes) and records its operational metrics in the app's
    provenance. The app folder is written once, with the stage's graph and provenance in it.
    """

    builder: str
    """The builder's name, recorded as ``provenance.builder``."""

    def seal(self, app: App, graph: ToolGraph) -> tuple[ToolGraph, dict[str, Any]]:
        """The graph to write and the provenance entries to add, for the tested ``app``."""
        ...


APP_FILES = ("app.json", "schema.sql", "tools.py", "state.db", "tests.json", "graph.json")
"""The files a build writes into an app folder."""


class BuildError(EnvsynthError, RuntimeError):
    """An app whose procedural tests did not all pass; ``report`` has the verdicts."""

    def __init__(self, message: str, report: TestReport | None = None) -> None:
        super().__init__(message)
        self.report = report


class FolderInUseError(EnvsynthError, ValueError):
    """The folder a build would write an app into holds files envsynth did not write.

    The message is one line: the folder, the files in the way, and what to do.
    """


@dataclass
class BuiltApp:
    app: App
    report: TestReport
    path: Path


def edited(folder: Path) -> bool:
    """Whether schema.sql or tools.py differ from what the build wrote (their provenance's content_hash).

    Checked for apps of this envsynth version only (another version may hash differently).
    """
    try:
        manifest = json.loads((folder / "app.json").read_text(encoding="utf-8"))
        prov = manifest["provenance"]
        if prov.get("envsynth_version") != __version__:
            return False
        text = (folder / "schema.sql").read_text(encoding="utf-8") + (folder / "tools.py").read_text(encoding="utf-8")
        return bool(prov["content_hash"] != sha256(canonical_json(manifest["blueprint"]) + text + str(prov["seed"])))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return True


def _written_by_envsynth(folder: Path) -> bool:
    """Whether ``folder`` holds an ``app.json`` with envsynth's provenance (its marker)."""
    try:
        data = json.loads((folder / "app.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    prov = data.get("provenance") if isinstance(data, dict) else None
    return isinstance(prov, dict) and "envsynth_version" in prov


def _own(entry: Path) -> bool:
    """Whether a build wrote ``entry`` of an app folder: an app file, a temporary one, Python's cache of tools.py."""
    if entry.is_symlink():
        return False
    if entry.name in APP_FILES:
        return entry.is_file()
    if any(is_temp_of(entry.name, f) for f in APP_FILES):
        return True
    if entry.name == "__pycache__" and entry.is_dir():
        return all(p.is_file() and p.name.startswith("tools.") and p.suffix == ".pyc" for p in entry.iterdir())
    return False


def foreign_files(folder: Path) -> list[str]:
    """The names in an app folder that no build wrote, sorted."""
    return sorted(p.name for p in folder.iterdir() if not _own(p))


def check_replaceable(folder: Path, *, force: bool = False) -> None:
    """Check that writing an app at ``folder`` deletes nothing a build did not write.

    Raises:
        FolderInUseError: ``folder`` is not an app folder envsynth wrote (with or without
            ``force``); or, without ``force``, it holds other files too, or its schema.sql
            or tools.py were edited after the build.
    """
    if not folder.exists() and not folder.is_symlink():
        return
    if folder.is_symlink() or not folder.is_dir() or not _written_by_envsynth(folder):
        raise FolderInUseError(
            f"{folder} exists and is not an app folder written by envsynth (no app.json with envsynth's provenance);"
            " move it away or build into another folder"
        )
    if force:
        return
    extra = foreign_files(folder)
    if extra:
        shown = ", ".join(extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise FolderInUseError(
            f"{folder} holds files envsynth did not write ({shown}); move them away, or rebuild with --force"
            " to replace only the app's own files and keep them"
        )
    if edited(folder):
        raise FolderInUseError(
            f"{folder}: schema.sql or tools.py was edited since the build (it no longer matches app.json's content_hash);"
            " copy your changes elsewhere, or rebuild with --force to replace them"
        )


def _install(tmp: Path, final: Path, force: bool) -> None:
    """Put the app folder written in ``tmp`` at ``final``, deleting only what a build wrote there."""
    check_replaceable(final, force=force)
    if not final.exists():
        tmp.rename(final)
        return
    if not foreign_files(final):
        shutil.rmtree(final)
        tmp.rename(final)
        return
    # --force over a folder with the user's files: they stay; the app's own files are replaced one by
    # one, app.json last (an interrupted replacement keeps the old provenance, so it is redone)
    for p in final.iterdir():
        if not _own(p) or (tmp / p.name).exists():
            continue
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
    for name in sorted(os.listdir(tmp), key=lambda n: n == "app.json"):
        os.replace(tmp / name, final / name)
    tmp.rmdir()


def _write_app(root: Path, final: Path, files: dict[str, bytes], force: bool) -> None:
    """Write ``files`` into a temporary folder next to ``final``, then install it there."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    try:
        write_files(tmp, files)
        _install(tmp, final, force)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def build_app(
    bp: Blueprint, out_root: str | Path, seed: int = 0, *, keep_failed: bool = False, force: bool = False, stage: AppStage | None = None
) -> BuiltApp:
    """Compile ``bp``, run its procedural tests and write ``out_root/<name>/``.

    The folder appears only when every verdict is as expected: the app is written to a
    temporary folder next to it and renamed into place. On failure nothing is left
    behind (unless ``keep_failed``, which keeps ``<name>.failed/`` for inspection).
    Temporary folders an earlier, killed build of this app left in ``out_root`` are removed.

    Args:
        bp: the blueprint.
        out_root: the folder the app folder goes into.
        seed: the seed of sample data, fixtures and ids.
        keep_failed: keep the folder of an app whose tests fail, as ``<name>.failed/``.
        force: replace the app's own files in a folder that also holds other files
            (they are kept); without it such a folder is refused.
        stage: the builder's last stage before the folder is sealed (None: the procedural
            builder's, which adds nothing).

    Raises:
        BuildError: some test case ended in an Unexpected Failure or a wrong verdict.
        FolderInUseError: ``out_root/<name>`` (or ``<name>.failed`` with ``keep_failed``)
            holds files envsynth did not write; see :func:`check_replaceable`.
    """
    root = Path(out_root)
    final = root / bp.name
    check_replaceable(final, force=force)
    root.mkdir(parents=True, exist_ok=True)
    clean_temps(root, [bp.name, f"{bp.name}.failed"])
    app = compile_app(bp, seed, builder=stage.builder if stage is not None else "procedural")
    report = test_app(app, seed)
    from envsynth.graph import build_graph  # the graph stage reads only the tested app

    graph = build_graph(app)
    if report.passed and stage is not None:
        graph, provenance = stage.seal(app, graph)
        app.manifest["provenance"].update(provenance)
    files = app_files(app)
    files["tests.json"] = canonical_json(report.to_json()).encode()
    files["graph.json"] = graph.to_json().encode()
    if not report.passed:
        if keep_failed:
            _write_app(root, root / f"{bp.name}.failed", files, force)
        bad = report.failures
        first = bad[0]
        raise BuildError(
            f"{bp.name}: {len(bad)} of {len(report.verdicts)} test cases failed; first: {first.tool} [{first.case}] "
            f"expected {first.expected}, got {first.observed}: {first.detail[-300:]}",
            report,
        )
    _write_app(root, final, files, force)
    app.path = final
    return BuiltApp(app=app, report=report, path=final)
