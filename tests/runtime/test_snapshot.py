"""S0Tables: s0 rows read before the first call that may write a table, diffed at the end; and calls that
only read run without a savepoint. Each case is checked against a plain diff of every table of s0."""

from __future__ import annotations

from typing import Any

import pytest

import envsynth
from envsynth.runtime.app import App
from envsynth.runtime.episode import Episode, writing_tools
from envsynth.runtime.reward import Effects, effects_of
from envsynth.runtime.snapshot import S0Tables
from envsynth.runtime.toolkit import ToolError


@pytest.fixture(scope="module")
def app(bookshop_blueprint_path, tmp_path_factory) -> App:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("apps")
    envsynth.build_app(envsynth.load_blueprint(bookshop_blueprint_path), out)
    return envsynth.load_app(out / "corner_bookshop")


def _first(app: App, table: str, where: str = "1") -> dict[str, Any]:
    ep = app.episode()
    cur = ep.db.execute(f'SELECT * FROM "{table}" WHERE {where} LIMIT 1')
    row = cur.fetchone()
    assert row is not None, f"no {table} row where {where}"
    ep.close()
    return dict(zip([c[0] for c in cur.description], row))


def _play(app: App, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Episode, S0Tables, list[bool]]:
    """The calls on an episode inside one transaction, s0 tables read as TaskEpisode reads them."""
    ep = app.episode(seed=3)
    ep.db.execute("BEGIN")
    s0 = S0Tables(app)
    oks = []
    for tool, args in calls:
        s0.before_call(ep.db, tool)
        oks.append(ep.call(tool, args).ok)
    return ep, s0, oks


def _fast(app: App, ep: Episode, s0: S0Tables) -> Effects:
    before, after = s0.changed_rows(ep.db, app.blueprint, sorted(ep.written))
    return effects_of(app.blueprint, before, after, now=app.now)


def _full(app: App, ep: Episode) -> Effects:
    return effects_of(app.blueprint, app.sample_state, ep.db, now=app.now)


def test_a_table_written_by_several_calls_keeps_its_s0(app: App) -> None:
    book = _first(app, "book")
    purchase = _first(app, "purchase", "status = 'paid'")
    calls = [
        ("restock_book", {"book_id": book["book_id"], "copies": 3}),
        ("get_book", {"book_id": book["book_id"]}),
        ("restock_book", {"book_id": book["book_id"], "copies": 2}),  # read again before this call: the first +3 is lost
        ("ship_purchase", {"purchase_id": purchase["purchase_id"]}),  # writes book too
    ]
    ep, s0, oks = _play(app, calls)
    assert all(oks)
    fast = _fast(app, ep, s0)
    assert fast.to_dict() == _full(app, ep).to_dict()
    stock = fast.tables["book"].updated[book["book_id"]]["stock"]
    shipped = purchase["quantity"] if purchase["book_id"] == book["book_id"] else 0
    assert stock == book["stock"] + 5 - shipped


def test_a_rejected_write_leaves_no_trace(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call that wrote and then was rejected is undone (its tool may write, so it runs in a savepoint)."""
    book = _first(app, "book")
    real = app.functions["restock_book"]

    def write_then_reject(ctx: Any, **args: Any) -> Any:
        real(ctx, **args)
        raise ToolError("changed its mind", code="rejected")

    monkeypatch.setitem(app.functions, "restock_book", write_then_reject)
    ep, s0, oks = _play(app, [("restock_book", {"book_id": book["book_id"], "copies": 7})])
    monkeypatch.setitem(app.functions, "restock_book", real)
    s0.before_call(ep.db, "restock_book")
    assert ep.call("restock_book", {"book_id": book["book_id"], "copies": 1}).ok and oks == [False]
    fast = _fast(app, ep, s0)
    assert fast.to_dict() == _full(app, ep).to_dict()
    assert fast.tables["book"].updated == {book["book_id"]: {"stock": book["stock"] + 1}}


def test_rows_changed_back_added_and_deleted(app: App) -> None:
    customer = _first(app, "customer")
    card = _first(app, "gift_card")
    calls = [
        ("update_customer", {"customer_id": customer["customer_id"], "email": "someone.else@example.com"}),
        ("update_customer", {"customer_id": customer["customer_id"], "email": customer["email"]}),  # back to s0
    ]
    ep, s0, oks = _play(app, calls)
    assert all(oks) and not _fast(app, ep, s0) and not _full(app, ep)
    for tool, args in [
        ("register_customer", {"full_name": "Ada Quill", "email": "ada.quill@example.com"}),
        ("delete_gift_card", {"gift_card_id": card["gift_card_id"]}),
    ]:
        s0.before_call(ep.db, tool)
        assert ep.call(tool, args).ok
        assert _fast(app, ep, s0).to_dict() == _full(app, ep).to_dict()  # mid-episode, then at the end
    effects = _fast(app, ep, s0)
    assert effects.tables["gift_card"].deleted == (card["gift_card_id"],) and len(effects.tables["customer"].added) == 1


def test_only_calls_that_may_write_open_a_savepoint(app: App) -> None:
    book = _first(app, "book")
    ep = app.episode()
    statements: list[str] = []
    ep.db.set_trace_callback(statements.append)
    assert ep.call("get_book", {"book_id": book["book_id"]}).ok
    assert not any(s.startswith(("SAVEPOINT", "RELEASE")) for s in statements)
    assert ep.call("get_book", {"book_id": "no_such_book"}).code == "exists:book"
    assert not any(s.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")) for s in statements)
    assert ep.call("restock_book", {"book_id": book["book_id"], "copies": 1}).ok
    assert statements[-1] == "RELEASE tool_call" and "SAVEPOINT tool_call" in statements
    assert {s.name for s in app.specs if s.mode == "write"} == writing_tools(app)
    ep.close()
