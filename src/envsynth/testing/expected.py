"""What a successful call must have done, judged independently of the tool's code (ScaleEnv's positive cases).

* :func:`change_problems`: only the rows and fields the tool's effects name may change
  (inserts and deletes counted, cascades followed, ``for_each`` effects expanded; a custom
  tool may change only what it declares it writes, creates or deletes);
* :func:`post_problems`: every post-condition holds, with ``old(x)`` reading the state
  before the call;
* :func:`query_problems`: a read returns what a Python evaluation of its query over the
  state before the call returns (get, search with sort and paging, aggregates).

Each returns the problems as one line each, empty when the call did what it should.
"""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime import evaluate as E
from envsynth.runtime import toolkit as F
from envsynth.runtime.state import Rows, diff_rows
from envsynth.testing import each as EACH
from envsynth.testing.fixtures import Fixture


def _post_hook(node: ast.AST) -> str | None:
    """Post-conditions: ``old(x)`` reads the state before the call (``_before``)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "old":
        return X.render(node.args[0], _before_hook)
    return None


def _before_hook(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"_before[{node.value.id!r}][{node.attr!r}]"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in X.ROW_FUNCTIONS:
        table, sel, test = X.row_call(node, lambda n: X.render(n, _before_hook))
        if node.func.id == "all":
            return f"_all_before({table!r}, {sel}, {test})"
        return f"_{'exists' if node.func.id == 'any' else node.func.id}_before({table!r}, {sel})"
    return None


def _match(rows: list[dict[str, Any]], where: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in rows if F.row_matches(r, where)]


def change_problems(bp: Blueprint, spec: ToolSpec, now: str, fx: Fixture, before: Rows, after: Rows) -> list[str]:
    """Only the rows and fields the effects name may change."""
    diff = diff_rows(bp, before, after)
    allowed_fields, inserts, deletes = _allowed_changes(bp, spec, fx, before)
    each = _each(bp, spec, now, fx, before, diff) if spec.each else EACH.EachExpectation()
    for (table, key), values in each.updates.items():
        allowed_fields.setdefault((table, key), set()).update(values)
    for table, wanted in each.inserts.items():
        inserts[table] += len(wanted)
    problems = _diff_problems(spec, diff, allowed_fields, inserts, deletes)
    for table, n in inserts.items():
        if table not in diff and n:
            problems.append(f"expected {n} new {table} row(s), none added")
    for table, keys in deletes.items():
        if keys and (table not in diff or set(diff[table].removed) != keys):
            if table not in diff:
                problems.append(f"expected {table} rows {sorted(keys)} removed")
    added = {table: list(d.added.values()) for table, d in diff.items()}
    return problems + each.problems(bp, after, added)


def _allowed_changes(
    bp: Blueprint, spec: ToolSpec, fx: Fixture, before: Rows
) -> tuple[dict[tuple[str, str], set[str]], Counter[str], dict[str, set[str]]]:
    """The fields each (table, key) may change, the rows each table gains, the keys each loses (cascades included)."""
    allowed_fields: dict[tuple[str, str], set[str]] = {}
    inserts: Counter[str] = Counter()
    deletes: dict[str, set[str]] = {}
    for ef in spec.effects:
        ent = bp.entity(ef.entity)
        if ef.op == "insert":
            inserts[ef.entity] += 1
            continue
        row = fx.aliases.get(ef.alias)
        if row is None:
            continue
        key = row[ent.id_field]
        if ef.op == "update":
            allowed_fields.setdefault((ef.entity, key), set()).update(ef.values)
        else:
            deletes.setdefault(ef.entity, set()).add(key)
            for child, ref in ef.cascade:
                child_ent = bp.entity(child)
                deletes.setdefault(child, set()).update(r[child_ent.id_field] for r in before[child] if r.get(ref) == key)
    return allowed_fields, inserts, deletes


def _diff_problems(
    spec: ToolSpec, diff: Any, allowed_fields: dict[tuple[str, str], set[str]], inserts: Counter[str], deletes: dict[str, set[str]]
) -> list[str]:
    """The changes of each table that the effects (or a custom tool's declarations) do not allow."""
    problems = []
    custom = spec.code is not None
    for table, d in diff.items():
        for key, cols in d.changed.items():
            ok_cols = set(spec.writes.get(table, [])) if custom else allowed_fields.get((table, key), set())
            bad = set(cols) - ok_cols
            if bad:
                problems.append(f"unexpected change of {table} {key}: {sorted(bad)}")
        if custom:
            if d.added and table not in spec.creates:
                problems.append(f"unexpected new {table} rows")
            if d.removed and table not in spec.deletes:
                problems.append(f"unexpected removal of {table} rows")
            continue
        if len(d.added) != inserts.get(table, 0):
            problems.append(f"{len(d.added)} new {table} rows, expected {inserts.get(table, 0)}")
        if set(d.removed) != deletes.get(table, set()):
            problems.append(f"removed {table} rows {sorted(d.removed)}, expected {sorted(deletes.get(table, set()))}")
    return problems


def _each(bp: Blueprint, spec: ToolSpec, now: str, fx: Fixture, before: Rows, diff: Any) -> EACH.EachExpectation:
    """What the for_each effects must change, from the state before the call (``new``: the row the call inserted)."""
    ns: dict[str, Any] = {p.name: fx.args.get(p.name) for p in spec.params}
    ns.update(fx.aliases)
    main = next((ef for ef in spec.effects if ef.op == "insert" and ef.alias == "new"), None)
    added = list(diff[main.entity].added.values()) if main is not None and main.entity in diff else []
    ns["new"] = added[0] if added else None
    ns["_clock"] = now
    return EACH.expect(bp, spec, ns, before)


def post_problems(
    bp: Blueprint, spec: ToolSpec, now: str, fx: Fixture, args: dict[str, Any], before: Rows, after: Rows, result: Any
) -> list[str]:
    """The post-conditions that do not hold after the call (``old(x)``: ``x`` before it)."""
    if not spec.post:
        return []
    before_alias: dict[str, Any] = {}
    after_alias: dict[str, Any] = {}
    for b in spec.bindings:
        row = fx.aliases.get(b.alias)
        if row is None or b.many:  # the rows of a list of ids: as loaded
            before_alias[b.alias] = after_alias[b.alias] = row
            continue
        ent = bp.entity(b.entity)
        key = row[ent.id_field]
        before_alias[b.alias] = next((r for r in before[b.entity] if r[ent.id_field] == key), None)
        after_alias[b.alias] = next((r for r in after[b.entity] if r[ent.id_field] == key), None)
    diff = diff_rows(bp, before, after)
    for ef in spec.effects:
        if ef.op == "insert":
            added = list(diff.get(ef.entity).added.values()) if ef.entity in diff else []
            after_alias[ef.alias] = added[0] if len(added) == 1 else None
    ns: dict[str, Any] = {p.name: args.get(p.name) for p in spec.params}
    ns.update(after_alias)
    ns["result"] = result
    ns["_before"] = before_alias
    ns.update(
        _now=lambda: now,
        _today=lambda: now[:10],
        _exists=lambda t, w: bool(_match(after[t], w)),
        _count=lambda t, w: len(_match(after[t], w)),
        _exists_before=lambda t, w: bool(_match(before[t], w)),
        _count_before=lambda t, w: len(_match(before[t], w)),
        _all=E.all_rows(after),
        _all_before=E.all_rows(before),
        _lookup=E.table_lookup(bp.tables),
    )
    problems = []
    for c in spec.post:
        code = compile(X.render(X.parse(c.check), _post_hook), "<post>", "eval")
        try:
            ok = E.evaluate(code, ns)
        except E.EVALUATION_ERRORS as exc:
            ok = False
            c = c.model_copy(update={"message": f"{c.message} ({type(exc).__name__}: {exc})"})
        if not ok:
            problems.append(f"post-condition {c.id} failed: {c.check}")
    return problems


def query_problems(bp: Blueprint, spec: ToolSpec, fx: Fixture, args: dict[str, Any], before: Rows, result: Any) -> list[str]:
    """How a read's result differs from its query evaluated in Python over the state before the call."""
    q = spec.query
    if q is None:
        return []
    if q.op == "get":
        expected = fx.aliases.get(q.alias or "")
        ent = bp.entity(q.entity)
        ref = next((r for r in before[q.entity] if expected and r[ent.id_field] == expected[ent.id_field]), None)
        return [] if result == ref else [f"get returned {result!r}, expected {ref!r}"]
    rows = [r for r in before[q.entity] if _passes(r, q.filters, args)]
    if q.op == "search":
        ent = bp.entity(q.entity)
        rows.sort(key=lambda r: r[ent.id_field])
        rows.sort(key=lambda r: _sort_key(r.get(q.sort or ent.id_field)), reverse=q.descending)
        limit = args.get("limit", spec.param("limit").default)
        offset = args.get("offset", 0)
        want = {"total": len(rows), "items": rows[offset : offset + limit]}
        return (
            []
            if result == want
            else [
                f"search returned total {result.get('total')} / {len(result.get('items', []))} items, expected {want['total']} / {len(want['items'])}"
            ]
        )
    want_val = _aggregate(q.agg or "count", q.field, q.group_by, rows)
    if not _close(result, want_val):
        return [f"aggregate returned {result!r}, expected {want_val!r}"]
    return []


def _passes(row: dict[str, Any], filters: list[Any], args: dict[str, Any]) -> bool:
    for f in filters:
        v = args.get(f.param)
        if v is None:
            continue
        x = row.get(f.field)
        if f.op == "eq" and x != v:
            return False
        if f.op == "contains" and (x is None or str(v).lower() not in str(x).lower()):
            return False
        if f.op == "gte" and (x is None or x < v):
            return False
        if f.op == "lte" and (x is None or x > v):
            return False
        if f.op == "in" and x not in v:
            return False
    return True


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, 0) if v is None else (1, v)


def _aggregate(op: str, field: str | None, group_by: str | None, rows: list[dict[str, Any]]) -> Any:
    def agg(rs: list[dict[str, Any]]) -> Any:
        vals = [r[field] for r in rs if field and r.get(field) is not None]
        if op == "count":
            return len(rs)
        if op == "sum":
            return round(float(sum(vals)), 2)
        if not vals:
            return None
        if op == "avg":
            return round(sum(vals) / len(vals), 2)
        return min(vals) if op == "min" else max(vals)

    if group_by:
        keys = sorted({r.get(group_by) for r in rows}, key=_sort_key)
        return {"groups": [{group_by: k, "value": agg([r for r in rows if r.get(group_by) == k])} for k in keys]}
    return {"value": agg(rows)}


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) < 0.005 + 1e-9 * abs(b)
    return a == b
