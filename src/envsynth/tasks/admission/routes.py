"""A variant stage: the oracle finds every row it passes the id of through the visible tools, as an agent must.

The solvability rule (:mod:`envsynth.tasks.admission.solvable`) finds, for each row the request names,
a :class:`~envsynth.tasks.admission.solvable.Route`: a get by a value the request states, or a search
over the row's table whose parent rows are found first. :func:`look_up_rows` makes the
oracle follow those routes in each state: before the first call that passes a row's id, it
calls the route's tools (a search takes its parent's id from the parent's lookup and the
stated values it filters on) and takes the id from the result, ``items[k].<id>`` for the
k-th row a search lists. "Add the song Borrowed Daydream to my playlist Road Trip" becomes
``find_listener_by_email``, ``search_playlists(listener_id=r0.listener_id)``,
``search_tracks(title=...)``, then ``add_track_to_playlist`` with both ids taken from them.

A lookup goes before the first call that needs its row, and before any earlier call that
writes a table it reads, so it finds what it would find on s0 (which is what lets
:func:`envsynth.tasks.admission.admit.vary` check the variant by running only its lookups). A row
the oracle passes by id that no route reaches in a state (or that its search does not list)
rejects the task as ``not_solvable``: the request would not let an agent find it. Only an id
the request itself states is passed as it is (admission rejects such requests before this).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from envsynth.runtime.app import App
from envsynth.runtime.state import Rows
from envsynth.tasks.admission.admit import Admitted, written_tables
from envsynth.tasks.admission.lookup import requester_row, with_oracle
from envsynth.tasks.admission.solvable import Finder, Route
from envsynth.tasks.building.instantiate import ChainFailed, Workspace, execute
from envsynth.tasks.model import Call, Ref, Rejection
from envsynth.tasks.wording.instruction import Requester, identify_by, refers_to

Row = tuple[str, Any]  # (table, id)


@dataclass
class Lookup:
    """One call of a route, planned: the row it finds and where it goes in the oracle.

    Attributes:
        row: the (table, id) it finds.
        tool: the get or search.
        args: the stated values it passes.
        parents: parameter -> the parent row whose id it takes (found by an earlier lookup).
        at: the step of the oracle it goes before.
        item: for a search, the row's place among the items it lists (set by :func:`place_items`).
        result: what the call returns on s0 (set by :func:`place_items`).
    """

    row: Row
    tool: str
    args: dict[str, Any]
    parents: dict[str, Row] = field(default_factory=dict)
    at: int = 0
    item: int | None = None
    result: Any = None
    _call: Call | None = None

    def call(self) -> Call:
        """The call with the parents' ids as literals (how it runs on s0 to place its row)."""
        if self._call is None:
            self._call = Call(tool=self.tool, args={**self.args, **{p: key for p, (_, key) in self.parents.items()}})
        return self._call


def look_up_rows(app: App, admitted: Admitted) -> Admitted | Rejection:
    """``admitted`` whose oracle finds every pre-existing row it passes the id of by the row's route (see the module).

    Unchanged when every such id already comes from a lookup; a Rejection (``not_solvable``) when a row has no
    route in this state the oracle can follow. Runs after :func:`~envsynth.tasks.admission.lookup.look_up_requester`.
    """
    task = admitted.task
    wanted = literal_rows(app, admitted.state, task.oracle, task.instruction)
    if not wanted:
        return admitted
    finder: Finder | None = None
    known = found_by_lookups(app, admitted)
    planned: list[Lookup] = []
    for row, first in wanted.items():
        route = admitted.routes.get(row)
        if route is None:
            finder = finder or Finder(app, admitted.state, admitted.descs, asker(app, admitted))
            route = finder.route(*row)
        if route is None or not plan_route(route, known, planned, first):
            return _unsolvable(app, admitted, f"no route the oracle can follow finds {row[0]} {row[1]}")
    settle(app, task.oracle, planned)
    earlier = [task.oracle[s] for s in admitted.lookups]  # an earlier variant's lookups (the requester's): run along
    ran = place_items(app, admitted, planned, earlier)
    if isinstance(ran, str):
        return _unsolvable(app, admitted, ran)
    calls, answer_step, lookups, runs = interleave(app, admitted, planned, known)
    varied = with_oracle(admitted, calls, answer_step, lookups)
    if any(c.refs for c in earlier):
        return varied  # vary runs the lookups itself
    return replace(varied, runs=(*zip(earlier, ran, strict=True), *runs))


def literal_rows(app: App, rows: dict[str, list[dict[str, Any]]], oracle: list[Call], text: str) -> dict[Row, int]:
    """The rows of ``rows`` whose id an oracle call passes as a literal (not an id the request states), with the first
    step that does, in the order of the calls."""
    bp = app.blueprint
    out: dict[Row, int] = {}
    ids: dict[str, set[Any]] = {}
    for i, call in enumerate(oracle):
        for p in app.spec_by_name[call.tool].params:
            key = call.args.get(p.name)
            table = refers_to(bp, p) if isinstance(key, str) else None
            if table is None or (table, key) in out or key in text:
                continue
            if table not in ids:
                idf = bp.entity(table).id_field
                ids[table] = {r.get(idf) for r in rows.get(table, ())}
            if key in ids[table]:
                out[(table, key)] = i
    return out


def asker(app: App, admitted: Admitted) -> Requester:
    """Who asks, as the route finder needs them: their row in this state when they identify themselves, else staff."""
    found = requester_row(app, admitted)
    if found is None:
        return Requester(admitted.task.user)
    table, row = found
    ent = app.blueprint.entity(table)
    return Requester(admitted.task.user, table, row[ent.id_field], tuple(str(row[f]) for f in identify_by(app.blueprint, ent)))


def found_by_lookups(app: App, admitted: Admitted) -> dict[Row, Ref]:
    """The rows an earlier variant's lookup already finds (the requester's, at step 0), and the ref to their id."""
    task = admitted.task
    found = requester_row(app, admitted)
    if found is None or 0 not in admitted.lookups:
        return {}
    table, row = found
    idf = app.blueprint.entity(table).id_field
    first = task.oracle[0]
    spec = app.spec_by_name[first.tool]
    finds_me = spec.kind == "get" and spec.bindings and spec.bindings[0].entity == table
    if not finds_me or first.args != {spec.bindings[0].param: row[spec.bindings[0].key]}:
        return {}
    return {(table, row[idf]): Ref(step=0, field=idf)}


def plan_route(route: Route, known: dict[Row, Ref], planned: list[Lookup], first: int) -> bool:
    """Add the calls of ``route`` not planned yet to ``planned``, parents first, to go before step ``first``.

    False when some step of the route needs a parent's id no route reaches.
    """
    if route.unknown:
        return False
    row = (route.table, route.key)
    if row in known or any(lk.row == row for lk in planned):
        return True
    for _, sub in route.parents:
        if not plan_route(sub, known, planned, first):
            return False
    parents = {p: (sub.table, sub.key) for p, sub in route.parents}
    planned.append(Lookup(row, route.tool, dict(route.args), parents, at=first))
    return True


def settle(app: App, oracle: list[Call], planned: list[Lookup]) -> None:
    """Move each lookup before any earlier call that writes a table it reads, and each parent's before its children's."""
    for lk in planned:
        spec = app.spec_by_name[lk.tool]
        reads = {spec.entity, *spec.reads}
        lk.at = next((i for i in range(lk.at) if written_tables(app, oracle[i].tool) & reads), lk.at)
    changed = True
    while changed:
        changed = False
        at = {lk.row: lk for lk in planned}
        for lk in planned:
            for parent in lk.parents.values():
                if parent in at and at[parent].at > lk.at:
                    at[parent].at = lk.at
                    changed = True


def place_items(app: App, admitted: Admitted, planned: list[Lookup], earlier: list[Call]) -> list[Any] | str:
    """Run the planned lookups on s0 (after ``earlier``, lookups without refs) and set each one's ``result`` and each
    search's ``item`` (raising its limit when the row is past the first page).

    Returns:
        the results of ``earlier``, or a sentence saying what went wrong.
    """
    planned.sort(key=lambda lk: lk.at)  # stable: parents stay before their children
    calls = [*(c for c in earlier if not c.refs), *(lk.call() for lk in planned)]
    results = run_reads(app, admitted.state, admitted.workspace, calls)
    if isinstance(results, str):
        return results
    n = len(results) - len(planned)
    for lk, result in zip(planned, results[n:], strict=True):
        lk.result = result
        if app.spec_by_name[lk.tool].kind == "get":
            continue
        lk.item = _position(app, lk, result)
        if lk.item is None and _widened(app, lk, result):
            again = run_reads(app, admitted.state, admitted.workspace, [lk.call()])
            lk.result = again[0] if not isinstance(again, str) else None
            lk.item = _position(app, lk, lk.result)
        if lk.item is None:
            return f"{lk.tool} does not list {lk.row[0]} {lk.row[1]}"
    return results[:n]


def run_reads(app: App, state: Rows, workspace: Workspace | None, calls: list[Call]) -> list[Any] | str:
    """The results of ``calls`` (reads without refs) on ``state``: a generated get's row is taken from the state, the
    others run (in ``workspace``, which has the state loaded, when given); a sentence when one fails."""
    rows = [_row_of_get(app, c, state) for c in calls]
    if all(r is not None for r in rows):
        return rows
    todo = [c for c, r in zip(calls, rows, strict=True) if r is None]
    try:
        if workspace is not None:  # reads only: no savepoint (Workspace.run)
            ran = workspace.run(todo, seed=1).results
        else:
            ran = execute(app, state, todo, seed=1).results
    except ChainFailed as exc:
        return f"a lookup fails: {exc}"
    it = iter(ran)
    return [r if r is not None else next(it) for r in rows]


def _row_of_get(app: App, call: Call, state: Rows) -> dict[str, Any] | None:
    """The row a generated get by a unique value returns on s0 (what the tool returns, read from the state), or None
    for any other call (or no such row)."""
    spec = app.spec_by_name[call.tool]
    if spec.kind != "get" or spec.code is not None or not spec.bindings or spec.returns != spec.bindings[0].alias:
        return None
    b = spec.bindings[0]
    value = call.args.get(b.param or "")
    if value is None or set(call.args) != {b.param}:
        return None
    return next((r for r in state.get(b.entity, ()) if r.get(b.key) == value), None)


def _position(app: App, lk: Lookup, result: Any) -> int | None:
    """Where the search's ``result`` lists the lookup's row, or None."""
    idf = app.blueprint.entity(lk.row[0]).id_field
    items = result.get("items") if isinstance(result, dict) else None
    if not isinstance(items, list):
        return None
    return next((k for k, r in enumerate(items) if isinstance(r, dict) and r.get(idf) == lk.row[1]), None)


def _widened(app: App, lk: Lookup, result: Any) -> bool:
    """Ask for every match on one page when the first page did not show the row (False when the search can't)."""
    limit = next((p for p in app.spec_by_name[lk.tool].params if p.name == "limit"), None)
    total = result.get("total") if isinstance(result, dict) else None
    if limit is None or not isinstance(total, int) or "limit" in lk.args or (limit.maximum is not None and total > limit.maximum):
        return False
    lk.args["limit"] = total
    lk._call = None
    return True


def interleave(
    app: App, admitted: Admitted, planned: list[Lookup], known: dict[Row, Ref]
) -> tuple[list[Call], int | None, tuple[int, ...], list[tuple[Call, Any]]]:
    """The oracle with each lookup before the step it goes before, and its ids taken from them.

    Returns:
        (the calls, the answer step, the steps that are lookups, (the call as run, its result) per new lookup).
    """
    task, bp = admitted.task, app.blueprint
    found = dict(known)
    new_step: dict[int, int] = {}
    calls: list[Call] = []
    lookups = [s for s in admitted.lookups]  # old steps, mapped below
    added: list[int] = []
    runs: list[tuple[Call, Any]] = []
    made: dict[tuple[Any, ...], int] = {}  # a lookup's call -> its step: the same search lists the rows again
    for i, call in enumerate(task.oracle):
        for lk in (lk for lk in planned if lk.at == i):
            same = (lk.tool, repr(sorted(lk.args.items())), tuple(sorted(lk.parents.items())))
            if same not in made:
                made[same] = len(calls)
                added.append(len(calls))
                calls.append(Call(tool=lk.tool, args=dict(lk.args), refs={p: found[parent] for p, parent in lk.parents.items()}))
                runs.append((lk.call(), lk.result))
            found[lk.row] = Ref(step=made[same], field=bp.entity(lk.row[0]).id_field, item=lk.item)
        new_step[i] = len(calls)
        calls.append(_taking(app, call, found, new_step))
    answer_step = new_step[task.answer_step] if task.answer_step is not None else None
    return calls, answer_step, tuple(sorted([*(new_step[s] for s in lookups), *added])), runs


def _taking(app: App, call: Call, found: dict[Row, Ref], new_step: dict[int, int]) -> Call:
    """``call`` with its refs moved to the new steps and the ids of the found rows taken from their lookups."""
    refs = {p: r if new_step[r.step] == r.step else Ref(step=new_step[r.step], field=r.field, item=r.item) for p, r in call.refs.items()}
    args = dict(call.args)
    for p in app.spec_by_name[call.tool].params:
        table, key = refers_to(app.blueprint, p), args.get(p.name)
        if table is not None and isinstance(key, str) and (table, key) in found:
            del args[p.name]
            refs[p.name] = found[(table, key)]
    return call.model_copy(update={"args": args, "refs": refs})


def _unsolvable(app: App, admitted: Admitted, detail: str) -> Rejection:
    return Rejection(app=app.name, coordinates=admitted.task.coordinates, reason="not_solvable", detail=detail)
