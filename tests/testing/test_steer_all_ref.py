"""The tester breaks ``all(entity, where(...), ref_field=...)`` by moving a selected row elsewhere (docs/blueprints.md 11.4)."""

from __future__ import annotations

import json
from pathlib import Path

from envsynth.blueprint.load import load_blueprint
from envsynth.compiler.build import build_app

SHOP = """
name: tiny_returns
title: Tiny Returns
category: shopping
description: Orders hold lines; several lines of one order are returned in one call.
entities:
  - name: shop_order
    id_prefix: ord
    rows: 6
    fields:
      - {name: order_id, type: id}
      - {name: status, type: state, states: [delivered, returning], transitions: {delivered: [returning]}}
  - name: line
    id_prefix: lin
    rows: 14
    fields:
      - {name: line_id, type: id}
      - {name: order_id, type: ref, ref: shop_order}
      - {name: price, type: money, gen: {range: [5, 50]}}
actions:
  - name: return_lines
    kind: transition
    entity: shop_order
    to: returning
    description: Return several lines of a delivered order.
    params:
      - {name: line_ids, type: list, ref: line, alias: lines, min_items: 1, max_items: 3}
    pre:
      - check: "all(line, where(line_id=line_ids), order_id=shop_order.order_id)"
        message: "Every line must be on this order."
"""


def test_a_line_of_another_order_violates_the_all_condition(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(SHOP)
    built = build_app(load_blueprint(path), tmp_path / "out", seed=0)
    verdicts = json.loads((built.path / "tests.json").read_text())["verdicts"]
    case = next(v for v in verdicts if v["tool"] == "return_lines" and v["case"] == "violate:pre[0]")
    assert (case["observed"], case["ok"]) == ("anticipated_rejection", True), case
