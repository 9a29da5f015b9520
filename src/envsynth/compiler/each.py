"""Generated code of the language-v2 effects: rows of a list of ids, and ``for_each`` effects.

Each ``for_each`` effect becomes two parts of the tool body: before any write, a loop
that selects the items and computes every value into ``each_<k>`` (so values are read from
the rows as they were before the call, like every other effect); after the tool's own
writes, one statement per item, written by :func:`write_row` (the single place where
generated code writes a row of a for_each).
"""

from __future__ import annotations

from collections.abc import Callable

from envsynth.blueprint import expr as X
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import Binding, EachEffect, ToolSpec

Render = Callable[[str], str]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def load_many(b: Binding) -> list[str]:
    """Lines binding ``b.alias`` to the rows of the ids in list parameter ``b.param``, refusing the first unknown id."""
    sql = f"SELECT * FROM {_q(b.entity)} WHERE {_q(b.key)} = ?"
    given = f"({b.param} or [])" if b.optional else b.param
    if b.item is not None:  # the keys are a field of each item
        given = f"[item[{b.item!r}] for item in {given}]"
    word = b.entity.replace("_", " ")
    key = b.key.replace("_", " ")
    message = f"No {word} with {key} {{!r}}."
    return [
        f"{b.alias} = [ctx.one({sql!r}, (key,), {b.entity!r}) for key in {given}]",
        f"if None in {b.alias}:",
        f"    raise ToolError({message!r}.format({given}[{b.alias}.index(None)]), code={'exists:' + b.alias!r})",
    ]


def compute(bp: Blueprint, spec: ToolSpec, render: Render) -> list[str]:
    """Lines computing the items and values of every for_each effect (before any write); ``render`` is the code generator's."""
    out: list[str] = []
    for k, ef in enumerate(spec.each):
        out.append(f"# for_each[{k}]: {_describe(ef)}")
        out.append(f"each_{k}: list[tuple[Any, ...]] = []")
        out.append(f"for {ef.alias} in {_items(bp, spec, ef, render)}:")
        if ef.where:
            out.append(f"    if not ({render(ef.where)}):")
            out.append("        continue")
        values = [render(src) for src in ef.values.values() if src != "new_id()"]
        if ef.op == "update":
            ent = bp.entity(ef.entity)
            values.append(f"{ef.alias}[{ent.id_field!r}]")
        out.append(f"    each_{k}.append(({''.join(v + ', ' for v in values)}))")
    return out


def _items(bp: Blueprint, spec: ToolSpec, ef: EachEffect, render: Render) -> str:
    if ef.param is not None:
        rows = next((b.alias for b in spec.bindings if b.many and b.item is None and b.param == ef.param), None)
        return rows if rows is not None else f"({ef.param} or [])"
    ent = bp.entity(ef.source or "")
    where = " AND ".join(f"{_q(f)} = ?" for f in ef.match)
    clause = f" WHERE {where}" if where else ""
    args = "".join(render(src) + ", " for src in ef.match.values())
    sql = f"SELECT * FROM {_q(ent.name)}{clause} ORDER BY {_q(ent.id_field)}"
    return f"ctx.all({sql!r}, ({args}), {ent.name!r})"


def _describe(ef: EachEffect) -> str:
    what = f"each item of {ef.param}" if ef.param else f"each {ef.source}" + (f" with {', '.join(ef.match)} matching" if ef.match else "")
    if ef.where:
        what += f" where {ef.where}"
    done = f"insert a {ef.entity}" if ef.op == "insert" else f"set {', '.join(ef.values)}"
    return f"{what}: {done}"


def write(bp: Blueprint, spec: ToolSpec) -> list[str]:
    """Lines writing the rows of every for_each effect (after the tool's own writes)."""
    out: list[str] = []
    for k, ef in enumerate(spec.each):
        out.append(f"for row_values in each_{k}:")
        out.append("    " + write_row(bp, ef, "row_values"))
    return out


def write_row(bp: Blueprint, ef: EachEffect, values: str) -> str:
    """The statement writing one row of a for_each effect from the tuple ``values`` (computed before any write)."""
    ent = bp.entity(ef.entity)
    if ef.op == "update":
        sets = ", ".join(f"{_q(f)} = ?" for f in ef.values)
        return f"db.execute('UPDATE {_q(ent.name)} SET {sets} WHERE {_q(ent.id_field)} = ?', {values})"
    new_id = f"ctx.new_id({ent.name!r}, {ent.id_field!r}, {ent.prefix!r})"
    cols = [ent.id_field, *(f for f, src in ef.values.items() if src != "new_id()")]
    ordered = ", ".join(_q(f) for f in cols)
    marks = ", ".join("?" for _ in cols)
    return f"db.execute('INSERT INTO {_q(ent.name)} ({ordered}) VALUES ({marks})', ({new_id}, *{values}))"


def new_row(spec: ToolSpec, names: list[tuple[str, str]]) -> list[str]:
    """``new = {...}``: the row a create/book inserts, as the for_each expressions see it (when one uses ``new``)."""
    sources = [src for ef in spec.each for src in [*ef.values.values(), *ef.match.values(), ef.where or "None"] if src != "new_id()"]
    if not any("new" in X.parse(src).names() for src in sources):
        return []
    return ["new = {" + ", ".join(f"{f!r}: {var}" for f, var in names) + "}"]
