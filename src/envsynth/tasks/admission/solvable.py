"""Solvable by construction: every row a task names can be found with tools from what the request states.

An agent is given names, dates and amounts, never ids. For each row the request names,
this finds a route of tools that gets its id from what is stated:

- a get by a unique field the description states (a product by its SKU), or, for the
  requester's own row, by a field they identify themselves by (a customer by email);
- a search over the row's table whose required parameters are all known: a value the
  description states, or a reference to a row that can itself be found (the orders of a
  customer found by email; the requester's own rows through the requester). The search then
  lists rows that the description, unique in the task's state, tells apart.

The tools of the routes are added to the task's visible tools; a row no route reaches
makes the candidate unsolvable (rejection ``not_solvable``). A :class:`Route` is also what the
oracle follows (:mod:`envsynth.tasks.admission.lookup`): its calls find each row as an agent would.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from envsynth.blueprint.language import person_name
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, ref_fields
from envsynth.tasks.wording.describe import Description, noun, render
from envsynth.tasks.wording.instruction import Requester, identify_by, refers_to

T = TypeVar("T")

MAX_DEPTH = 2  # a row found through its parent, found through its parent


@dataclass(frozen=True)
class Lookups:
    """The tools that find the named rows, a sentence per row that none can find, and the route to each row found."""

    tools: tuple[str, ...]
    lost: tuple[str, ...]
    routes: dict[tuple[str, Any], Route] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """How one row is found from what is stated: a get by a stated value, or a search.

    Attributes:
        tool: the get or search.
        table: the row's table.
        key: the row's id.
        args: the stated values the call passes (the get's key; the search's required and stated filters).
        parents: (parameter, route) per parent row whose id the search takes, found first.
        unknown: parameters that would need a parent's id no route reaches (the route cannot be followed).
    """

    tool: str
    table: str
    key: Any
    args: dict[str, Any] = field(default_factory=dict)
    parents: tuple[tuple[str, Route], ...] = ()
    unknown: tuple[str, ...] = ()

    def tools(self) -> list[str]:
        """The route's tools: its own, then its parents' (each once)."""
        out = [self.tool]
        for _, sub in self.parents:
            out += [t for t in sub.tools() if t not in out]
        return out


def lookups(app: App, rows: Rows, descs: dict[tuple[str, Any], Description], requester: Requester) -> Lookups:
    """Routes to every described row (``descs``) and to the requester's own row, when the request acts on it."""
    finder = Finder(app, rows, descs, requester)
    tools: list[str] = []
    lost: list[str] = []
    routes: dict[tuple[str, Any], Route] = {}
    wanted = list(descs)
    if requester.key is not None and (requester.table, requester.key) not in descs:
        wanted.append((requester.table, requester.key))
    for table, key in wanted:
        route = finder.route(table, key)
        if route is None:
            d = descs.get((table, key))
            lost.append(render(app.blueprint, d) if d is not None else f"the requester's {noun(app.blueprint.entity(table))}")
            continue
        routes[(table, key)] = route
        tools += [t for t in route.tools() if t not in tools]
    return Lookups(tuple(tools), tuple(lost), routes)


class Finder:
    """Routes to the rows of one state that ``descs`` describe (and to the requester's row), from what is stated."""

    def __init__(self, app: App, rows: Rows, descs: dict[tuple[str, Any], Description], requester: Requester) -> None:
        self.app = app
        self.bp = app.blueprint
        self.rows = rows
        self.descs = descs
        self.requester = requester
        self.me = (requester.table, requester.key) if requester.key is not None else None
        self.identify_by = set(identify_by(self.bp, self.bp.entity(requester.table))) if requester.table else set()
        if requester.table and (name := person_name(self.bp.entity(requester.table))):
            self.identify_by.add(name)  # the greeting gives the name too
        self.parents: dict[tuple[str, Any], Description] = {}  # rows described as the parent of a named row
        self._by_id: dict[str, dict[Any, dict[str, Any]]] = {}
        self._tools: dict[str, tuple[list[ToolSpec], list[ToolSpec]]] = {}
        for (table, key), d in descs.items():
            self._note_parents(d, self._row(table, key))

    def _note_parents(self, d: Description, row: dict[str, Any] | None) -> None:
        """Record the descriptions of the rows ``d`` names ``row`` through (its parents, theirs...)."""
        for ref, pd in d.parents() if row is not None else ():
            self.parents.setdefault((pd.entity, row.get(ref)), pd)  # type: ignore[union-attr]
            self._note_parents(pd, self._row(pd.entity, row.get(ref)))  # type: ignore[union-attr]

    def route(self, table: str, key: Any, depth: int = 0) -> Route | None:
        """The route that finds row ``key`` of ``table`` from what is stated (a get by a unique value first), or None."""
        stated = self._stated(table, key)
        row = self._row(table, key)
        if row is None or not stated:  # nothing the request says picks this row out
            return None
        gets, searches = self._tools_of(table)
        for spec in gets:
            found = self._get(spec, table, row, stated)
            if found is not None:
                return found
        for spec in searches:
            found = self._search(spec, table, row, stated, depth)
            if found is not None:
                return found
        return None

    def _kept(self, build: Callable[..., T], *key: Hashable) -> T:
        """``build(app, *key)``, kept on the app's index (an App has one; a stand-in for one may not)."""
        index = getattr(self.app, "index", None)
        return index.of(build, self.app, *key) if index is not None else build(self.app, *key)

    def _tools_of(self, table: str) -> tuple[list[ToolSpec], list[ToolSpec]]:
        """The gets and the searches over ``table``, in the app's order."""
        if not self._tools:
            self._tools = self._kept(_tools_by_table)
        return self._tools.get(table, ([], []))

    def _stated(self, table: str, key: Any) -> set[str]:
        if (table, key) == self.me:  # "me": the request gives the requester's name and what they identify themselves by
            return set(self.identify_by)
        d = self.descs.get((table, key)) or self.parents.get((table, key))
        stated = set(d.facts) if d is not None else set()
        if d is not None:  # "the stock entry of the product X": a search can filter on X once X is found
            stated |= {ref for ref, _ in d.parents()}
        if d is not None and self.me is not None:  # "my subscription": a search can list the requester's rows
            row = self._row(table, key) or {}
            stated |= {f for f, t in ref_fields(self.bp.entity(table)) if t == self.me[0] and row.get(f) == self.me[1]}
        return stated

    def _row(self, table: str, key: Any) -> dict[str, Any] | None:
        if table not in self._by_id:
            idf = self.bp.entity(table).id_field
            by_id: dict[Any, dict[str, Any]] = {}
            for r in self.rows.get(table, ()):
                by_id.setdefault(r.get(idf), r)  # the first row with an id, as a scan finds it
            self._by_id[table] = by_id
        return self._by_id[table].get(key)

    def _get(self, spec: ToolSpec, table: str, row: dict[str, Any], stated: set[str]) -> Route | None:
        if spec.kind != "get" or not spec.bindings or spec.bindings[0].entity != table:
            return None
        b = spec.bindings[0]
        ent = self.bp.entity(table)
        if not (by_unique_value(self.bp, spec) and b.key in stated and b.param):
            return None
        return Route(spec.name, table, row[ent.id_field], {b.param: row.get(b.key)})

    def _search(self, spec: ToolSpec, table: str, row: dict[str, Any], stated: set[str], depth: int) -> Route | None:
        q = spec.query
        if q is None or q.op != "search" or q.entity != table:
            return None
        ops, params = self._kept(_search_params, spec.name)
        out = _Search(ops)
        for p, fname, parent in params:
            if not self._fill(out, p, fname, parent, table, row, stated, depth):
                return None
        return Route(spec.name, table, row[self.bp.entity(table).id_field], out.args, tuple(out.parents), tuple(out.unknown))

    def _fill(
        self, out: _Search, p: ParamSpec, fname: str, parent: str | None, table: str, row: dict[str, Any], stated: set[str], depth: int
    ) -> bool:
        """Give the search's parameter ``p`` (on field ``fname``, carrying the id of a ``parent`` row, if any) what finds ``row``
        (into ``out``); False when nothing stated does."""
        through_parent = parent is not None and parent != table and fname in stated  # the row's parent, as described
        if not (p.required or through_parent):
            if parent is None and fname in stated and row.get(fname) is not None and p.name in out.ops:
                out.args[p.name] = _filter_value(out.ops[p.name], row[fname])  # a stated value the search filters on
            return True
        if parent is not None and parent != table and depth < MAX_DEPTH and row.get(fname) is not None:
            sub = self.route(parent, row[fname], depth + 1)  # the rows of a parent that can be found
            if sub is not None:
                out.parents.append((p.name, sub))
            return sub is not None
        if fname not in stated:
            return False
        if parent is not None:
            out.unknown.append(p.name)  # a parent's id, stated as the parent but past the depth a route follows
        else:
            out.args[p.name] = _filter_value(out.ops.get(p.name, "eq"), row.get(fname))
        return True


def by_unique_value(bp: Blueprint, get: ToolSpec) -> bool:
    """Whether a get finds its row by a unique field other than the id (a user by email, a product by SKU)."""
    ent = bp.entity(get.bindings[0].entity)
    key = get.bindings[0].key
    return key != ent.id_field and ent.has(key) and ent.field(key).unique


@dataclass
class _Search:
    """A search's route being made: its filters' ops by parameter, and what it passes so far."""

    ops: dict[str, str]
    args: dict[str, Any] = field(default_factory=dict)
    parents: list[tuple[str, Route]] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _tools_by_table(app: App) -> dict[str, tuple[list[ToolSpec], list[ToolSpec]]]:
    """Per table, the gets that find a row of it by a binding and the searches over it, in the app's order."""
    out: dict[str, tuple[list[ToolSpec], list[ToolSpec]]] = {}
    for s in app.specs:
        if s.kind == "get" and s.bindings:
            out.setdefault(s.bindings[0].entity, ([], []))[0].append(s)
        if s.query is not None and s.query.op == "search":
            out.setdefault(s.query.entity, ([], []))[1].append(s)
    return out


def _search_params(app: App, tool: str) -> tuple[dict[str, str], tuple[tuple[ParamSpec, str, str | None], ...]]:
    """A search's filter ops by parameter, and its parameters but paging: (parameter, field, the table whose id it
    carries, if any)."""
    spec = app.spec_by_name[tool]
    ops = {f.param: f.op for f in spec.query.filters} if spec.query is not None else {}
    params = tuple(
        (p, p.field.split(".", 1)[1] if p.field else p.name, refers_to(app.blueprint, p))
        for p in spec.params
        if p.name not in ("limit", "offset")
    )
    return ops, params


def _filter_value(op: str, value: Any) -> Any:
    """The argument of a filter of ``op`` that keeps a row whose field is ``value`` (a list for ``in``)."""
    return [value] if op == "in" else value
