"""The one build pipeline: typed config, the Builder protocol, one layout for apps-only and task builds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envsynth import load_blueprint
from envsynth.blueprint.models import Blueprint
from envsynth.graph.model import ToolGraph
from envsynth.pipeline import BuildConfig, Builder, ConfigError, LLMOptions, ProceduralBuilder, build
from envsynth.pipeline.console import flag_message
from envsynth.runtime.app import App

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def bookshop() -> Blueprint:
    return load_blueprint(DATA / "bookshop.yaml")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


class _Stamping:
    """A builder whose app stage drops the graph's edges into provenance and records each seal."""

    name = "stamping"
    builder = "stamping"

    def __init__(self, blueprints: list[Blueprint]) -> None:
        self._blueprints = blueprints
        self.sealed: list[str] = []

    @property
    def blueprints(self) -> list[Blueprint]:
        return list(self._blueprints)

    @property
    def app_stage(self) -> _Stamping:
        return self

    def seal(self, app: App, graph: ToolGraph) -> tuple[ToolGraph, dict[str, Any]]:
        self.sealed.append(app.name)
        return graph, {"stamp": {"tools": len(app.specs), "edges": len(graph.edges())}}

    def task_stage(self) -> None:
        return None


def test_a_builders_app_stage_is_sealed_into_the_folder_it_writes(tmp_path: Path, bookshop: Blueprint) -> None:
    builder = _Stamping([bookshop])
    assert isinstance(builder, Builder)  # the protocol a third builder implements
    summary = build(BuildConfig(out=tmp_path / "out"), builder)
    app_dir = tmp_path / "out" / "apps" / bookshop.name
    prov = json.loads((app_dir / "app.json").read_text())["provenance"]
    graph = json.loads((app_dir / "graph.json").read_text())
    assert builder.sealed == [bookshop.name]
    assert prov["builder"] == "stamping" and prov["stamp"]["tools"] == len(App.load(app_dir).specs) > 0
    assert prov["stamp"]["edges"] == len(graph["edges"]) > 0
    assert summary.manifest.composition.tasks_per_app == 0 and summary.records == 0
    # a rerun reuses the sealed app: the stage is not asked again and no byte changes
    before = _files(app_dir)
    build(BuildConfig(out=tmp_path / "out"), builder)
    assert builder.sealed == [bookshop.name] and _files(app_dir) == before


def test_apps_only_is_a_corpus_without_tasks_and_tasks_can_be_added(tmp_path: Path, bookshop: Blueprint) -> None:
    out = tmp_path / "out"
    build(BuildConfig(out=out), ProceduralBuilder([bookshop]))
    assert sorted(p.name for p in out.iterdir()) == ["apps", "corpus.json", "tasks"]
    assert [p.name for p in (out / "tasks").iterdir()] == ["index.sqlite"]  # no task yet: an empty index
    app_before = _files(out / "apps")
    summary = build(BuildConfig(out=out, tasks_per_app=2, states=2), ProceduralBuilder([bookshop]))
    assert summary.records == 4 and (out / "tasks" / bookshop.name).is_dir()
    assert _files(out / "apps") == app_before  # the apps were reused, not rebuilt
    # the same corpus built in one go has the same bytes
    direct = tmp_path / "direct"
    build(BuildConfig(out=direct, tasks_per_app=2, states=2), ProceduralBuilder([bookshop]))
    assert _files(direct / "tasks") == _files(out / "tasks") and _files(direct / "apps") == app_before


def test_an_edited_app_is_rebuilt_not_reused(tmp_path: Path, bookshop: Blueprint) -> None:
    out = tmp_path / "out"
    build(BuildConfig(out=out), ProceduralBuilder([bookshop]))
    tools = out / "apps" / bookshop.name / "tools.py"
    good = tools.read_bytes()
    tools.write_text(good.decode() + "\n# edited\n")
    build(BuildConfig(out=out, force=True), ProceduralBuilder([bookshop]))
    assert tools.read_bytes() == good


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"states": 0}, "states"),
        ({"distractors": 5}, "distractors"),
        ({"tasks_per_app": -1}, "tasks_per_app"),
        ({"workers": -2}, "workers"),
        ({"apps": 0}, "apps"),
        ({"seed": -1}, "seed"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_a_bad_config_names_its_field_and_the_cli_its_flag(tmp_path: Path, values: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        BuildConfig.of(out=tmp_path, **values)
    assert list(info.value.problems) == [field]
    line = flag_message(info.value.problems)
    assert "\n" not in line and (field == "colour" or line.startswith("--"))


def test_an_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="exists and is not a folder"):
        BuildConfig.of(out=tmp_path / "f")


def test_llm_options_are_checked_as_a_whole() -> None:
    with pytest.raises(ConfigError) as info:
        LLMOptions.of(domains=[], tau=2)
    assert set(info.value.problems) == {"domains", "tau"}
    with pytest.raises(ConfigError, match="descriptions given for domains not built"):
        LLMOptions.of(domains=["Job Seeking"], descriptions={"Vet": "a clinic"})
    assert LLMOptions.of(domains=["Job Seeking"]).debug_rounds == 3
