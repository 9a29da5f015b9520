"""The state linter: each class flags a built record altered to have exactly that defect, and nothing else does.

Every case starts from a real record of the demo corpus, its state cut to one row and the rows that row refers
to, chosen so that the linter finds nothing in it; the case then changes a field (or copies a row) so that the
state has one defect, and only that defect's class may flag it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.order import creation_order
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.report import CLASSES, lint_state, lint_states
from envsynth.runtime.sampledata import StateBuilder
from envsynth.tasks.admission.coherence import CHECKS, World
from envsynth.tasks.model import Task, TaskState

Rows = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def corpus(corpus_and_run: Any) -> Corpus:
    return load_corpus(corpus_and_run.corpus)


def _all_rows(task: Task) -> Rows:
    out: Rows = {t: [dict(r) for r in rows] for t, rows in task.state.core.items()}
    for table, rows in task.state.distractors.items():
        out.setdefault(table, []).extend(dict(r) for r in rows)
    return out


def _with_ancestors(bp: Blueprint, rows: Rows, table: str, row: dict[str, Any]) -> Rows:
    """``row`` and every row it refers to, transitively, taken from ``rows``."""
    out: Rows = {}
    todo = [(table, row)]
    while todo:
        t, r = todo.pop()
        if any(x is r for x in out.get(t, [])):
            continue
        out.setdefault(t, []).append(r)
        ent = bp.entity(t)
        for f in ent.fields:
            if f.type != "ref" or not f.ref or r.get(f.name) is None:
                continue
            target = bp.entity(f.ref)
            todo += [(f.ref, p) for p in rows.get(f.ref, []) if p.get(target.id_field) == r[f.name]]
    return out


def _with_state(task: Task, rows: Rows, **changes: Any) -> Task:
    return task.model_copy(update={"state": TaskState(core=rows), **changes})


def clean_base(corpus: Corpus, app: str, table: str) -> tuple[Task, Rows, dict[str, Any]]:
    """A built record of ``app`` cut to one row of ``table`` (with the rows it refers to when a case reads them),
    in which nothing is flagged. A table whose sample rows synthesis gets wrong every time has them set right
    first (:data:`SET_RIGHT`), the way the state should be. When no record of the app holds a row of ``table`` (the
    demo corpus's few tasks of the app touch none), the app's first record carries rows drawn as synthesis draws
    its worlds (``StateBuilder``, under the blueprint's rules)."""
    bp = corpus.apps[app].blueprint
    tasks = [t for t in corpus.tasks if t.app == app]
    states = [(task, _all_rows(task)) for task in tasks]
    if not any(rows.get(table) for _, rows in states):
        states = [(tasks[0], StateBuilder(bp, seed, creation_order(bp)).fill()) for seed in range(3)]
    for task, rows in states:
        for row in rows.get(table, []):
            SET_RIGHT.get(table, lambda r: None)(row)
            state = _with_ancestors(bp, rows, table, row) if table in WITH_PARENTS else {table: [row]}
            if not lint_state(_with_state(task, state), bp).defects:
                return task, state, row
    raise AssertionError(f"no clean {table} row of {app} in the demo corpus")


def _copy(rows: Rows, table: str, row: dict[str, Any], id_field: str, **changes: Any) -> None:
    rows[table].append({**row, id_field: f"{row[id_field]}x", **changes})


def _line_off(rows: Rows, row: dict[str, Any]) -> None:
    row["line_total"] = round(row["quantity"] * row["unit_price"], 2) + 5


def _order_with_a_short_line(rows: Rows, row: dict[str, Any]) -> None:
    line = {"line_id": "lin_999999", "order_id": row["order_id"], "item_id": None, "price": row["total"] - 1.0, "status": "ordered"}
    rows["order_line"] = [line]


def _account_before_customer(rows: Rows, row: dict[str, Any]) -> None:
    joined = rows["customer"][0]["joined_on"]
    row["opened_on"] = f"{int(joined[:4]) - 1}{joined[4:]}"


def _statement_before_period_end(rows: Rows, row: dict[str, Any]) -> None:
    row["issued_on"] = max(row["issued_on"], f"{row['period']}-15"[:10])
    row["period"] = row["issued_on"][:7]


def _landed_next_month(rows: Rows, row: dict[str, Any]) -> None:
    row.update(status="landed", departure_date="2026-04-10", departs_at="2026-04-10T09:00:00", arrives_at="2026-04-10T12:00:00")


def _milestone_overdue(rows: Rows, row: dict[str, Any]) -> None:
    row.update(status="upcoming", due_date="2026-02-01", achieved_on=None)


def _two_default_addresses(rows: Rows, row: dict[str, Any]) -> None:
    row["is_default"] = True
    _copy(rows, "address", row, "address_id", street="9 Other Road")


def _two_active_memberships(rows: Rows, row: dict[str, Any]) -> None:
    row["status"] = "active"
    _copy(rows, "membership", row, "membership_id")


def _two_accounts_one_nickname(rows: Rows, row: dict[str, Any]) -> None:
    _copy(rows, "account", row, "account_id", nickname=f" {row['nickname'].upper()} ")


def _catch_phrase(rows: Rows, row: dict[str, Any]) -> None:
    rows["category"][0]["description"] = "Multi-tiered incremental paradigm for the holistic home."


def _lorem(rows: Rows, row: dict[str, Any]) -> None:
    rows["category"][0]["description"] = "Lorem ipsum dolor sit amet, consectetur adipiscing elit."


def _credit_card_balance(rows: Rows, row: dict[str, Any]) -> None:
    row.update(kind="credit_card", balance=25.0)


def _doctor(rows: Rows, row: dict[str, Any]) -> None:
    row["full_name"] = f"Dr. {row['full_name']}"


def _junior(rows: Rows, row: dict[str, Any]) -> None:
    row["full_name"] = f"{row['full_name']} Jr."


SET_RIGHT: dict[str, Callable[[dict[str, Any]], None]] = {
    "order_item": lambda r: r.update(line_total=round(r["quantity"] * r["unit_price"], 2)),  # drawn at random today
}
WITH_PARENTS = {"account", "product"}  # the cases that read the rows these refer to (the customer, the category)

Alter = Callable[[Rows, dict[str, Any]], None]

CASES: list[tuple[str, str, str, Alter]] = [
    ("derived_arithmetic", "harbor_market", "order_item", _line_off),
    ("derived_arithmetic", "juniper_goods", "customer_order", _order_with_a_short_line),
    ("date_order", "northwind_bank", "account", _account_before_customer),
    ("date_order", "northwind_bank", "statement", _statement_before_period_end),
    ("completed_in_future", "northstar_air", "flight", _landed_next_month),
    ("upcoming_in_past", "taskboard", "milestone", _milestone_overdue),
    ("several_active", "harbor_market", "address", _two_default_addresses),
    ("several_active", "peak_fitness", "membership", _two_active_memberships),
    ("repeated_names_per_owner", "northwind_bank", "account", _two_accounts_one_nickname),
    ("filler_text", "harbor_market", "product", _catch_phrase),
    ("filler_text", "harbor_market", "product", _lorem),
    ("balance_on_wrong_kind", "juniper_goods", "payment_method", _credit_card_balance),
    ("title_in_name", "harbor_market", "customer", _doctor),
    ("title_in_name", "northwind_bank", "customer", _junior),
]


@pytest.mark.parametrize(("defect", "app", "table", "alter"), CASES, ids=[f"{c[0]}-{c[3].__name__.strip('_')}" for c in CASES])
def test_each_class_flags_its_defect_and_no_other(corpus: Corpus, defect: str, app: str, table: str, alter: Alter) -> None:
    task, rows, row = clean_base(corpus, app, table)
    alter(rows, row)
    assert lint_state(_with_state(task, rows), corpus.apps[app].blueprint).defects == [defect]


@pytest.mark.parametrize(
    ("sentence", "flagged"),
    [
        ("Only the ones at most $61.81, please.", True),
        ("Anything that costs $12.37 or less.", True),
        ("Only the ones at most $60.00, please.", False),
        ("Only the ones under $59.99 or $20.50.", False),
        ("I paid $61.81 for it last week.", False),  # an amount, not a threshold
    ],
)
def test_cents_in_threshold_reads_the_request(corpus: Corpus, sentence: str, flagged: bool) -> None:
    task, rows, _ = clean_base(corpus, "harbor_market", "product")
    altered = _with_state(task, rows, instruction=f"{task.instruction} {sentence}")
    assert lint_state(altered, corpus.apps["harbor_market"].blueprint).defects == (["cents_in_threshold"] if flagged else [])


def test_kinds_that_hold_a_balance_and_ordinary_words_are_not_flagged(corpus: Corpus) -> None:
    task, rows, row = clean_base(corpus, "juniper_goods", "payment_method")
    row.update(kind="gift_card", balance=25.0)
    _copy(rows, "payment_method", row, "payment_method_id", kind="paypal", balance=0)
    assert lint_state(_with_state(task, rows), corpus.apps["juniper_goods"].blueprint).defects == []
    task, rows, row = clean_base(corpus, "harbor_market", "product")
    row["name"] = "Polarized Sunglasses"
    rows["category"][0]["description"] = "Bestsellers and new arrivals for every home."
    assert lint_state(_with_state(task, rows), corpus.apps["harbor_market"].blueprint).defects == []


def test_a_record_as_built_can_be_clean_and_the_corpus_report_adds_up(corpus: Corpus) -> None:
    tasks = list(corpus.tasks)
    blueprints = {name: app.blueprint for name, app in corpus.apps.items()}
    clean = [t for t in tasks if not lint_state(t, blueprints[t.app]).defects]
    assert clean, "no record of the demo corpus is clean"
    report = lint_states(tasks, blueprints)
    assert report.tasks == len(tasks) and list(report.rates) == list(CLASSES)
    assert report.any == len(tasks) - len(clean) and report.any_rate == pytest.approx(report.any / len(tasks))
    for name in CLASSES:
        assert report.rates[name] == pytest.approx(report.counts[name] / len(tasks))
        assert len(report.examples.get(name, [])) == min(report.counts[name], 3)


ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["2026-03-01", "2026-13-45", "2026-03-01T25:99", "January 2026", "9999-12", "0000-00", "Dr. ", "credit_card"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_the_linter_never_crashes_on_odd_values(corpus: Corpus, data: st.DataObject) -> None:
    apps = sorted(corpus.apps)
    app = data.draw(st.sampled_from(apps))
    task = next(t for t in corpus.tasks if t.app == app)
    rows = _all_rows(task)
    for table_rows in rows.values():
        for row in table_rows[:6]:
            for field in list(row):
                if data.draw(st.booleans()):
                    row[field] = data.draw(ODD_VALUES)
    odd = _with_state(task, rows, instruction=data.draw(st.text(max_size=40)) + " at most $1,2.3")
    bp = corpus.apps[app].blueprint
    world = World(odd, bp)
    for name in CLASSES:
        assert all(isinstance(f, str) for f in CHECKS[name](world))
    assert set(lint_state(odd, bp).defects) <= set(CLASSES)
