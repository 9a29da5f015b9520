"""Language v2, the condition language (docs/blueprints.md 6 and 11.3 to 11.5): dates and durations,
quantifiers and membership over related rows, min/max and lookup tables: parse, load checks, evaluation
(the same in Python and in SQLite), generated code, and the procedural tester steering every form."""

from __future__ import annotations

import copy
import datetime as dt
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from envsynth import build_app, load_blueprint
from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint import expr as X
from envsynth.compiler.codegen import py
from envsynth.compiler.compile import app_files, compile_app
from envsynth.runtime import evaluate as E
from envsynth.runtime import toolkit as F
from envsynth.runtime.toolkit import Context

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "tests" / "data" / "examples"
V2 = {"dates": "11.3", "quantifiers": "11.4", "functions": "11.5"}


def _data(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())


def _load_error(data: dict[str, Any], mutate: Any) -> str:
    d = copy.deepcopy(data)
    mutate(d)
    with pytest.raises(BlueprintError) as info:
        from_dict(d, "x.yaml")
    return str(info.value)


# -- parse and render ---------------------------------------------------------------


def _eval(source: str, **names: Any) -> Any:
    ns = {"_now": lambda: "2026-03-15T12:00:00", "_today": lambda: "2026-03-15", **names}
    return E.evaluate(X.compile_eval(X.parse(source)), ns)


def test_date_arithmetic_evaluates() -> None:
    assert _eval("today() + days(180)") == "2026-09-11"
    assert _eval("now() - hours(36)") == "2026-03-14T00:00:00"
    assert _eval("now() - b.created_at <= hours(24)", b={"created_at": "2026-03-14T13:00:00"}) is True
    assert _eval("now() - b.created_at <= hours(24)", b={"created_at": "2026-03-14T11:59:00"}) is False
    assert _eval("today() - c.opened_on", c={"opened_on": "2026-02-13"}) == dt.timedelta(days=30)
    assert _eval("c.due_at - now() >= minutes(90) + hours(1)", c={"due_at": "2026-03-15T14:30"}) is True
    assert _eval("days(n) <= weeks(2)", n=14) is True


def test_row_functions_min_max_lookup_evaluate() -> None:
    rows = {
        "seg": [
            {"r": 1, "status": "cancelled", "cabin": "eco"},
            {"r": 1, "status": "flown", "cabin": "eco"},
            {"r": 2, "status": "x", "cabin": "bus"},
        ]
    }
    ns = {
        "_exists": lambda t, w: any(F.row_matches(x, w) for x in rows[t]),
        "_count": lambda t, w: sum(F.row_matches(x, w) for x in rows[t]),
        "_all": E.all_rows(rows),
        "_lookup": E.table_lookup({"bags": {"gold": {"eco": 2}}}),
    }
    assert _eval("any(seg, r=1, status=['cancelled', 'delayed'])", **ns) is True
    assert _eval("exists(seg, r=2, status=['cancelled', 'delayed'])", **ns) is False
    assert _eval("count(seg, r=1, status__ne='flown')", **ns) == 1
    assert _eval("all(seg, where(r=1), cabin='eco')", **ns) is True
    assert _eval("all(seg, where(r=1), status='flown')", **ns) is False
    assert _eval("all(seg, where(r=3), status='flown')", **ns) is True  # no such row: vacuously true
    assert _eval("max(0, 3 - lookup('bags', 'gold', 'eco')) * 35", **ns) == 35
    assert _eval("min(4, lookup('bags', 'gold', 'eco'))", **ns) == 2
    assert _eval("lookup('bags', 'silver', 'eco') is None", **ns) is True


def test_generated_code_is_readable_and_unshadowable() -> None:
    assert py("now() - booking.created_at <= hours(24)") == "ctx.date_sub(ctx.now(), booking['created_at']) <= ctx.hours(24)"
    assert py("today() + days(180)") == "ctx.date_add(ctx.today(), ctx.days(180))"
    assert py("all(seg, where(r=res.id), cabin=cabin)") == "ctx.every('seg', {'r': res['id']}, {'cabin': cabin})"
    assert py("any(seg, status=['a', 'b'])") == "ctx.exists('seg', {'status': ('a', 'b', )})"
    assert py("lookup('bags', m.tier, 'eco') >= 2") == "ctx.lookup(TABLES['bags'], m['tier'], 'eco') >= 2"
    # a parameter called `hours` (the catalogue has one) does not hide the duration function
    assert X.parse("hours(hours) >= hours(1)").names() == {"hours"}


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("maximum(a, b) > 1", "the functions are abs, all, any, count, days, exists, hours, len, lookup, lower, max, min"),
        ("where(a=1)", "only allowed as the second argument of all(entity, where(...), field=value)"),
        ("all(seg, where(a=1))", "no test given"),
        ("lookup(bags, 1)", "table name in quotes"),
        ("days(1, 2) > x", "days() takes 1 argument(s), got 2"),
        ("min(x) > 1", "min() takes 2 or more argument(s), got 1"),
    ],
)
def test_parse_errors_say_what_is_allowed(source: str, words: str) -> None:
    with pytest.raises(X.ExprError, match=None) as info:
        X.parse(source)
    assert words in str(info.value)


# -- load-time checks ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "words"),
    [
        ("permit.submitted_at >= now() - 86400", "now() - 86400 takes a number from a date; use a duration: days(n), hours(n)"),
        ("now() - permit.submitted_at <= 86400", "compares a duration with a number; use a duration"),
        ("permit.expires_on - permit.decided_on <= days(30)", "subtracts two dates without now(), today() or a duration"),
        ("permit.decided_on + permit.expires_on > today()", "adds two dates"),
        ("permit.decided_on > 3", "compares a date with a number"),
        ("days(permit.title) > hours(1)", "days() takes a number, got a text"),
        ("exists(permit, colour='red')", "permit has no field 'colour'"),
        ("exists(permit, title__gt='a')", "title__gt: gt compares numbers or dates"),
        ("exists(permit, decided_on=days(3))", "compares permit.decided_on (date) with a duration"),
        ("lookup('fees', permit.title) > 1", "lookup table 'fees' does not exist (tables: none"),
    ],
)
def test_load_refuses_what_cannot_work(check: str, words: str) -> None:
    msg = _load_error(_data("dates"), lambda d: d["actions"][1]["pre"].append(check))
    assert "actions[1].pre[1]" in msg
    assert words in msg


def test_load_checks_lookup_keys_and_table_shape() -> None:
    data = _data("functions")
    msg = _load_error(data, lambda d: d["actions"][3]["pre"].append("lookup('free_bags', member.tier) >= 1"))
    assert "lookup('free_bags', ...) takes 2 key(s), one per level of the table, got 1" in msg
    msg = _load_error(data, lambda d: d["tables"]["free_bags"].update(platinum=4))
    assert "tables" in msg and "mixes depths [1, 2]" in msg


def test_set_may_use_functions_and_old_says_where_it_is_allowed() -> None:
    data = _data("functions")
    assert from_dict(data, "x.yaml").tables["free_bags"]["gold"] == {"economy": 2, "business": 3}  # max() in `set` loads
    msg = _load_error(data, lambda d: d["actions"][0]["set"].update(bag_fee="old(booking.bag_fee)"))
    assert "old() only makes sense in post-conditions" in msg
    msg = _load_error(data, lambda d: d["actions"][0]["set"].update(bag_fee="maximum(1, 2)"))
    assert "actions[0].set.bag_fee" in msg and "the functions are" in msg


# -- Python and SQLite agree ------------------------------------------------------------

_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["a", "b", "c"]))
_FILTER = st.tuples(
    st.sampled_from(["x", "y"]),
    st.sampled_from(["", "__ne", "__lt", "__lte", "__gt", "__gte"]),
    st.one_of(_VALUES, st.lists(st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"])), max_size=3)),
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.fixed_dictionaries({"x": _VALUES, "y": _VALUES}), max_size=5), flt=st.lists(_FILTER, max_size=3))
def test_filters_mean_the_same_in_python_and_sqlite(rows: list[dict[str, Any]], flt: list[Any]) -> None:
    where = {f"{col}{op}": v for col, op, v in flt if not (isinstance(v, list) and op not in ("", "__ne"))}
    db = sqlite3.connect(":memory:")
    db.execute('CREATE TABLE "t" ("id" INTEGER PRIMARY KEY, "x" ANY, "y" ANY) STRICT')
    for i, r in enumerate(rows):
        db.execute('INSERT INTO "t" VALUES (?, ?, ?)', (i, r["x"], r["y"]))
    ctx = Context(db, "2026-03-15T12:00:00", 0, {})
    want = sum(F.row_matches(r, where) for r in rows)
    assert ctx.count("t", where) == want
    assert ctx.exists("t", where) == (want > 0)
    test = {"y": "a"}
    assert ctx.every("t", where, test) == all(F.row_matches(r, test) for r in rows if F.row_matches(r, where))


@settings(max_examples=200, deadline=None)
@given(
    day=st.dates(dt.date(2000, 1, 1), dt.date(2099, 12, 31)),
    clock=st.one_of(st.none(), st.times().map(lambda t: t.replace(microsecond=0))),
    n=st.integers(-5000, 5000),
    unit=st.sampled_from(X.DURATION_FUNCTIONS),
)
def test_date_arithmetic_round_trips(day: dt.date, clock: dt.time | None, n: int, unit: str) -> None:
    stamp = day.isoformat() if clock is None else dt.datetime.combine(day, clock).isoformat(timespec="seconds")
    delta = F.duration(unit, n)
    moved = F.date_add(stamp, delta)
    assert F.date_sub(moved, stamp) == delta
    assert F.date_sub(moved, delta) == stamp or (len(stamp) == 10 and F.date_sub(moved, delta) == stamp + "T00:00:00")
    assert (moved > stamp) == (n > 0) or len(moved) != len(stamp)


# -- the examples build, and the tester exercises every condition -----------------------


@pytest.mark.parametrize("name", sorted(V2))
def test_example_builds_with_every_condition_exercised(name: str, tmp_path: Path) -> None:
    built = build_app(load_blueprint(EXAMPLES / f"{name}.yaml"), tmp_path)
    report = built.report
    assert report.passed, [v for v in report.verdicts if not v.ok]
    counts = report.counts()
    assert counts["not_constructed"] == 0 and counts["unexpected_failure"] == 0
    for spec in built.app.specs:
        for check in spec.pre:
            case = next(v for v in report.verdicts if v.tool == spec.name and v.case == f"violate:{check.id}")
            assert case.observed == "anticipated_rejection", (spec.name, check.check, case.detail)
        assert next(v for v in report.verdicts if v.tool == spec.name and v.case == "positive").observed == "success"


@pytest.mark.parametrize("name", sorted(V2))
def test_docs_quote_the_examples(name: str) -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    section = doc[doc.index(f"### {V2[name]} ") :]
    section = section[: section.find("\n### ", 5) if "\n### " in section[5:] else len(section)]
    text = (EXAMPLES / f"{name}.yaml").read_text()
    quoted = [b for b in section.split("```yaml\n")[1:]]
    assert quoted, f"section {V2[name]} quotes no yaml"
    for block in quoted:
        block = block.split("```")[0]
        assert block.strip() and block in text, f"{V2[name]}: a quoted block is not verbatim in {name}.yaml"


def test_lookup_tables_go_into_the_generated_module() -> None:
    app = compile_app(load_blueprint(EXAMPLES / "functions.yaml"))
    src = app_files(app)["tools.py"].decode()
    assert "TABLES: dict[str, Any] = {'free_bags': {'regular': {'economy': 0, 'business': 2}" in src
    app2 = compile_app(load_blueprint(EXAMPLES / "dates.yaml"))
    assert "TABLES" not in app_files(app2)["tools.py"].decode()


def test_exists_with_a_list_runs_in_an_episode(tmp_path: Path) -> None:
    """``exists(segment, status=[...])`` used to crash with sqlite3.ProgrammingError (issue 12, gap 3)."""
    app = compile_app(load_blueprint(EXAMPLES / "quantifiers.yaml"))
    ep = app.episode()
    segs = list(ep.db.execute('SELECT "status", "reservation_id" FROM "segment"'))
    ids = [rid for (rid,) in ep.db.execute('SELECT "reservation_id" FROM "reservation" WHERE "status" = ?', ("active",))]
    outcomes = [ep.call("refund_reservation", {"reservation_id": rid}) for rid in ids]
    assert ids and {r.outcome for r in outcomes} <= {"success", "anticipated_rejection"}, [r.content for r in outcomes]
    want = {
        rid
        for rid in ids
        if any(s in ("cancelled", "delayed") for s, r in segs if r == rid) and not any(s == "flown" for s, r in segs if r == rid)
    }
    assert {rid for rid, r in zip(ids, outcomes, strict=True) if r.outcome == "success"} == want


def test_not_constructed_detail_tells_the_true_reason(tmp_path: Path) -> None:
    """Issue 12 gap 9: 'implied by the others' only when it is; otherwise the solver's reason or the column constraint."""
    data = _data("functions")
    data["actions"][3]["pre"] += [
        {"check": "lower(member.full_name) != 'nobody at all'", "message": "Not for nobody."},
        {"check": "booking.fare >= 50", "message": "Fare too low."},
        {"check": "booking.fare >= 10", "message": "Fare far too low."},
        {"check": "booking.bags >= 0", "message": "Negative bags."},
    ]
    built = build_app(from_dict(data, "x.yaml"), tmp_path)
    detail = {v.case: v.detail for v in built.report.verdicts if v.tool == "priority_boarding" and v.observed == "not_constructed"}
    assert detail["violate:pre[1]"].startswith("the solver cannot make this condition false: cannot make lower(member.full_name)")
    assert detail["violate:pre[3]"] == "no fixture breaks only this condition (it is implied by the others)"
    assert (
        detail["violate:pre[4]"]
        == "the solver cannot make this condition false: cannot make booking.bags Lt 0 (no value within bounds is Lt 0)"
    )
    assert "violate:pre[2]" not in detail


def test_graph_has_logic_edges_from_list_filters() -> None:
    """A tool that cancels a segment helps the refund that needs ``any(segment, ..., status=['cancelled', 'delayed'])``."""
    from envsynth.graph import build_graph

    app = compile_app(load_blueprint(EXAMPLES / "quantifiers.yaml"))
    graph = build_graph(app)
    assert graph.has_edge("cancel_segment", "refund_reservation", "logic", how="exists", value="cancelled")
    assert not graph.has_edge("cancel_segment", "upgrade_reservation", "logic")


def test_min_max_are_reserved_and_result_says_where_it_belongs() -> None:
    data = _data("functions")
    msg = _load_error(data, lambda d: d["entities"][1]["fields"].append({"name": "max", "type": "int"}))
    assert "'max' is reserved" in msg
    msg = _load_error(data, lambda d: d["actions"][1]["pre"].append("result.fare > 1"))
    assert "actions[1].pre[2]" in msg and "'result' is only allowed in post-conditions ('post'), not here" in msg
    msg = _load_error(data, lambda d: d["actions"][0]["set"].update(bag_fee="new.bag_fee"))
    assert "actions[0].set.bag_fee" in msg and "'new' is only allowed in post-conditions" in msg


@pytest.mark.parametrize(
    ("example", "check"),
    [
        ("quantifiers", "count(segment, reservation_id=reservation.reservation_id) + 1 <= 4"),
        ("quantifiers", "min(reservation.total, 300) > 150"),
        ("quantifiers", "0 < reservation.total < 400"),
        ("quantifiers", "not any(segment, reservation_id=reservation.reservation_id, departs_at__lt=now() + days(1))"),
        ("quantifiers", "count(segment, reservation_id=reservation.reservation_id, status=['scheduled', 'delayed']) == 2"),
        ("quantifiers", "round(reservation.total / 2, 0) >= 100"),
        ("dates", "abs(now() - permit.submitted_at) <= hours(2)"),
        ("dates", "(now() - permit.submitted_at) / hours(1) < 30"),
        ("dates", "permit.expires_on - now() >= days(30)"),
    ],
)
def test_more_forms_are_steered_both_ways(example: str, check: str, tmp_path: Path) -> None:
    data = _data(example)
    data["actions"] = [data["actions"][0 if example == "quantifiers" else 1]]
    data["actions"][0]["pre"] = [{"check": check, "message": "No."}]
    report = build_app(from_dict(data, "x.yaml"), tmp_path).report
    observed = {v.case: (v.observed, v.detail) for v in report.verdicts}
    assert observed["positive"][0] == "success", observed["positive"]
    assert observed["violate:pre[0]"][0] == "anticipated_rejection", observed["violate:pre[0]"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("days(180)", "'days(180)' is a duration, which a date column cannot hold; store a date (today() + days(30))"),
        ("now()", "'now()' is a datetime, and the column is a date: use today() or a date"),
        ("3", "'3' is a number, and the column is a date"),
    ],
)
def test_set_values_must_fit_their_column(value: str, words: str) -> None:
    msg = _load_error(_data("dates"), lambda d: d["actions"][0]["set"].update(expires_on=value))
    assert "actions[0].set.expires_on" in msg and words in msg
