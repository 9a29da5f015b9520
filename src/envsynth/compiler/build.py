"""Build stage: blueprint -> compiled, procedurally tested app folder (atomic, all or nothing)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from envsynth.blueprint.models import Blueprint
from envsynth.compiler.compile import app_files, canonical_json, compile_app, write_files
from envsynth.runtime.app import App
from envsynth.testing.procedural import TestReport, test_app


class BuildError(RuntimeError):
    """An app whose procedural tests did not all pass; ``report`` has the verdicts."""

    def __init__(self, message: str, report: TestReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass
class BuiltApp:
    app: App
    report: TestReport
    path: Path


def build_app(bp: Blueprint, out_root: str | Path, seed: int = 0, *, keep_failed: bool = False) -> BuiltApp:
    """Compile ``bp``, run its procedural tests and write ``out_root/<name>/``.

    The folder appears only when every verdict is as expected: the app is written to a
    temporary folder next to it and renamed into place. On failure nothing is left
    behind (unless ``keep_failed``, which keeps ``<name>.failed/`` for inspection).

    Raises:
        BuildError: some test case ended in an Unexpected Failure or a wrong verdict.
    """
    root = Path(out_root)
    root.mkdir(parents=True, exist_ok=True)
    app = compile_app(bp, seed)
    report = test_app(app, seed)
    files = app_files(app)
    files["tests.json"] = canonical_json(report.to_json()).encode()
    from envsynth.graph import build_graph  # the graph stage reads only the tested app

    files["graph.json"] = build_graph(app).to_json().encode()
    final = root / bp.name
    if not report.passed:
        if keep_failed:
            failed = root / f"{bp.name}.failed"
            shutil.rmtree(failed, ignore_errors=True)
            write_files(failed, files)
        bad = report.failures
        first = bad[0]
        raise BuildError(
            f"{bp.name}: {len(bad)} of {len(report.verdicts)} test cases failed; first: {first.tool} [{first.case}] "
            f"expected {first.expected}, got {first.observed}: {first.detail[-300:]}",
            report,
        )
    tmp = Path(tempfile.mkdtemp(prefix=f".{bp.name}.", dir=root))
    try:
        write_files(tmp, files)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    app.path = final
    return BuiltApp(app=app, report=report, path=final)
