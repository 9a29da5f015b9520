"""Solvable by construction: every row a task names can be found with tools from what the request states.

An agent is given names, dates and amounts, never ids. For each row the request names,
this finds a route of tools that gets its id from what is stated:

- a get by a unique field the description states (a product by its SKU), or, for the
  requester's own row, by a field they identify themselves by (a customer by email);
- a search over the row's table whose required parameters are all known: a value the
  description states, or a reference to a row that can itself be found (the orders of a
  customer found by email). The search then lists rows that the description, unique in
  the task's state, tells apart;
- a named row, or the requester's, that can be found and refers to it (the requester's
  workspace: their user row, found by email, holds its id).

The tools of the routes are added to the task's visible tools; a row no route reaches
makes the candidate unsolvable (rejection ``not_solvable``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, ref_fields
from envsynth.tasks.describe import Description, noun, render
from envsynth.tasks.instruction import Requester, identify_by, refers_to

MAX_DEPTH = 2  # a row found through its parent, found through its parent


@dataclass(frozen=True)
class Lookups:
    """The tools that find the named rows, and a sentence per row that none can find."""

    tools: tuple[str, ...]
    lost: tuple[str, ...]


def lookups(app: App, rows: Rows, descs: dict[tuple[str, Any], Description], requester: Requester) -> Lookups:
    """Routes to every described row (``descs``) and to the requester's own row, when the request acts on it."""
    finder = _Finder(app, rows, descs, requester)
    tools: list[str] = []
    lost: list[str] = []
    wanted = list(descs)
    if requester.key is not None and (requester.table, requester.key) not in descs:
        wanted.append((requester.table, requester.key))
    for table, key in wanted:
        route = finder.route(table, key, 0)
        if route is None:
            d = descs.get((table, key))
            lost.append(render(app.blueprint, d) if d is not None else f"the requester's {noun(app.blueprint.entity(table))}")
            continue
        tools += [t for t in route if t not in tools]
    return Lookups(tuple(tools), tuple(lost))


class _Finder:
    def __init__(self, app: App, rows: Rows, descs: dict[tuple[str, Any], Description], requester: Requester) -> None:
        self.app = app
        self.bp = app.blueprint
        self.rows = rows
        self.descs = descs
        self.requester = requester
        self.me = (requester.table, requester.key) if requester.key is not None else None
        self.identify_by = set(identify_by(self.bp, self.bp.entity(requester.table))) if requester.table else set()
        self.parents: dict[tuple[str, Any], Description] = {}  # rows described as the parent of a named row
        for (table, key), d in descs.items():
            self._note_parents(d, self._row(table, key))

    def _note_parents(self, d: Description, row: dict[str, Any] | None) -> None:
        """Record the descriptions of the rows ``d`` names ``row`` through (its parents, theirs...)."""
        for ref, pd in d.parents() if row is not None else ():
            self.parents.setdefault((pd.entity, row.get(ref)), pd)  # type: ignore[union-attr]
            self._note_parents(pd, self._row(pd.entity, row.get(ref)))  # type: ignore[union-attr]

    def route(self, table: str, key: Any, depth: int) -> list[str] | None:
        """Tools that find row ``key`` of ``table`` from what is stated, or None."""
        stated = self._stated(table, key)
        row = self._row(table, key)
        if row is None or not stated:  # nothing the request says picks this row out
            return None
        for spec in self.app.specs:
            found = self._get(spec, table, stated) or self._search(spec, table, row, stated, depth)
            if found is not None:
                return found
        return self._referred(table, key, depth)

    def _referred(self, table: str, key: Any, depth: int) -> list[str] | None:
        """Tools that find a named row (or the requester's) that refers to row ``key``: its result holds the key
        ("my workspace": the requester's user row, found by email, has the workspace's id)."""
        if depth >= MAX_DEPTH:
            return None
        for other in [*([self.me] if self.me is not None else []), *self.descs]:
            row = self._row(*other)
            if other == (table, key) or row is None:
                continue
            if any(ref == table and row.get(name) == key for name, ref in ref_fields(self.bp.entity(other[0]))):
                found = self.route(other[0], other[1], depth + 1)
                if found is not None:
                    return found
        return None

    def _stated(self, table: str, key: Any) -> set[str]:
        d = self.descs.get((table, key)) or self.parents.get((table, key))
        stated = set(d.facts) if d is not None else set()
        if d is not None:  # "the stock entry of the product X": a search can filter on X once X is found
            stated |= {ref for ref, _ in d.parents()}
        if (table, key) == self.me:
            stated |= self.identify_by
        return stated

    def _row(self, table: str, key: Any) -> dict[str, Any] | None:
        idf = self.bp.entity(table).id_field
        return next((r for r in self.rows.get(table, ()) if r.get(idf) == key), None)

    def _get(self, spec: ToolSpec, table: str, stated: set[str]) -> list[str] | None:
        if spec.kind != "get" or not spec.bindings or spec.bindings[0].entity != table:
            return None
        key_field = spec.bindings[0].key
        unique = key_field != self.bp.entity(table).id_field and self.bp.entity(table).field(key_field).unique
        return [spec.name] if unique and key_field in stated else None

    def _search(self, spec: ToolSpec, table: str, row: dict[str, Any], stated: set[str], depth: int) -> list[str] | None:
        q = spec.query
        if q is None or q.op != "search" or q.entity != table:
            return None
        tools = [spec.name]
        for p in spec.params:
            field = p.field.split(".", 1)[1] if p.field else p.name
            parent = refers_to(self.bp, p)
            through_parent = parent is not None and parent != table and field in stated  # the row's parent, as described
            if not (p.required or through_parent) or p.name in ("limit", "offset"):
                continue
            if parent is not None and parent != table and depth < MAX_DEPTH and row.get(field) is not None:
                sub = self.route(parent, row[field], depth + 1)  # the rows of a parent that can be found
                if sub is None:
                    return None
                tools += [t for t in sub if t not in tools]
            elif field not in stated:
                return None
        return tools
