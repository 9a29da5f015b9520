"""Runtime: episodes on their own state copies, the three outcome classes, seeded ids."""

from __future__ import annotations

import json

import pytest

import envsynth
from envsynth.runtime.app import App


@pytest.fixture(scope="module")
def app(bookshop_blueprint_path, tmp_path_factory) -> App:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("apps")
    envsynth.build_app(envsynth.load_blueprint(bookshop_blueprint_path), out)
    return envsynth.load_app(out / "corner_bookshop")


def _first(app: App, table: str, where: str = "1") -> dict:
    ep = app.episode()
    cur = ep.db.execute(f'SELECT * FROM "{table}" WHERE {where} LIMIT 1')
    cols = [c[0] for c in cur.description]
    row = cur.fetchone()
    assert row is not None, f"no {table} row where {where}"
    return dict(zip(cols, row))


def test_success_returns_json(app: App) -> None:
    book = _first(app, "book")
    res = app.episode().call("get_book", {"book_id": book["book_id"]})
    assert res.outcome == "success" and res.ok
    assert json.loads(res.content) == res.data
    assert res.data["title"] == book["title"]


def test_arguments_as_json_text(app: App) -> None:
    book = _first(app, "book")
    res = app.episode().call("get_book", json.dumps({"book_id": book["book_id"]}))
    assert res.outcome == "success"


@pytest.mark.parametrize(
    ("tool", "args", "code"),
    [
        ("no_such_tool", {}, "unknown_tool"),
        ("get_book", {}, "invalid_arguments"),
        ("get_book", {"book_id": 7}, "invalid_arguments"),
        ("get_book", {"book_id": "x", "extra": 1}, "invalid_arguments"),
        ("search_books", {"genre": "cooking"}, "invalid_arguments"),
        ("restock_book", {"book_id": "x", "copies": 0}, "invalid_arguments"),
        ("get_book", {"book_id": "boo_000000"}, "exists:book"),
    ],
)
def test_anticipated_rejections(app: App, tool: str, args: dict, code: str) -> None:
    res = app.episode().call(tool, args)
    assert res.outcome == "anticipated_rejection"
    assert res.code == code
    assert "Traceback" not in res.content


def test_unmet_precondition_leaves_state_unchanged(app: App) -> None:
    shipped = _first(app, "purchase", "status IN ('shipped', 'cancelled')")
    ep = app.episode()
    before = ep.db.serialize()
    res = ep.call("pay_purchase", {"purchase_id": shipped["purchase_id"]})
    assert res.outcome == "anticipated_rejection" and res.code == "state"
    assert shipped["status"] in res.content
    assert ep.db.serialize() == before


def test_unexpected_failure_is_logged_not_shown(app: App) -> None:
    ep = app.episode()
    ep.db.execute('DROP TABLE "reservation"')  # break the environment under the tool
    event = _first(app, "event", "seats_taken < capacity")
    customer = _first(app, "customer")
    res = ep.call("reserve_event_seats", {"event_id": event["event_id"], "customer_id": customer["customer_id"], "seats": 1})
    assert res.outcome == "unexpected_failure"
    assert "Traceback" not in res.content and "Internal error" in res.content
    assert ep.tainted and "Traceback" in (ep.log[-1].trace or "")
    # the partial write (seats_taken) was rolled back
    seats = ep.db.execute('SELECT seats_taken FROM "event" WHERE event_id = ?', (event["event_id"],)).fetchone()[0]
    assert seats == event["seats_taken"]


def test_episodes_are_isolated(app: App) -> None:
    book = _first(app, "book")
    a, b = app.episode(), app.episode()
    assert a.call("restock_book", {"book_id": book["book_id"], "copies": 5}).ok
    stock = lambda ep: ep.db.execute('SELECT stock FROM "book" WHERE book_id = ?', (book["book_id"],)).fetchone()[0]  # noqa: E731
    assert stock(a) == book["stock"] + 5
    assert stock(b) == book["stock"]


def test_ids_and_clock_come_from_the_seed(app: App) -> None:
    def register(seed: int) -> dict:
        return app.episode(seed=seed).call("register_customer", {"full_name": "Ada Byron", "email": "ada@example.org"}).data

    a, b, c = register(1), register(1), register(2)
    assert a == b
    assert a["customer_id"] != c["customer_id"]
    assert a["customer_id"].startswith("cus_")


def test_tool_schemas_are_openai_functions(app: App) -> None:
    for schema in app.tool_schemas():
        fn = schema["function"]
        assert schema["type"] == "function"
        assert fn["parameters"]["additionalProperties"] is False
        assert set(fn["parameters"]["required"]) <= set(fn["parameters"]["properties"])
        assert fn["description"]
