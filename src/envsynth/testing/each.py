"""What a call's ``for_each`` effects must do to the state, worked out independently of the generated code.

From the state before the call, the arguments and the bound rows, :func:`expect` selects the
items of every for_each effect (the list parameter's items, or the rows the match selects,
kept where ``where`` holds) and computes the value of every field they write. The tester then
allows exactly those changes and checks each value (:meth:`EachExpectation.problems`): the
post-conditions a for_each implies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envsynth.blueprint import expr as X
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import Check, EachEffect, ToolSpec
from envsynth.runtime import evaluate as E
from envsynth.runtime.state import Rows


@dataclass
class EachExpectation:
    """The rows for_each effects change (``(table, id) -> {field: value}``) and insert (``table -> [values]``)."""

    updates: dict[tuple[str, Any], dict[str, Any]] = field(default_factory=dict)
    inserts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def problems(self, bp: Blueprint, after: Rows, added: dict[str, list[dict[str, Any]]]) -> list[str]:
        """Where the state after the call differs from what the for_each effects declare."""
        out = []
        for (table, key), values in self.updates.items():
            idf = bp.entity(table).id_field
            row = next((r for r in after[table] if r[idf] == key), None)
            for fname, want in values.items():
                got = None if row is None else row.get(fname)
                if not _same(got, want):
                    out.append(f"for_each: {table} {key}.{fname} is {got!r}, expected {want!r}")
        for table, wanted in self.inserts.items():
            pool = list(added.get(table, []))
            for values in wanted:
                hit = next((r for r in pool if all(_same(r.get(f), v) for f, v in values.items())), None)
                if hit is None:
                    out.append(f"for_each: no new {table} row with {values!r}")
                else:
                    pool.remove(hit)
        return out


def witnesses(spec: ToolSpec) -> list[Check]:
    """Conditions making every for_each over matched rows select at least one row (for positive fixtures)."""
    out = []
    for k, ef in enumerate(spec.each):
        if ef.source and ef.match:
            pairs = ", ".join(f"{f}={src}" for f, src in ef.match.items())
            out.append(Check(id=f"for_each[{k}]:witness", check=f"exists({ef.source}, {pairs})", message="", origin="implicit"))
    return out


def selects(bp: Blueprint, spec: ToolSpec, fx: Any, now: str) -> bool:
    """Whether every for_each over rows selects at least one row of fixture ``fx`` (before the call)."""
    ns = {**{p.name: fx.args.get(p.name) for p in spec.params}, **fx.aliases, "new": None}
    ns.update(E.row_functions(fx.rows, now, bp.tables))
    for ef in spec.each:
        if ef.source is None:
            continue
        try:
            items = _items(bp, spec, ef, ns, fx.rows)
            if not any(not ef.where or _eval(ef.where, {**ns, ef.alias: item}) for item in items):
                return False
        except (TypeError, KeyError, ValueError):  # a name the fixture cannot give yet (a row not bound)
            return False
    return True


def expect(bp: Blueprint, spec: ToolSpec, ns: dict[str, Any], before: Rows) -> EachExpectation:
    """The for_each changes of a call whose names (arguments, bound rows, ``new``) are ``ns``, on state ``before``."""
    ns = {**ns, **E.row_functions(before, ns.pop("_clock"), bp.tables)}
    out = EachExpectation()
    for ef in spec.each:
        for item in _items(bp, spec, ef, ns, before):
            scope = {**ns, ef.alias: item}
            if ef.where and not _eval(ef.where, scope):
                continue
            values = {f: _eval(src, scope) for f, src in ef.values.items() if src != "new_id()"}
            if ef.op == "insert":
                out.inserts.setdefault(ef.entity, []).append(values)
            else:
                key = (ef.entity, item[bp.entity(ef.entity).id_field])
                out.updates.setdefault(key, {}).update(values)
    return out


def _items(bp: Blueprint, spec: ToolSpec, ef: EachEffect, ns: dict[str, Any], before: Rows) -> list[Any]:
    if ef.param is not None:
        rows = next((b.alias for b in spec.bindings if b.many and b.item is None and b.param == ef.param), None)
        return list((ns.get(rows) if rows else ns.get(ef.param)) or [])
    want = {f: _eval(src, ns) for f, src in ef.match.items()}
    idf = bp.entity(ef.source or "").id_field
    return sorted((r for r in before[ef.source or ""] if all(r.get(f) == v for f, v in want.items())), key=lambda r: r[idf])


def _eval(source: str, ns: dict[str, Any]) -> Any:
    return E.evaluate(X.compile_eval(X.parse(source)), ns)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool) and not isinstance(b, bool):
        return abs(a - b) < 0.005 + 1e-9 * abs(b)
    return a == b
