"""Reward: effects of real tool calls on a compiled catalogue app, compared with an oracle's."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest

from envsynth import catalog
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.episode import Episode
from envsynth.runtime.reward import Effects, Reward, answers_match, compare, effects_of
from envsynth.runtime.state import Rows, read_rows

Call = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def app() -> App:
    return compile_app(catalog.load("harbor_market"), 0)


@pytest.fixture(scope="module")
def s0_rows(app: App) -> Rows:
    return read_rows(app.episode().db, app.blueprint)


def _value(p: ParamSpec) -> Any:
    """A plausible value for a parameter that is not a row reference."""
    if p.enum:
        return p.enum[0]
    low = max(1, int(p.minimum or 1))
    return {"integer": low, "number": float(low) + 4.0, "boolean": True, "array": []}.get(
        p.type, "reward.test@example.com" if "email" in p.name else "REWARD-TEST-1"
    )


def _find(app: App, spec: ToolSpec, ep: Episode, fixed: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Arguments for ``spec`` that succeed in ``ep``, trying rows of the sample state in turn.

    Rejected calls leave no effects, so candidates are tried in ``ep`` itself; on success the
    call has been made in ``ep``.
    """
    fixed = fixed or {}
    refs = [p for p in spec.params if p.required and p.ref and p.name not in fixed]
    pools = []
    for p in refs:
        key = app.blueprint.entity(p.ref or "").id_field
        pools.append([r[0] for r in ep.db.execute(f'SELECT "{key}" FROM "{p.ref}" ORDER BY "{key}"')])
    plain = {p.name: _value(p) for p in spec.params if p.required and not p.ref and p.name not in fixed}
    for combo in itertools.islice(itertools.product(*pools), 5000):
        args = {**plain, **fixed, **dict(zip((p.name for p in refs), combo))}
        if ep.call(spec.name, args).ok:
            return args
    return None


def _run(app: App, calls: list[Call], seed: int = 0) -> Effects:
    ep = app.episode(seed=seed)
    for name, args in calls:
        assert ep.call(name, args).outcome == "success", (name, args)
    return effects_of(app.blueprint, app.sample_state, ep.db)


def _key_param(spec: ToolSpec) -> str:
    return next(p.name for p in spec.params if p.ref == spec.entity)


@pytest.fixture(scope="module")
def two_transitions(app: App) -> list[tuple[ToolSpec, dict[str, Any]]]:
    """Two transition tools on different tables, each with arguments that succeed on s0."""
    found: list[tuple[ToolSpec, dict[str, Any]]] = []
    for spec in app.specs:
        if spec.kind == "transition" and all(spec.entity != s.entity for s, _ in found):
            args = _find(app, spec, app.episode())
            if args is not None:
                found.append((spec, args))
        if len(found) == 2:
            return found
    pytest.fail("harbor_market should have two independent transition tools")


def _reads(app: App, spec: ToolSpec, args: dict[str, Any]) -> list[Call]:
    """Harmless reads about the row a write touches: its get tool and the table's searches."""
    out: list[Call] = []
    for s in app.specs:
        if s.mode == "read" and s.entity == spec.entity and s.kind == "get" and _key_param(spec) in {p.name for p in s.params}:
            out.append((s.name, {_key_param(spec): args[_key_param(spec)]}))
        elif s.mode == "read" and s.entity == spec.entity and not any(p.required for p in s.params):
            out.append((s.name, {}))
    return out


def test_order_and_reads_do_not_matter(app: App, two_transitions) -> None:  # type: ignore[no-untyped-def]
    (t1, a1), (t2, a2) = two_transitions
    expected = _run(app, [(t1.name, a1), (t2.name, a2)])
    assert expected and set(expected.tables) == {t1.entity, t2.entity}
    actual = _run(app, [*_reads(app, t2, a2), (t2.name, a2), *_reads(app, t1, a1), (t1.name, a1), *_reads(app, t2, a2)])
    reward = compare(expected, actual)
    assert reward.score == 1.0 and reward.passed and reward.breakdown == ()
    assert actual == expected and hash(actual) == hash(expected)


def test_extra_harmful_write_fails_and_is_named(app: App, two_transitions) -> None:  # type: ignore[no-untyped-def]
    (t1, a1), (t2, a2) = two_transitions
    reward = compare(_run(app, [(t1.name, a1)]), _run(app, [(t1.name, a1), (t2.name, a2)]))
    assert reward.score == 0.0 and not reward.passed
    key = a2[_key_param(t2)]
    extra = [m for m in reward.breakdown if m.kind == "extra_update"]
    assert extra and all(m.table == t2.entity and m.key == key for m in extra)
    state_fields = {f.name for f in app.blueprint.entity(t2.entity).fields if f.type == "state"}
    assert any(m.field in state_fields for m in extra)
    assert all(m.message.startswith(f"extra write: {t2.entity} {key} {m.field} changed") for m in extra)
    assert {m.kind for m in reward.breakdown} == {"extra_update"}


def test_missing_write_fails_and_is_named(app: App, two_transitions) -> None:  # type: ignore[no-untyped-def]
    (t1, a1), (t2, a2) = two_transitions
    reward = compare(_run(app, [(t1.name, a1), (t2.name, a2)]), _run(app, [(t1.name, a1)]))
    assert reward.score == 0.0
    missing = [m for m in reward.breakdown if m.kind == "missing_update"]
    assert missing and {m.kind for m in reward.breakdown} == {"missing_update"}
    assert all(m.table == t2.entity and m.key == a2[_key_param(t2)] for m in missing)
    assert all(f"{m.field} is still {m.actual!r}, expected {m.expected!r}" in m.message for m in missing if isinstance(m.actual, str))


def test_wrong_value_message(app: App, two_transitions) -> None:  # type: ignore[no-untyped-def]
    (t1, a1), _ = two_transitions
    expected = _run(app, [(t1.name, a1)])
    table = expected.tables[t1.entity]
    ((key, fields),) = table.updated.items()
    field, want = next((f, v) for f, v in fields.items() if isinstance(v, str))
    actual = Effects.from_dict({t1.entity: {"updated": {key: {**fields, field: "bogus"}}}})
    (m,) = compare(expected, actual).breakdown
    assert (m.kind, m.table, m.key, m.field, m.expected, m.actual) == ("wrong_value", t1.entity, key, field, want, "bogus")
    assert m.message == f"{t1.entity} {key}: {field} is 'bogus', expected {want!r}"


@pytest.fixture(scope="module")
def creation(app: App) -> tuple[ToolSpec, dict[str, Any], ToolSpec, str, dict[str, Any]]:
    """A create tool and a write tool that adds a row referencing the created one."""
    for c, d in itertools.product(app.specs, app.specs):
        link = next((p.name for p in d.params if p.required and p.ref == c.entity), None)
        if c.kind != "create" or d.mode != "write" or not (d.creates or d.kind in ("create", "book")) or link is None:
            continue
        ep = app.episode(seed=1)
        c_args = _find(app, c, ep)
        if c_args is None:
            continue
        new_id = ep.db.execute(f'SELECT "{app.blueprint.entity(c.entity).id_field}" FROM "{c.entity}" ORDER BY rowid DESC').fetchone()[0]
        d_args = _find(app, d, ep, fixed={link: new_id})
        if d_args is not None:
            return c, c_args, d, link, d_args
    pytest.fail("harbor_market should have a create tool whose rows other tools reference")


def _create_chain(app: App, creation, seed: int, **change: Any) -> tuple[Effects, str]:  # type: ignore[no-untyped-def]
    c, c_args, d, link, d_args = creation
    ep = app.episode(seed=seed)
    res = ep.call(c.name, {**c_args, **change})
    assert res.ok, res.content
    new_id = res.data[app.blueprint.entity(c.entity).id_field]
    assert ep.call(d.name, {**d_args, link: new_id}).ok
    return effects_of(app.blueprint, app.sample_state, ep.db), new_id


def test_generated_ids_do_not_matter(app: App, creation) -> None:  # type: ignore[no-untyped-def]
    c, _, d, _, _ = creation
    expected, id1 = _create_chain(app, creation, seed=1)
    actual, id2 = _create_chain(app, creation, seed=2)
    assert id1 != id2
    child = expected.tables[d.entity].added
    assert any(str(v).startswith(f"<new {c.entity} #") for row in child for v in row.values())
    assert id1 not in json.dumps(expected.to_dict())
    reward = compare(expected, actual)
    assert reward.passed, reward.feedback
    assert Effects.from_dict(json.loads(json.dumps(actual.to_dict()))) == expected


def test_reference_to_a_different_new_row_fails(app: App, creation) -> None:  # type: ignore[no-untyped-def]
    c, _, d, _, _ = creation
    p = next(p for p in c.params if p.type == "string" and not p.ref and not p.enum and "email" not in p.name)
    expected, _ = _create_chain(app, creation, seed=1)
    actual, _ = _create_chain(app, creation, seed=2, **{p.name: "REWARD-OTHER"})
    missing = {m.table for m in compare(expected, actual).breakdown if m.kind == "missing_row"}
    assert missing == {c.entity, d.entity}  # the child row points at a parent with other content


def test_do_nothing_scores_zero(app: App, two_transitions, creation) -> None:  # type: ignore[no-untyped-def]
    nothing = effects_of(app.blueprint, app.sample_state, app.episode().db)
    assert not nothing and nothing.to_dict() == {}
    (t1, a1), _ = two_transitions
    for expected in (_run(app, [(t1.name, a1)]), _create_chain(app, creation, seed=1)[0]):
        reward = compare(expected, nothing)
        assert reward.score == 0.0 and reward.breakdown
    kinds = {m.kind for m in compare(_create_chain(app, creation, seed=1)[0], nothing).breakdown}
    assert "missing_row" in kinds
    reward = compare(nothing, nothing, expected_answer="41")
    assert reward.score == 0.0 and [m.kind for m in reward.breakdown] == ["missing_answer"]
    assert compare(nothing, nothing, expected_answer=None, answer="anything").passed


def _rows_with(rows: Rows, table: str, **changes: Any) -> Rows:
    """A copy of ``rows`` whose first row of ``table`` has ``changes``."""
    out = copy.deepcopy(rows)
    out[table][0].update(changes)
    return out


def test_money_tolerance_and_deletes(app: App, s0_rows: Rows) -> None:
    bp = app.blueprint
    price = s0_rows["product"][0]["price"]
    expected = effects_of(bp, s0_rows, _rows_with(s0_rows, "product", price=price + 10))
    assert compare(expected, effects_of(bp, s0_rows, _rows_with(s0_rows, "product", price=price + 10.004))).passed
    (m,) = compare(expected, effects_of(bp, s0_rows, _rows_with(s0_rows, "product", price=price + 10.01))).breakdown
    assert m.kind == "wrong_value" and m.field == "price"
    gone = copy.deepcopy(s0_rows)
    removed = gone["review"].pop(0)["review_id"]
    (m,) = compare(effects_of(bp, s0_rows, gone), Effects()).breakdown
    assert (m.kind, m.table, m.key) == ("missing_delete", "review", removed)
    (m,) = compare(Effects(), effects_of(bp, s0_rows, gone)).breakdown
    assert m.kind == "extra_delete" and m.message == f"extra write: review {removed} was deleted"


def test_new_rows_compare_as_multiset_with_datetime_modes(app: App, s0_rows: Rows) -> None:
    bp = app.blueprint
    base = dict(s0_rows["customer_order"][0], status="pending", paid_at=None)

    def with_order(oid: str, placed_at: str, **extra: Any) -> Rows:
        rows = copy.deepcopy(s0_rows)
        rows["customer_order"].append(dict(base, order_id=oid, placed_at=placed_at, **extra))
        return rows

    a = effects_of(bp, s0_rows, with_order("ord_1", "2030-01-01T09:00:00"), now="2030-01-01T09:00:00")
    b = effects_of(bp, s0_rows, with_order("ord_2", "2030-02-02T10:00:00"), now="2030-02-02T10:00:00")
    assert a.tables["customer_order"].added[0]["placed_at"] == "<now>" and compare(a, b).passed
    keep = {"datetimes": "keep"}
    assert not compare(effects_of(bp, s0_rows, with_order("ord_1", "2030-01-01T09:00:00"), **keep),
                       effects_of(bp, s0_rows, with_order("ord_2", "2030-01-01T09:05:00"), **keep)).passed  # fmt: skip
    ign = {"datetimes": "ignore"}
    assert compare(effects_of(bp, s0_rows, with_order("ord_1", "2030-01-01T09:00:00"), **ign),
                   effects_of(bp, s0_rows, with_order("ord_2", "1999-01-01T00:00:00"), **ign)).passed  # fmt: skip
    other = s0_rows["customer"][1]["customer_id"]
    wrong = effects_of(bp, s0_rows, with_order("ord_2", "2030-01-01T09:00:00", customer_id=other), now="2030-01-01T09:00:00")
    kinds = [m.kind for m in compare(a, wrong).breakdown]
    assert kinds == ["missing_row", "extra_row"]


@pytest.mark.parametrize(
    ("expected", "answer", "ok"),
    [
        (1234.5, "$1,234.50", True),
        ("$1,234.50", 1234.5, True),
        (42, "42.0", True),
        ("42", "$42.00", True),
        ("Shipped", "  shipped. ", True),
        (["a", "B"], "b, A", True),
        (["a", "b"], '["b", "a", "a"]', True),
        ([1234, 5], "1,234; 5", True),
        (["a", "b"], "a", False),
        (["a"], "a, c", False),
        ({"pending": 3, "paid": 1}, '{"Paid": "1.0", "pending": 3}', True),
        ({"pending": 3}, '{"pending": 4}', False),
        (41, "42", False),
    ],
)
def test_answer_normalisation(expected: Any, answer: Any, ok: bool) -> None:
    assert answers_match(expected, answer) is ok


def test_answers_in_compare() -> None:
    assert compare(Effects(), Effects(), expected_answer=1234.5, answer="$1,234.50").score == 1.0
    reward = compare(Effects(), Effects(), expected_answer=41, answer="42")
    assert isinstance(reward, Reward) and reward.score == 0.0
    (m,) = reward.breakdown
    assert m.kind == "wrong_answer" and m.message == "answer '42' does not match expected '41': the answer states 42, not 41"
    assert json.loads(json.dumps(reward.to_dict()))["breakdown"][0]["kind"] == "wrong_answer"
