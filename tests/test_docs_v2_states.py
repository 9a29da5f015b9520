"""docs/blueprints.md 11.6 and 11.7: the quoted YAML is the text of the example files, the files load and
build, and the messages the sections quote are the ones a user gets."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from envsynth import build_app, load_blueprint
from envsynth.blueprint import BlueprintError, from_dict

ROOT = Path(__file__).parent.parent
DOC = (ROOT / "docs" / "blueprints.md").read_text(encoding="utf-8")
EXAMPLES = ROOT / "tests" / "data" / "examples"


def _section(title: str) -> str:
    start = DOC.index(f"### {title}")
    end = DOC.find("\n### ", start + 4)
    return DOC[start : end if end != -1 else len(DOC)]


def _yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize(
    ("title", "example"),
    [
        ("11.6 State machines on every write", "state_machines.yaml"),
        ("11.7 Correlated sample data and composite keys", "correlated_data.yaml"),
    ],
)
def test_quoted_yaml_is_the_example_file(title: str, example: str) -> None:
    text = (EXAMPLES / example).read_text(encoding="utf-8")
    blocks = _yaml_blocks(_section(title))
    assert blocks
    for block in blocks:
        assert block in text, f"{title}: quoted block not in {example}:\n{block}"
    assert f"tests/data/examples/{example}" in _section(title)


@pytest.mark.parametrize("example", ["state_machines.yaml", "correlated_data.yaml"])
def test_examples_load_and_build(example: str, tmp_path: Path) -> None:
    built = build_app(load_blueprint(EXAMPLES / example), tmp_path)
    assert built.report.passed
    assert built.report.counts()["not_constructed"] == 0


def test_the_quoted_load_error_is_the_real_one() -> None:
    quoted = re.search(r"```\n(actions\[4\]\.also\.application\.status: .*?)\n```", _section("11.6 State machines on every write"), re.S)
    assert quoted is not None
    d = yaml.safe_load((EXAMPLES / "state_machines.yaml").read_text())
    d = copy.deepcopy(d)
    next(a for a in d["actions"] if a["name"] == "revoke_permit")["pre"] = ["application.status in ['submitted', 'review']"]
    with pytest.raises(BlueprintError) as err:
        from_dict(d)
    assert str(err.value) == quoted.group(1)


def test_the_quoted_rejections_are_in_the_doc() -> None:
    # the messages are asserted on real calls in tests/blueprint/test_state_machines.py
    section = " ".join(_section("11.6 State machines on every write").split())
    assert "This application is 'review'; it cannot become 'closed' (only from 'approved', 'rejected', 'closed')." in section
    assert "This application is 'review'; it cannot move to 'closed' (it can only move to 'approved', 'rejected')." in section
