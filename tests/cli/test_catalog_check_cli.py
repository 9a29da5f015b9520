"""`envsynth catalog` lists each app's numbers; `envsynth check` prints warnings that pass unless --strict."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

from typer.testing import CliRunner

from envsynth import catalog
from envsynth.cli import app

STOCK_ROOM = Path(__file__).parent.parent / "data" / "stock_room.yaml"


def _invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


def test_catalog_json_has_category_tools_tables_and_policy_rules() -> None:
    rc, out = _invoke("catalog", "--json")
    assert rc == 0
    rows = json.loads(out)
    assert [r["name"] for r in rows] == catalog.names()
    assert all(list(r) == list(catalog.SUMMARY_FIELDS) for r in rows)
    by_name = {r["name"]: r for r in rows}
    air = catalog.load("northstar_air")
    assert by_name["northstar_air"]["policy_rules"] == len(air.policy.rules) > 0  # type: ignore[union-attr]
    assert by_name["northstar_air"]["category"] == "shopping" and by_name["northstar_air"]["tables"] == len(air.entities)
    assert all(r["policy_rules"] == 0 for r in rows if catalog.load(r["name"]).policy is None)
    assert all(0 < r["writes"] < r["tools"] for r in rows)


def test_catalog_table_shows_the_same_numbers() -> None:
    rc, out = _invoke("catalog")
    assert rc == 0 and "policy rules" in out
    for r in catalog.summaries():
        line = next(x for x in out.splitlines() if f"│ {r['name']} " in x)
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        assert cells == [r["name"], r["title"], r["category"], str(r["tables"]), str(r["tools"]), str(r["writes"]), str(r["policy_rules"])]


def test_catalog_table_groups_the_apps_by_category() -> None:
    """The apps of one category are listed together, in SynthAPI's order of categories, a rule line between two."""
    from envsynth.blueprint.models import CATEGORIES

    rc, out = _invoke("catalog")
    assert rc == 0
    lines = out.splitlines()
    names = {r["name"]: r["category"] for r in catalog.summaries()}
    listed = [(i, n) for i, x in enumerate(lines) for n in names if x.startswith(f"│ {n} ")]
    cats = [names[n] for _, n in listed]
    assert len(listed) == len(names) and cats == sorted(cats, key=CATEGORIES.index)
    for (i, a), (j, b) in pairwise(listed):
        assert (j - i == 2 and lines[i + 1].startswith("├")) == (names[a] != names[b]), (a, b)
        assert names[a] != names[b] or a < b


def test_check_warnings_pass_and_strict_fails_on_them() -> None:
    rc, out = _invoke("check", str(STOCK_ROOM))
    lines = out.splitlines()
    assert rc == 0
    assert lines[-1] == f"{STOCK_ROOM}: ok: stock_room: 3 entities, 5 actions, 5 tools (3 write, 2 read)"
    assert f'{STOCK_ROOM}: warning: entities[1].called: table person has no called; using "person" (plural "people")' in lines
    assert f'{STOCK_ROOM}: warning: entities[2].fields[3].label: field inventory.unit_price has no label; using "unit price"' in lines
    rc, strict = _invoke("check", "--strict", str(STOCK_ROOM))
    assert rc == 2 and strict == out


def test_check_json_lists_warnings_and_strict_sets_ok() -> None:
    rc, out = _invoke("check", "--json", str(STOCK_ROOM))
    report = json.loads(out)
    assert rc == 0 and report["ok"] is True
    (f,) = report["files"]
    assert f["ok"] is True and f["problems"] == [] and len(f["warnings"]) == 13
    assert f["warnings"][0] == {
        "path": "entities[0].called",
        "message": 'table category has no called; using "category" (plural "categories")',
    }
    rc, out = _invoke("check", "--json", "--strict", str(STOCK_ROOM))
    assert rc == 2 and json.loads(out)["ok"] is False


def test_a_shipped_app_checks_without_warnings_even_when_strict() -> None:
    path = next(e.path for e in catalog.entries() if e.name == "juniper_goods")
    rc, out = _invoke("check", "--strict", str(path))
    assert rc == 0 and len(out.splitlines()) == 1, out
