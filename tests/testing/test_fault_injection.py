"""The procedural tester can fail: faults injected into generated tool code are caught."""

from __future__ import annotations

import dataclasses
import re

import pytest

from envsynth.blueprint import load_blueprint
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.testing.procedural import test_app


@pytest.fixture(scope="module")
def app(bookshop_blueprint_path) -> App:  # type: ignore[no-untyped-def]
    return compile_app(load_blueprint(bookshop_blueprint_path), 0)


def _mutant(app: App, old: str, new: str, count: int = 1) -> App:
    assert app.module_source.count(old) >= 1, old
    return dataclasses.replace(app, module_source=app.module_source.replace(old, new, count))


def test_clean_app_passes(app: App) -> None:
    assert test_app(app).passed


def test_wrong_column_updated_is_caught(app: App) -> None:
    bad = _mutant(app, 'UPDATE "book" SET "stock" = ? WHERE', 'UPDATE "book" SET "price" = ? WHERE')
    failures = test_app(bad).failures
    assert any(v.tool == "ship_purchase" and v.kind == "positive" and "unexpected change of book" in v.detail for v in failures)


def test_missing_precondition_check_is_caught(app: App) -> None:
    # drop the state check of pay_purchase: paying a cancelled purchase must now "succeed"
    src = app.module_source
    start = src.index("def pay_purchase(")
    body = src[start:]
    check = re.search(r"    if not \(purchase\['status'\] in .*?\n        raise ToolError\(.*?code='state'\)\n", body)
    assert check is not None
    bad = dataclasses.replace(app, module_source=src[:start] + body.replace(check.group(0), "", 1))
    failures = test_app(bad).failures
    assert [(v.tool, v.case, v.observed) for v in failures] == [("pay_purchase", "violate:state", "success")]


def test_crash_is_caught(app: App) -> None:
    bad = _mutant(app, "purchase_status = 'shipped'", "purchase_status = {}['shipped']")
    failures = test_app(bad).failures
    assert failures and all(v.tool == "ship_purchase" for v in failures)
    assert any(v.observed == "unexpected_failure" and "KeyError" in v.detail for v in failures)


def test_wrong_search_filter_is_caught(app: App) -> None:
    bad = _mutant(app, "'\"genre\" = ?'", "'\"genre\" != ?'")
    assert any(v.tool == "search_books" for v in test_app(bad).failures)


def test_wrong_arithmetic_is_caught(app: App) -> None:
    bad = _mutant(app, "(target['balance'] + amount)", "(target['balance'] + amount + 1)")
    assert any(v.tool == "move_gift_card_balance" and "post-condition" in v.detail for v in test_app(bad).failures)
