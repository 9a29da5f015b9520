"""build_corpus: layout, manifest, determinism, pool = serial, reruns that change nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_helpers import COMPOSITION, snapshot

import envsynth.tasks.synth as synth
from envsynth.blueprint.models import Blueprint
from envsynth.corpus import CorpusError, CorpusSummary, attempt_budget, build_corpus
from envsynth.corpus.app_tasks import SYNTHESIS_ERROR
from envsynth.corpus.tasklog import Attempt


def test_layout_and_manifest(reference: CorpusSummary, blueprints: list[Blueprint]) -> None:
    root = reference.path
    m = json.loads((root / "corpus.json").read_text())
    assert m["format"] == "envsynth-corpus" and m["envsynth_version"] and m["seed"] == 0
    assert m["composition"] == {"apps": 2, "tasks_per_app": 3, "states": 2, "distractors": 2}
    assert [a["name"] for a in m["apps"]] == [b.name for b in blueprints]
    for i, a in enumerate(m["apps"]):
        app_dir, tasks_dir = root / a["path"], root / a["tasks_path"]
        for f in ("app.json", "tools.py", "schema.sql", "state.db", "tests.json", "graph.json"):
            assert (app_dir / f).is_file(), f
        assert a["index"] == i and a["error"] is None
        assert a["admitted"] == 3 and a["records"] == 6 and not a["exhausted"]
        assert a["budget"] == attempt_budget(3) and a["attempts"] == 3 + sum(a["rejections"].values())
        assert (
            [str(p.relative_to(root)) for p in sorted(tasks_dir.glob("shard-*.jsonl"))]
            == a["shards"]
            == [f"{a['tasks_path']}/shard-00000.jsonl"]
        )
        lines = (root / a["shards"][0]).read_text().splitlines()
        assert len(lines) == 6
        coords = [json.loads(line)["coordinates"] for line in lines]
        assert all(c["app"] == i and c["distractors"] == 2 for c in coords)
        assert [c["state"] for c in coords] == [0, 1] * 3
        attempts = [Attempt.model_validate_json(x) for x in (tasks_dir / "attempts.jsonl").read_text().splitlines()]
        assert [x.task for x in attempts] == list(range(a["attempts"]))
        assert sorted({c["task"] for c in coords}) == [x.task for x in attempts if x.admitted]
    adm = m["admission"]
    assert adm["admitted"] == 6 and adm["attempts"] == sum(a["attempts"] for a in m["apps"])
    assert adm["rate"] == pytest.approx(6 / adm["attempts"], abs=1e-6)
    assert sum(adm["rejections"].values()) == adm["attempts"] - 6
    assert m["records"] == 12 and len(m["digest"]) == 64


def test_pool_build_from_nothing_is_byte_identical(tmp_path: Path, reference: CorpusSummary, blueprints: list[Blueprint]) -> None:
    events = []
    summary = build_corpus(tmp_path / "pool", blueprints=blueprints, workers=2, progress=events.append, **COMPOSITION)
    assert snapshot(summary.path) == snapshot(reference.path)
    assert summary.synthesized == 12
    done = [e for e in events if e.phase == "done"]
    assert sorted(e.app for e in done) == sorted(b.name for b in blueprints) and all(e.admitted == 3 for e in done)
    assert {e.phase for e in events} == {"build", "tasks", "done"}


def test_rerun_of_a_finished_build_changes_nothing(
    with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]
) -> None:
    out = with_apps("out")
    first = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert snapshot(out) == snapshot(reference.path) and first.synthesized == 12
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    again = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert again.synthesized == 0 and again.manifest == first.manifest
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == mtimes


def test_first_a_apps_only(with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]) -> None:
    out = with_apps("one")
    s = build_corpus(out, blueprints=blueprints, apps=1, **COMPOSITION)
    assert [a.name for a in s.manifest.apps] == [blueprints[0].name] and s.manifest.composition.apps == 1
    # app 0's tasks do not depend on how many apps follow it
    name = blueprints[0].name
    assert (out / "tasks" / name / "shard-00000.jsonl").read_bytes() == (reference.path / "tasks" / name / "shard-00000.jsonl").read_bytes()


def test_other_options_on_an_existing_corpus_are_refused(with_apps: Callable[[str], Path], blueprints: list[Blueprint]) -> None:
    out = with_apps("out")
    build_corpus(out, blueprints=blueprints, apps=1, **COMPOSITION)
    with pytest.raises(CorpusError, match=r"corpus.json: this corpus was built with .*seed=0"):
        build_corpus(out, blueprints=blueprints, apps=1, **{**COMPOSITION, "seed": 1})
    (out / "corpus.json").unlink()  # the per-app state catches it too
    for workers in (1, 2):
        with pytest.raises(CorpusError, match=r"state.json: these tasks were built with .*states=2"):
            build_corpus(out, blueprints=blueprints, workers=workers, **{**COMPOSITION, "states": 1})
    app_json = out / "apps" / blueprints[0].name / "app.json"
    before = app_json.read_bytes()
    edited = blueprints[0].model_copy(update={"description": "edited"})
    with pytest.raises(CorpusError, match=r"state.json: these tasks were built with blueprint_hash="):
        build_corpus(out, blueprints=[edited], apps=1, **COMPOSITION)
    assert app_json.read_bytes() == before  # refused before the app was rebuilt


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tasks_per_app": -1}, "0 \\(apps only\\) or more"),
        ({"states": 0}, "at least 1"),
        ({"distractors": 5}, "depth from 0 to 4"),
        ({"apps": 0}, "apps must be at least 1"),
        ({"apps": 64}, "apps is 64 but there are only \\d+ blueprints"),
        ({"workers": -1}, "workers"),
    ],
)
def test_bad_composition(tmp_path: Path, blueprints: list[Blueprint], kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_corpus(tmp_path, blueprints=blueprints, **{**COMPOSITION, **kwargs})


def test_duplicate_app_names(tmp_path: Path, blueprints: list[Blueprint]) -> None:
    with pytest.raises(ValueError, match="two blueprints are named"):
        build_corpus(tmp_path, blueprints=[blueprints[1], blueprints[1]], **COMPOSITION)


def test_a_synthesis_exception_is_recorded_not_raised(
    monkeypatch: pytest.MonkeyPatch, with_apps: Callable[[str], Path], blueprints: list[Blueprint]
) -> None:
    real = synth.synthesize

    def buggy(app: Any, graph: Any, **kw: Any) -> Any:
        if kw["task_index"] == 0:
            raise ValueError(f"bug in {object()!r}")
        return real(app, graph, **kw)

    monkeypatch.setattr(synth, "synthesize", buggy)
    out = with_apps("out")
    s = build_corpus(out, blueprints=blueprints, apps=1, **COMPOSITION)
    assert s.manifest.apps[0].admitted == 3 and s.manifest.admission.rejections[SYNTHESIS_ERROR] == 1
    first = Attempt.model_validate_json((out / "tasks" / blueprints[0].name / "attempts.jsonl").read_text().splitlines()[0])
    assert first.reason == SYNTHESIS_ERROR
    assert first.detail.startswith("ValueError: bug in <object object at 0x...>") and "in buggy)" in first.detail
