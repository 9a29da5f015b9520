"""for_each ``where`` and values may use every function of the condition language (lookup, all, list filters).

The tester works out the for_each effects itself (envsynth.testing.each); it must evaluate
``lookup(...)``, ``all(...)`` and ``field=[...]`` filters as the generated tools do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsynth import build_app
from envsynth.blueprint import from_dict

BLUEPRINT: dict[str, Any] = {
    "name": "bag_desk_each",
    "title": "Bag Desk",
    "category": "other",
    "description": "Bookings whose extra bags are charged as payment rows.",
    "tables": {"free": {"regular": {"economy": 0, "business": 2}, "gold": {"economy": 2, "business": 3}}},
    "entities": [
        {
            "name": "member",
            "rows": 6,
            "label": "full_name",
            "fields": [
                {"name": "member_id", "type": "id"},
                {"name": "full_name", "type": "name"},
                {"name": "tier", "type": "enum", "values": ["regular", "gold"]},
            ],
        },
        {
            "name": "booking",
            "rows": 8,
            "fields": [
                {"name": "booking_id", "type": "id"},
                {"name": "member_id", "type": "ref", "ref": "member"},
                {"name": "cabin", "type": "enum", "values": ["economy", "business"]},
                {"name": "bags", "type": "quantity", "max": 9, "gen": {"range": [0, 3]}},
            ],
        },
        {
            "name": "charge",
            "rows": 8,
            "fields": [
                {"name": "charge_id", "type": "id"},
                {"name": "booking_id", "type": "ref", "ref": "booking"},
                {"name": "member_id", "type": "ref", "ref": "member"},
                {"name": "amount", "type": "money", "gen": {"range": [1, 100]}},
                {"name": "status", "type": "enum", "values": ["open", "paid"]},
            ],
        },
    ],
    "actions": [
        {
            "name": "set_bags",
            "kind": "update",
            "entity": "booking",
            "fields": ["bags"],
            "bind": {"member": "booking.member_id"},
            "description": "Change the bags of a booking; bags beyond the free allowance are charged.",
            "for_each": [
                {
                    "rows": "member",
                    "match": {"member_id": "booking.member_id"},
                    "where": "bags > lookup('free', who.tier, booking.cabin) and all(charge, where(booking_id=booking.booking_id), status=['open', 'paid'])",
                    "as": "who",
                    "insert": "charge",
                    "set": {
                        "booking_id": "booking.booking_id",
                        "member_id": "who.member_id",
                        "amount": "35 * (bags - lookup('free', who.tier, booking.cabin))",
                        "status": "'open'",
                    },
                },
                {
                    "rows": "charge",
                    "match": {"booking_id": "booking.booking_id"},
                    "where": "exists(member, member_id=owed.member_id, tier=['regular', 'gold'])",
                    "as": "owed",
                    "set": {"status": "'open'"},
                },
            ],
        },
    ],
}


def test_for_each_where_and_values_may_use_lookup_all_and_list_filters(tmp_path: Path) -> None:
    built = build_app(from_dict(BLUEPRINT), tmp_path / "app")
    assert built.report.passed, [v for v in built.report.verdicts if not v.ok]
    ep = built.app.episode()
    ep.db.execute("UPDATE member SET tier = 'regular'")
    ep.db.execute("UPDATE booking SET cabin = 'economy', bags = 0")
    booking, member = ep.db.execute("SELECT booking_id, member_id FROM booking ORDER BY 1").fetchone()
    res = ep.call("set_bags", {"booking_id": booking, "bags": 2})
    assert res.outcome == "success", res.content
    rows = ep.db.execute(
        "SELECT amount, status FROM charge WHERE booking_id = ? AND member_id = ? AND amount = 70", (booking, member)
    ).fetchall()
    assert rows == [(70.0, "open")]
