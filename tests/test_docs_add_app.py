"""The example of docs/blueprints.md section 12 (adding an app) is the tested file, checks with warnings only, and builds offline."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from envsynth import build_app
from envsynth.blueprint import from_dict
from envsynth.check import check_data

ROOT = Path(__file__).parent.parent


def _example() -> str:
    """The YAML block of the section "12. Adding an app"."""
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    section = doc.split("## 12. Adding an app", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    return block


def test_the_example_is_the_tested_file() -> None:
    assert _example() == (ROOT / "tests" / "data" / "stock_room.yaml").read_text()


def test_the_example_checks_with_the_warnings_the_doc_quotes() -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    report = check_data(yaml.safe_load(_example()), "stock_room.yaml")
    assert report.ok, report.lines()
    *warnings, ok = report.lines()
    assert f"`{ok}`" in doc
    quoted = (
        'stock_room.yaml: warning: entities[2].called: table inventory has no called; using "inventory item" (plural "inventory items")'
    )
    assert quoted in warnings and f"`{quoted}`" in doc
    assert all(": warning: " in w for w in warnings)


def test_the_example_builds_offline_and_passes(tmp_path: Path) -> None:
    built = build_app(from_dict(yaml.safe_load(_example()), "stock_room.yaml"), tmp_path)
    assert built.report.passed and built.report.counts()["unexpected_failure"] == 0
    assert (built.path / "app.json").is_file()
    search = next(s for s in built.app.specs if s.name == "search_inventory")
    assert search.param("category_id").description == "Only inventory items whose category id equals this."
