"""The older catalogue apps say their rules in the blueprint language: of their custom tools only
three are left (each with the reason in its YAML), and the rewritten tools do what the custom
code did, on real databases."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App

OLDER = ["finance", "fitness", "messaging", "music", "productivity", "shopping", "social", "utilities"]
LEFT_CUSTOM = {"cancel_order", "get_home_feed", "reassign_open_tasks"}


def _app(name: str) -> App:
    return compile_app(catalog.load(name), 0)


def _one(db: sqlite3.Connection, sql: str, *args: Any) -> dict[str, Any]:
    cur = db.execute(sql, args)
    row = cur.fetchone()
    assert row is not None, sql
    return dict(zip([c[0] for c in cur.description], row))


def test_only_the_tools_v2_cannot_say_are_custom() -> None:
    custom = {a.name for n in OLDER for a in catalog.load(n).actions if a.kind == "custom"}
    assert custom == LEFT_CUSTOM
    for n in OLDER:
        text = (catalog.CATALOG_DIR / f"{n}.yaml").read_text()
        for name in LEFT_CUSTOM & {a.name for a in catalog.load(n).actions}:
            assert "  # custom: " in text.split(f"  - name: {name}\n")[0][-600:], f"{name}: say why it stays custom"


def test_make_payment_pays_part_then_all_of_a_bill_from_a_wallet() -> None:
    app = _app("utilities")
    ep = app.episode()
    db = ep.db
    bill = _one(
        db, "SELECT b.*, a.customer_id FROM bill b JOIN service_account a ON a.account_id = b.account_id WHERE b.status = 'issued' LIMIT 1"
    )
    db.execute("UPDATE bill SET amount_due = 100, amount_paid = 0 WHERE bill_id = ?", (bill["bill_id"],))
    wallet = _one(  # the customer's own wallet, else one whose nickname theirs do not use (a customer's nicknames are unique)
        db,
        "SELECT * FROM credit_wallet WHERE customer_id = ?1 OR nickname NOT IN (SELECT nickname FROM credit_wallet WHERE customer_id = ?1)"
        " ORDER BY customer_id = ?1 DESC LIMIT 1",
        bill["customer_id"],
    )
    db.execute(
        "UPDATE credit_wallet SET customer_id = ?, status = 'active', balance = 150 WHERE wallet_id = ?",
        (bill["customer_id"], wallet["wallet_id"]),
    )
    args = {"bill_id": bill["bill_id"], "method": "wallet_credit", "wallet_id": wallet["wallet_id"]}
    payments = db.execute("SELECT COUNT(*) FROM payment WHERE bill_id = ?", (bill["bill_id"],)).fetchone()[0]  # the sample state's
    first = ep.call("make_payment", {**args, "amount": 40})
    assert first.outcome == "success", first.content
    assert first.data["amount"] == 40 and first.data["bill_id"] == bill["bill_id"]
    after = _one(db, "SELECT * FROM bill WHERE bill_id = ?", bill["bill_id"])
    assert (after["amount_paid"], after["status"], after["paid_at"]) == (40, "issued", None)
    too_much = ep.call("make_payment", {**args, "amount": 60.01})
    assert (too_much.outcome, too_much.code) == ("anticipated_rejection", "pre[1]")
    second = ep.call("make_payment", {**args, "amount": 60})
    assert second.outcome == "success", second.content
    after = _one(db, "SELECT * FROM bill WHERE bill_id = ?", bill["bill_id"])
    assert (after["amount_paid"], after["status"], after["payment_method"]) == (100, "paid", "wallet_credit") and after["paid_at"]
    assert _one(db, "SELECT balance FROM credit_wallet WHERE wallet_id = ?", wallet["wallet_id"])["balance"] == 50
    assert db.execute("SELECT COUNT(*) FROM payment WHERE bill_id = ?", (bill["bill_id"],)).fetchone()[0] == payments + 2


def test_cancel_concert_cancels_its_confirmed_bookings_only() -> None:
    app = _app("music")
    ep = app.episode()
    db = ep.db
    concert = _one(db, "SELECT * FROM concert WHERE status IN ('announced', 'on_sale') LIMIT 1")
    others = db.execute("SELECT booking_id, status FROM ticket_booking WHERE concert_id != ?", (concert["concert_id"],)).fetchall()
    bookings = db.execute("SELECT booking_id FROM ticket_booking LIMIT 3").fetchall()
    db.executemany(
        "UPDATE ticket_booking SET concert_id = ?, status = 'confirmed' WHERE booking_id = ?",
        [(concert["concert_id"], b) for (b,) in bookings],
    )
    res = ep.call("cancel_concert", {"concert_id": concert["concert_id"]})
    assert res.outcome == "success", res.content
    assert (res.data["status"], res.data["tickets_sold"]) == ("cancelled", 0)
    assert {s for (s,) in db.execute("SELECT status FROM ticket_booking WHERE concert_id = ?", (concert["concert_id"],))} == {"cancelled"}
    moved = {b for (b,) in bookings}
    assert [o for o in others if o[0] not in moved] == db.execute(
        f"SELECT booking_id, status FROM ticket_booking WHERE concert_id != ? AND booking_id NOT IN ({','.join('?' * len(moved))})",
        (concert["concert_id"], *moved),
    ).fetchall()


def test_send_scheduled_message_now_posts_the_draft() -> None:
    app = _app("messaging")
    ep = app.episode()
    db = ep.db
    draft = _one(db, "SELECT * FROM scheduled_message WHERE status = 'draft' LIMIT 1")
    db.execute("UPDATE channel SET status = 'active' WHERE channel_id = ?", (draft["channel_id"],))
    db.execute("UPDATE user SET account_status = 'active' WHERE user_id = ?", (draft["author_id"],))
    if not db.execute(
        "SELECT 1 FROM channel_membership WHERE channel_id = ? AND user_id = ?", (draft["channel_id"], draft["author_id"])
    ).fetchone():
        db.execute(
            "UPDATE channel_membership SET channel_id = ?, user_id = ? WHERE rowid = (SELECT rowid FROM channel_membership LIMIT 1)",
            (draft["channel_id"], draft["author_id"]),
        )
    before = db.execute("SELECT COUNT(*) FROM message").fetchone()[0]
    res = ep.call("send_scheduled_message_now", {"scheduled_id": draft["scheduled_id"]})
    assert res.outcome == "success", res.content
    assert res.data["status"] == "sent" and res.data["send_at"]
    assert db.execute("SELECT COUNT(*) FROM message").fetchone()[0] == before + 1
    posted = _one(
        db,
        "SELECT * FROM message WHERE text = ? AND channel_id = ? AND author_id = ? AND sent_at = ?",
        draft["text"],
        draft["channel_id"],
        draft["author_id"],
        res.data["send_at"],
    )
    assert (posted["status"], posted["parent_message_id"], posted["edited_at"]) == ("sent", None, None)
    again = ep.call("send_scheduled_message_now", {"scheduled_id": draft["scheduled_id"]})
    assert (again.outcome, again.code) == ("anticipated_rejection", "state")


@pytest.mark.parametrize(
    ("app_name", "tool", "table", "key", "field", "args", "expect"),
    [
        ("utilities", "top_up_wallet", "credit_wallet", "wallet_id", "balance", {"amount": 20.5}, lambda r: round(r["balance"] + 20.5, 2)),
        ("shopping", "restock_inventory", "inventory", "inventory_id", "stocked", {"units": 7}, lambda r: r["stocked"] + 7),
        ("fitness", "buy_pt_credits", "member", "member_id", "pt_credits", {"credits": 3}, lambda r: r["pt_credits"] + 3),
    ],
)
def test_increments_write_what_the_custom_code_wrote(
    app_name: str, tool: str, table: str, key: str, field: str, args: dict[str, Any], expect: Any
) -> None:
    app = _app(app_name)
    ep = app.episode()
    db = ep.db
    row = _one(db, f'SELECT * FROM "{table}" LIMIT 1')
    if table == "credit_wallet":
        db.execute("UPDATE credit_wallet SET status = 'active' WHERE wallet_id = ?", (row[key],))
    if table == "member":
        db.execute(
            "UPDATE membership SET member_id = ?, status = 'active' WHERE rowid = (SELECT rowid FROM membership LIMIT 1)", (row[key],)
        )
    res = ep.call(tool, {key: row[key], **args})
    assert res.outcome == "success", res.content
    assert res.data[field] == expect(row) == _one(db, f'SELECT "{field}" FROM "{table}" WHERE "{key}" = ?', row[key])[field]


def test_credit_monthly_interest_adds_one_month_rounded_to_cents() -> None:
    app = _app("finance")
    ep = app.episode()
    db = ep.db
    acc = _one(db, "SELECT * FROM account LIMIT 1")
    db.execute(
        "UPDATE account SET type = 'savings', status = 'open', interest_rate = 3.1, balance = 1234.57 WHERE account_id = ?",
        (acc["account_id"],),
    )
    res = ep.call("credit_monthly_interest", {"account_id": acc["account_id"]})
    assert res.outcome == "success", res.content
    assert res.data["balance"] == round(1234.57 + round(1234.57 * 3.1 / 1200, 2), 2) == 1237.76


def test_play_track_records_a_play_and_counts_it() -> None:
    app = _app("music")
    ep = app.episode()
    db = ep.db
    listener = _one(db, "SELECT * FROM listener LIMIT 1")
    track = _one(db, "SELECT * FROM track LIMIT 1")
    db.execute("UPDATE listener SET status = 'active' WHERE listener_id = ?", (listener["listener_id"],))
    db.execute("UPDATE track SET is_available = 1 WHERE track_id = ?", (track["track_id"],))
    res = ep.call(
        "play_track", {"listener_id": listener["listener_id"], "track_id": track["track_id"], "device": "car", "seconds_played": 30}
    )
    assert res.outcome == "success", res.content
    assert (res.data["device"], res.data["seconds_played"], res.data["listener_id"]) == ("car", 30, listener["listener_id"])
    assert _one(db, "SELECT play_count FROM track WHERE track_id = ?", track["track_id"])["play_count"] == track["play_count"] + 1
    long = ep.call(
        "play_track",
        {
            "listener_id": listener["listener_id"],
            "track_id": track["track_id"],
            "device": "car",
            "seconds_played": track["duration_seconds"] + 1,
        },
    )
    assert (long.outcome, long.code) == ("anticipated_rejection", "pre[2]")


def test_finance_dates_are_computed_from_the_clock_not_written_out() -> None:
    bp = catalog.load("finance")
    app = compile_app(bp, 0)
    ep = app.episode()
    born = {"2008-03-15": "success", "2008-03-16": "anticipated_rejection"}  # 18 years before the reference date, and a day less
    for dob, outcome in born.items():
        args = {
            "full_name": "Ann Lee",
            "email": f"ann.{dob}@example.net",
            "phone": "+1-555-0100",
            "address": "1 Main St",
            "date_of_birth": dob,
        }
        assert ep.call("register_customer", args).outcome == outcome, dob
    account = _one(ep.db, "SELECT account_id FROM account WHERE status = 'open' LIMIT 1")["account_id"]
    card = ep.call("request_card", {"account_id": account, "kind": "debit", "network": "visa", "daily_limit": 500})
    assert card.outcome == "success", card.content
    assert (bp.reference_date, card.data["expires_on"]) == ("2026-03-15", "2030-03-15")  # four years after issue
