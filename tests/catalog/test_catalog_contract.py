"""One contract over the whole shipped catalogue (STYLE.md, point 3)."""

from __future__ import annotations

from itertools import combinations

import pytest

from envsynth import catalog
from envsynth.blueprint.load import tool_specs
from envsynth.compiler.build import BuiltApp, build_app
from envsynth.compiler.compile import app_files, compile_app

CATEGORIES = {"shopping", "music", "productivity", "finance", "fitness", "messaging", "utilities", "social"}
"""SynthAPI's eight app categories: every shipped app is in one of them."""
MOST_SHARED = 0.30
"""The largest share of its tool names an app may have in common with another shipped app."""


def test_every_category_has_apps_and_every_app_a_category() -> None:
    cats = [catalog.load(n).category for n in catalog.names()]
    assert set(cats) == CATEGORIES


def test_no_two_apps_share_more_than_30_percent_of_their_tool_names() -> None:
    tools = {n: {s.name for s in tool_specs(catalog.load(n))} for n in catalog.names()}
    shares = {(a, b): len(tools[a] & tools[b]) / min(len(tools[a]), len(tools[b])) for a, b in combinations(tools, 2)}
    assert max(shares.values()) <= MOST_SHARED, sorted(shares.items(), key=lambda kv: -kv[1])[:3]


def test_every_app_has_one_place_in_the_catalogue_order() -> None:
    """order.txt lists each shipped file once (its index in a corpus), and nothing else; the first ten are the apps of the
    first catalogue, so their corpora's tasks are those they always were."""
    stems = sorted(p.stem for p in catalog.CATALOG_DIR.glob("*.yaml"))
    listed = catalog.order()
    assert sorted(listed) == stems and len(set(listed)) == len(listed)
    assert [e.path.stem for e in catalog.entries()] == listed
    first = ["airline", "finance", "fitness", "messaging", "music", "productivity", "retail", "shopping", "social", "utilities"]
    assert listed[:10] == first


@pytest.mark.parametrize("name", catalog.names())
def test_app_contract(name: str, built_catalog: dict[str, BuiltApp]) -> None:
    built = built_catalog[name]
    bp, specs, report = built.app.blueprint, built.app.specs, built.report
    # size and shape the catalogue promises
    assert 5 <= len(bp.entities) <= 20
    assert len(specs) >= 30
    writes = [s for s in specs if s.mode == "write"]
    assert len(writes) * 3 >= len(specs)
    machines = [e for e in bp.entities if any(f.type == "state" for f in e.fields)]
    assert len(machines) >= 2
    assert any(s.kind in ("transfer", "book") for s in specs)
    # every tool has positive and negative cases, all verdicts as expected
    by_tool = report.by_tool()
    for s in specs:
        assert by_tool[s.name]["positive"] >= 1, s.name
        assert by_tool[s.name]["negative"] >= 1, s.name
    assert report.passed, [(v.tool, v.case, v.detail) for v in report.failures]
    counts = report.counts()
    assert counts["unexpected_failure"] == 0
    # every declared or implicit pre-condition got its own negative case
    cases = {(v.tool, v.case) for v in report.verdicts}
    for s in specs:
        for c in s.pre:
            if c.id.startswith("exists:") and s.binding(c.id.split(":", 1)[1]).param is None:
                continue
            assert (s.name, f"violate:{c.id}") in cases, (s.name, c.id)
    # the folder is complete
    for f in ("app.json", "schema.sql", "tools.py", "state.db", "tests.json", "graph.json"):
        assert (built.path / f).is_file()


@pytest.mark.parametrize("name", catalog.names())
def test_build_is_deterministic(name: str, built_catalog: dict[str, BuiltApp], tmp_path) -> None:  # type: ignore[no-untyped-def]
    first = built_catalog[name].path
    again = build_app(catalog.load(name), tmp_path, seed=0).path
    for f in ("app.json", "schema.sql", "tools.py", "state.db", "tests.json", "graph.json"):
        assert (first / f).read_bytes() == (again / f).read_bytes(), f


def test_seed_changes_data_not_code() -> None:
    bp = catalog.load(catalog.names()[0])
    a, b = app_files(compile_app(bp, 0)), app_files(compile_app(bp, 1))
    assert a["tools.py"] == b["tools.py"] and a["schema.sql"] == b["schema.sql"]
    assert a["state.db"] != b["state.db"]


def test_catalogue_lists_the_airline_and_retail_domains() -> None:
    names = catalog.names()
    assert len(names) == len(set(names))
    assert catalog.load("northstar_air").category == catalog.load("juniper_goods").category == "shopping"


@pytest.mark.parametrize("name", catalog.names())
def test_language_v2_contract(name: str, built_catalog: dict[str, BuiltApp]) -> None:
    """The v2 keys hold across the catalogue: the blueprint checks clean, every enforced policy rule and
    rule left to the agent is not one, and an app with authorization checks ownership."""
    from envsynth.blueprint.policy import agent_rules
    from envsynth.check import check_file

    built = built_catalog[name]
    bp, specs = built.app.blueprint, built.app.specs
    lines = check_file(next(e.path for e in catalog.entries() if e.name == name)).lines()
    assert len(lines) == 1 and ": ok: " in lines[0], lines
    by_name = {s.name: s for s in specs}
    if bp.policy is not None:
        assert bp.policy.text.strip()
        for rule in bp.policy.rules:
            for action in rule.actions:
                ids = [c.id for c in by_name[action].pre]
                assert (f"policy:{rule.rule}" in ids) == (rule.check is not None), (rule.rule, action)
        assert {r.rule for r in agent_rules(bp)} == {r.rule for r in bp.policy.rules if r.forbid is not None}
    if bp.authorization is not None:
        assert any(c.id.startswith("auth:") for s in specs for c in s.pre)
