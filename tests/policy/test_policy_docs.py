"""docs/blueprints.md 11.8 and 11.9 quote tests/data/examples/policy.yaml verbatim, and what they
say the tools become is what the example builds."""

from __future__ import annotations

import re
from pathlib import Path

from envsynth import load_blueprint
from envsynth.blueprint.load import tool_specs

ROOT = Path(__file__).parent.parent.parent
EXAMPLE = ROOT / "tests" / "data" / "examples" / "policy.yaml"


def _section(title: str) -> str:
    doc = (ROOT / "docs" / "blueprints.md").read_text(encoding="utf-8")
    start = doc.index(f"### {title}")
    end = doc.find("\n### ", start + 1)
    return doc[start : end if end != -1 else len(doc)]


def _yaml_blocks(section: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", section, flags=re.S)


def test_sections_quote_the_example_verbatim() -> None:
    example = EXAMPLE.read_text(encoding="utf-8")
    for title in ("11.8 Policy", "11.9 Authorization"):
        blocks = _yaml_blocks(_section(title))
        assert blocks, title
        for block in blocks:
            assert block in example, (title, block[:80])


def test_the_listed_checks_are_what_the_example_builds() -> None:
    specs = {s.name: s for s in tool_specs(load_blueprint(EXAMPLE))}
    text = _section("11.9 Authorization")
    listed = list(re.finditer(r"^(\w+)\(([^)]*)\)\n  checks: (.*)$", text, flags=re.M))
    assert len(listed) == 2
    for m in listed:
        spec = specs[m[1]]
        assert [p.name for p in spec.params] == m[2].split(", ")
        assert [c.id for c in spec.pre] == m[3].split(", ")
