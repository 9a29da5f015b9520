"""A corpus build never deletes files it did not write, and cleans the temporary files a killed build left."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from corpus_helpers import COMPOSITION, snapshot

from envsynth.blueprint.models import Blueprint
from envsynth.corpus import CorpusError, CorpusSummary, build_corpus


def _stale(app_dir: Path) -> None:
    """Make the app's provenance name another seed, so the next build rebuilds it."""
    data = json.loads((app_dir / "app.json").read_text())
    data["provenance"]["seed"] = 99
    (app_dir / "app.json").write_text(json.dumps(data))


def test_an_app_folder_with_user_files_is_not_replaced_without_force(
    with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]
) -> None:
    out = with_apps("out")
    app = out / "apps" / "corner_bookshop"
    _stale(app)
    (app / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match=r"corner_bookshop holds files envsynth did not write \(notes.txt\).*--force"):
        build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert (app / "notes.txt").read_text() == "mine" and json.loads((app / "app.json").read_text())["provenance"]["seed"] == 99
    build_corpus(out, blueprints=blueprints, **COMPOSITION, force=True)
    assert (app / "notes.txt").read_text() == "mine"
    got = snapshot(out)
    assert got.pop("apps/corner_bookshop/notes.txt") == b"mine"
    assert got == snapshot(reference.path)


@pytest.mark.parametrize("force", [False, True])
def test_a_folder_envsynth_did_not_write_is_never_replaced(
    with_apps: Callable[[str], Path], blueprints: list[Blueprint], force: bool
) -> None:
    out = with_apps("out")
    app = out / "apps" / "corner_bookshop"
    for p in app.iterdir():
        p.unlink()
    (app / "thesis.tex").write_text("years of work")
    with pytest.raises(CorpusError, match="not an app folder written by envsynth"):
        build_corpus(out, blueprints=blueprints, **COMPOSITION, force=force)
    assert [p.name for p in app.iterdir()] == ["thesis.tex"]


def test_temporary_files_of_a_killed_build_are_cleaned(
    with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]
) -> None:
    out = with_apps("out")
    build_corpus(out, blueprints=blueprints, **COMPOSITION)
    # what a build killed inside an atomic write or an app's rename leaves behind
    left = [
        out / "tasks" / "tempo_music" / ".state.json.k2x_9abq",
        out / ".corpus.json.a1b2c3d4",
        out / "apps" / "corner_bookshop" / ".app.json.zz00zz00",
    ]
    for p in left:
        p.write_text("partial")
    tmp_app = out / "apps" / ".tempo_music.q1w2e3r4"
    tmp_app.mkdir()
    (tmp_app / "tools.py").write_text("partial")
    # the user's files that merely look alike are kept
    kept = [out / "tasks" / "tempo_music" / ".state.json.bak", out / "apps" / ".tempo_music.notes", out / "notes.corpus.json.a1b2c3d4"]
    for p in kept:
        p.write_text("mine")
    build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert not any(p.exists() for p in [*left, tmp_app])
    assert all(p.read_text() == "mine" for p in kept)
    for p in kept:
        p.unlink()
    assert snapshot(out) == snapshot(reference.path)


def test_an_edited_app_is_kept_unless_built_by_another_version(
    tmp_path: Path, reference: CorpusSummary, blueprints: list[Blueprint]
) -> None:
    from envsynth.compiler.build import FolderInUseError, build_app

    app = tmp_path / "corner_bookshop"
    shutil.copytree(reference.path / "apps" / "corner_bookshop", app)
    original = (app / "tools.py").read_text()
    (app / "tools.py").write_text(original + "# my fix\n")
    with pytest.raises(FolderInUseError, match=r"tools\.py was edited"):
        build_app(blueprints[1], tmp_path)
    assert (app / "tools.py").read_text().endswith("# my fix\n")
    data = json.loads((app / "app.json").read_text())
    data["provenance"]["envsynth_version"] = "0.0.1"  # an app of another version: its hash is not this version's to check
    (app / "app.json").write_text(json.dumps(data))
    build_app(blueprints[1], tmp_path)
    assert (app / "tools.py").read_text() == original
