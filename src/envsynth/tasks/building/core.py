"""Stage 3, core: an instance -> the minimal rows the chain needs, and the rows the request must name.

Which tables the chain's pre-conditions count is memoised per app and chain of tool specs
(and per condition text).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from envsynth.blueprint.expr import parse
from envsynth.runtime.app import App
from envsynth.runtime.state import Rows, id_fields
from envsynth.tasks.building.world import Instance, per_chain, refs_of
from envsynth.tasks.model import Call
from envsynth.tasks.planning.chain import Step, row_filter
from envsynth.tasks.wording.words import refers_to


@dataclass
class Core:
    """The core of an instance and what the request is about.

    Attributes:
        rows: the core rows; the first state run widens them to all of s0 when the chain does
            not run on the core alone (see :mod:`envsynth.tasks.building.states`).
        guarded: tables whose rows the chain's pre-conditions count.
        targets: pre-existing rows the request must name (bound through literal id arguments).
        acted_on: every pre-existing row a step binds.
        derived: state 0 runs in the instance's workspace, pruned to the core (False: SQLite
            refused a delete, or the workspace is closed; task states are loaded anew).
        verified: whether the chain was seen to run on these rows.
    """

    rows: Rows
    guarded: frozenset[str]
    targets: list[tuple[str, Any]]
    acted_on: frozenset[tuple[str, Any]]
    derived: bool
    verified: bool = False


def core_of(inst: Instance) -> Core:
    """Prune s0 to the core and make the instance's workspace hold it (closed when SQLite refuses)."""
    app, steps = inst.plan.app, inst.plan.steps
    guarded = per_chain(app, steps, "_guarded_memo", lambda: _guarded(steps))
    rows = _prune(app, inst.s0, steps, inst.bound, guarded)
    derived = inst.ws0.prune(inst.s0, rows)
    if not derived:
        inst.ws0.close()  # its connection is the one fresh workspaces use
    targets = _targets(app, steps, inst.calls, inst.bound, rows)
    acted_on = frozenset(tk for b in inst.bound for tk in b.values())
    return Core(rows, guarded, targets, acted_on, derived)


def _guarded(steps: list[Step]) -> frozenset[str]:
    """Tables whose rows the chain's pre-conditions look for with ``exists()`` or ``count()``."""
    out: set[str] = set()
    for st in steps:
        for check in st.spec.pre:
            out |= _counted_tables(check.check)
    return frozenset(out)


@lru_cache(maxsize=4096)
def _counted_tables(condition: str) -> frozenset[str]:
    """Tables a condition looks for rows in (a bounded memo per condition text: a pure function of it)."""
    return frozenset(
        node.args[0].id
        for node in ast.walk(parse(condition).tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("exists", "count", "any", "all")
        and node.args
        and isinstance(node.args[0], ast.Name)
    )


def _prune(app: App, s0: Rows, steps: list[Step], bound: list[dict[str, Any]], guarded: frozenset[str] = frozenset()) -> Rows:
    """The minimal core: rows the chain binds, rows its reads range over, the rows of ``guarded``
    tables (those the pre-conditions count) that refer to these, and the parents of all of them.

    A pre-condition like ``exists(order_item, order_id=order)`` counts rows no step binds;
    without them the chain would not run on the core.

    Not verified here: the first run on the task state (core plus distractors) shows
    whether the chain still runs, and the states stage falls back to all of s0 when the
    core alone does not.
    """
    bp = app.blueprint
    ids = id_fields(bp)
    index = {(t, r[idf]): r for t, idf in ids.items() for r in s0.get(t, ())}
    keep = _bound_and_read(app, s0, steps, bound) & index.keys()
    refs = refs_of(bp)
    for t, idf in ids.items():  # in blueprint order: a guarded table's rows may refer to another's
        if t in guarded:
            keep |= {(t, r[idf]) for r in s0.get(t, ()) if any((ref, r.get(name)) in keep for name, ref in refs[t])}
    todo = list(keep)
    while todo:
        t, k = todo.pop()
        row = index[(t, k)]
        for name, ref in refs[t]:
            v = row.get(name)
            if v is not None and (ref, v) not in keep and (ref, v) in index:
                keep.add((ref, v))
                todo.append((ref, v))
    return {t: [r for r in s0.get(t, ()) if (t, r[idf]) in keep] for t, idf in ids.items()}


def _bound_and_read(app: App, s0: Rows, steps: list[Step], bound: list[dict[str, Any]]) -> set[tuple[str, Any]]:
    """(table, key) of the rows the chain binds and of every row a search or aggregate of it ranges over."""
    keep: set[tuple[str, Any]] = {tk for b in bound for tk in b.values()}
    for st in steps:
        if st.spec.query is not None and st.spec.query.op in ("search", "aggregate"):
            ent = app.blueprint.entity(st.spec.query.entity)
            keep |= {(ent.name, r[ent.id_field]) for r in s0.get(ent.name, [])}
    return keep


def _targets(app: App, steps: list[Step], calls: list[Call], bound: list[dict[str, Any]], core: Rows) -> list[tuple[str, Any]]:
    """Pre-existing rows the instruction must name (bound through literal id arguments)."""
    named: list[tuple[str, Any]] = []
    for st, call, b in zip(steps, calls, bound):
        for binding in st.spec.bindings:
            if binding.many and binding.item is None and isinstance(call.args.get(binding.param or ""), list):
                named += [tk for k in call.args[binding.param or ""] if (tk := (binding.entity, k)) not in named]  # each id of a list
            elif binding.param and binding.param in call.args and binding.param not in call.refs and binding.alias in b:
                tk = b[binding.alias]
                if tk not in named:
                    named.append(tk)
    named = _with_rows_asked_of(app, steps, calls, named)
    ids = id_fields(app.blueprint)
    present = {(t, r[ids[t]]) for t in {t for t, _ in named} for r in core.get(t, ())}
    return [tk for tk in named if tk in present]


def _with_rows_asked_of(app: App, steps: list[Step], calls: list[Call], named: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``named`` and then (table, key) of the rows the chain's information reads are about (see :func:`row_asked_of`)."""
    asked = [a[1:] for st, call in zip(steps, calls) if (a := row_asked_of(app, st, call)) is not None]
    return named + [tk for tk in asked if tk not in named]


def row_asked_of(app: App, step: Step, call: Call) -> tuple[str, str, Any] | None:
    """(parameter, table, key) of the row an information task's search or aggregate is about (its
    :func:`~envsynth.tasks.planning.chain.row_filter`: the request names it), or None."""
    param = row_filter(app, step.spec) if not step.pins and not step.refs else None
    value = call.args.get(param) if param is not None else None
    if param is None or not isinstance(value, str):
        return None
    table = refers_to(app.blueprint, step.spec.param(param))
    return (param, table, value) if table is not None else None
