"""The arguments of a chain's next step, as far as the steps before it decide them.

Rows earlier steps created are only known by the result that returned them (a
:class:`~envsynth.tasks.model.Ref`); a search that follows up on an earlier row leaves its
other filters unset; a step that acts for a user acts for the user of the earlier steps;
a list parameter's first row is the one a later step may act on.
"""

from __future__ import annotations

from typing import Any

from envsynth.blueprint.policy import acting_user_of, agent_rules
from envsynth.blueprint.spec import Check
from envsynth.runtime.app import App
from envsynth.runtime.state import id_fields
from envsynth.tasks.model import Call, Ref
from envsynth.tasks.planning.chain import Step, row_filter
from envsynth.testing.fixtures import Fixture


def created_rows(app: App, steps: list[Step], results: list[Any]) -> dict[tuple[str, Any], Ref]:
    """(table, key) -> Ref for rows that earlier steps created and returned."""
    out: dict[tuple[str, Any], Ref] = {}
    ids = id_fields(app.blueprint)
    for j, st in enumerate(steps):
        if st.spec.returns != "new" or not isinstance(results[j], dict):
            continue
        for ef in st.spec.effects:
            if ef.op == "insert":
                idf = ids[ef.entity]
                if idf in results[j]:
                    out[(ef.entity, results[j][idf])] = Ref(step=j, field=idf)
    return out


def id_filters(app: App, step: Step) -> list[str]:
    """Filter parameters of a search or aggregate step left unset.

    Those on id or ref fields (people filter by names and values, not by ids), but the one
    :func:`~envsynth.tasks.planning.chain.row_filter` keeps (the row a question about rows of one row
    names: "how many songs are on the playlist ...?", its only filter); for a read that follows up on a row of
    an earlier step ("how many reviews does that product have now?"), every filter but the
    one naming that row.
    """
    query = step.spec.query
    if query is None or query.op not in ("search", "aggregate"):
        return []
    follow_up = set(step.pins) | set(step.refs)
    kept = row_filter(app, step.spec) if not follow_up else None
    out = []
    for flt in query.filters:
        f = app.blueprint.entity(query.entity).field(flt.field)
        if flt.param not in follow_up and flt.param != kept and (follow_up or kept or f.type in ("id", "ref")):
            out.append(flt.param)
    return out


def same_actor(app: App, step: Step, calls: list[Call]) -> dict[str, Any]:
    """The acting user of the earlier steps, for a step that acts for a user too (one person asks for the whole chain)."""
    name = acting_user_of(app.blueprint, step.spec)
    if name is None:
        return {}
    earlier = next(
        (c.args[name] for c in calls if acting_user_of(app.blueprint, app.spec_by_name[c.tool]) == name and c.args.get(name)), None
    )
    return {name: earlier} if earlier is not None else {}


def given_before(app: App, step: Step, fixed: dict[str, Any], refs: dict[str, Ref], calls: list[Call]) -> list[str]:
    """The fields an update step must leave alone: those the request already gave a value for on the same row.

    "Make a playlist called A, then rename it to B" takes back what the request asked for, so
    an update of a row an earlier call made or updated does not change what that call set.
    Empty for other steps, and for an update whose row the solver is still to pick.
    """
    spec = step.spec
    if spec.kind != "update" or not spec.bindings or spec.bindings[0].param is None:
        return []
    ent = app.blueprint.entity(spec.entity)
    row = _row_of(app, spec, refs, fixed, calls)
    if row is None:
        return []
    given: set[str] = set()
    for j, call in enumerate(calls):
        earlier = app.spec_by_name[call.tool]
        if earlier.entity != spec.entity or earlier.kind not in ("create", "update"):
            continue
        same = row == ("made", j) if earlier.kind == "create" else _row_of(app, earlier, call.refs, call.args, calls[:j]) == row
        if same:
            given |= {k for k in call.args if ent.has(k) and k != ent.id_field}
    return sorted(k for k in given if k not in fixed and any(p.name == k for p in spec.params))


def _row_of(app: App, spec: Any, refs: dict[str, Ref], args: dict[str, Any], calls: list[Call]) -> Any:
    """The row an update names: ("made", j) for the row call j created, a ref's place, or the literal id (None: not yet known)."""
    param = spec.bindings[0].param
    ref = refs.get(param)
    if ref is not None:
        source = app.spec_by_name[calls[ref.step].tool] if ref.step < len(calls) else None
        if source is not None and source.kind == "create" and source.entity == spec.entity:
            return ("made", ref.step)
        return ("ref", ref.step, ref.field)
    return args.get(param)


def _first(rows: Any) -> dict[str, Any] | None:
    """The first row a list parameter loads (a later step may act on it: receive one of the items returned)."""
    return rows[0] if isinstance(rows, list) and rows and isinstance(rows[0], dict) else None


def oracle_call(step: Step, fx: Fixture, refs: dict[str, Ref], created: dict[tuple[str, Any], Ref]) -> Call:
    """The step's oracle call: the solver's arguments, those fed by earlier results (``refs``) left to them."""
    literal = {k: v for k, v in fx.call_args().items() if k not in refs}
    for p in step.spec.params:  # a row the chain made, picked by the solver: its id is only known at run time
        if p.ref and p.type != "array" and p.name in literal and (p.ref, literal[p.name]) in created:
            refs[p.name] = created[(p.ref, literal.pop(p.name))]
    return Call(tool=step.spec.name, args=literal, refs=refs)


def bound_rows(app: App, step: Step, fx: Fixture) -> dict[str, Any]:
    """The step's bound aliases -> (table, key) of the rows the solver loaded for them (a list's first row)."""
    ids = id_fields(app.blueprint)
    return {
        b.alias: (b.entity, row[ids[b.entity]])
        for b in step.spec.bindings
        if (row := _first(fx.aliases.get(b.alias)) if b.many else fx.aliases.get(b.alias)) is not None
    }


def allowed_pre(app: App, tool: str) -> list[Check]:
    """The tool's pre-conditions, then for each policy rule the agent obeys on it (``forbid``) that the rule allows
    the call: a chain step is solved so that the agent may make it (kept on the app's index, per tool)."""
    return app.index.of(_allowed_pre, app, tool)


def _allowed_pre(app: App, tool: str) -> list[Check]:
    spec = app.spec_by_name[tool]
    rules = [r for r in agent_rules(app.blueprint) if tool in r.actions]
    return [
        *spec.pre,
        *(Check(id=f"policy:{r.rule}", check=f"not ({r.forbid})", message=f"the policy forbids it ({r.rule})") for r in rules),
    ]
