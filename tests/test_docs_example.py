"""The worked example of docs/blueprints.md, written only from the docs, builds and passes."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from envsynth import build_app, load_blueprint

ROOT = Path(__file__).parent.parent


def test_docs_worked_example_is_the_tested_file() -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.S) if "name: vet_clinic" in b]
    assert blocks, "the worked example is missing from docs/blueprints.md"
    assert yaml.safe_load(blocks[0]) == yaml.safe_load((ROOT / "tests" / "data" / "vet_clinic.yaml").read_text())


def test_docs_worked_example_builds(tmp_path: Path) -> None:
    built = build_app(load_blueprint(ROOT / "tests" / "data" / "vet_clinic.yaml"), tmp_path)
    assert built.report.passed
    assert built.report.counts()["unexpected_failure"] == 0
    assert {s.kind for s in built.app.specs} >= {"get", "search", "create", "update", "transition", "book", "aggregate"}
