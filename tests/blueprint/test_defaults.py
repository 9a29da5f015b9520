"""A blueprint without language keys reads well: words inferred from names, a warning for each (blueprint/defaults.py)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
import yaml

from envsynth.blueprint import from_dict, load_blueprint
from envsynth.blueprint.load import tool_specs
from envsynth.check import check_data
from envsynth.compiler.build import build_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, synthesize

DATA = Path(__file__).parent.parent / "data"
UNSEEN = sorted([*DATA.glob("*.yaml"), *(DATA / "examples").glob("*.yaml"), *(DATA / "audit").glob("*.yaml")])
"""The blueprints outside the catalogue that check the language (bookshop and vet clinic, the v2 examples...):
none of them gives every word, and most give none."""

STOCK_ROOM = {
    "name": "stock_room",
    "title": "Stock Room",
    "category": "other",
    "entities": [
        {"name": "category", "label": "title", "fields": [{"name": "category_id", "type": "id"}, {"name": "title", "type": "string"}]},
        {
            "name": "inventory",
            "fields": [
                {"name": "inventory_id", "type": "id"},
                {"name": "category_id", "type": "ref", "ref": "category"},
                {"name": "unit_price", "type": "money", "label": "price"},
                {"name": "on_hand", "type": "quantity"},
            ],
        },
    ],
    "actions": [
        {
            "name": "search_inventory",
            "kind": "search",
            "entity": "inventory",
            "description": "Search the stock.",
            "filters": [{"field": "category_id"}],
        },
        {
            "name": "add_stock",
            "kind": "create",
            "entity": "inventory",
            "fields": ["category_id", "unit_price"],
            "say": "add stock",
            "description": "Add stock.",
        },
    ],
}

_BROKEN_PLURAL = re.compile(
    r"\b(?:\w*[^aeiou\W]ys|\w+(?:sss|xs|chs|shs|zs)|persons|childs|statuss|addresss|equipments|informations|staffs|datas)\b"
)
_SNAKE = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def _unquoted(text: str) -> str:
    """``text`` without its quoted values (names and ids a person copies as they are)."""
    return _QUOTED.sub('""', text)


def test_a_table_named_by_an_uncountable_noun_is_called_an_item() -> None:
    bp = from_dict(STOCK_ROOM, "stock.yaml")
    assert bp.entity("inventory").called == "inventory item"
    assert bp.entity("category").called is None  # its name is its noun: nothing to fill
    (search, _) = tool_specs(bp)
    assert search.param("category_id").description == "Only inventory items whose category id equals this."


def test_check_warns_once_per_inferred_word_and_passes() -> None:
    report = check_data(STOCK_ROOM, "stock.yaml")
    assert report.ok and report.passes() and not report.passes(strict=True)
    *warnings, ok = report.lines()
    assert ok.startswith("stock.yaml: ok: stock_room: 2 entities")
    assert warnings == [
        'stock.yaml: warning: entities[0].called: table category has no called; using "category" (plural "categories")',
        'stock.yaml: warning: entities[1].called: table inventory has no called; using "inventory item" (plural "inventory items")',
        'stock.yaml: warning: entities[1].fields[3].label: field inventory.on_hand has no label; using "on hand"',
        'stock.yaml: warning: actions[0].say: action search_inventory has no say; requests use its name, "search inventory"',
    ]
    assert report.to_json()["warnings"][1] == {"path": "entities[1].called", "message": warnings[1].split(": ", 3)[3]}


def test_a_blueprint_that_gives_every_word_has_no_warning() -> None:
    data = yaml.safe_load(yaml.safe_dump(STOCK_ROOM))
    for ent in data["entities"]:
        ent["called"] = "stock item" if ent["name"] == "inventory" else "category"
    data["entities"][1]["fields"][3]["label"] = "copies on hand"
    data["actions"][0]["say"] = "find stock"
    report = check_data(data, "stock.yaml")
    assert report.passes(strict=True) and len(report.lines()) == 1
    assert from_dict(data).entity("inventory").called == "stock item"  # a given noun is kept


def test_problems_come_without_warnings() -> None:
    data = yaml.safe_load(yaml.safe_dump(STOCK_ROOM))
    data["actions"][0]["entity"] = "inventroy"
    (line,) = check_data(data, "stock.yaml").lines()
    assert "warning" not in line and "inventroy" in line


@pytest.mark.parametrize("path", UNSEEN, ids=lambda p: p.name)
def test_unseen_blueprints_read_without_broken_plurals_or_names(path: Path) -> None:
    bp = load_blueprint(path)
    with tempfile.TemporaryDirectory() as out:
        app = build_app(bp, Path(out), seed=0).app
    texts = [p.description for s in app.specs for p in s.params] + [c.message for s in app.specs for c in s.pre if c.message]
    graph = build_graph(app.specs)
    tasks = [synthesize(app, graph, app_index=0, task_index=t) for t in range(12)]
    instructions = [t[0].instruction for t in tasks if not isinstance(t, Rejection)]
    for text in [*texts, *instructions]:
        plain = _unquoted(re.sub(r"\{[^}]*\}", "", text))  # message placeholders name fields on purpose
        assert not _BROKEN_PLURAL.search(plain), text
    for text in instructions:
        assert not _SNAKE.search(_unquoted(text)), text
