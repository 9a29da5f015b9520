"""ToolSpec -> readable Python source (``tools.py``) over SQLite, parameterized SQL only."""

from __future__ import annotations

import ast
import re
import textwrap

from envsynth.blueprint import expr as X
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import Binding, Check, Effect, ParamSpec, ToolSpec
from envsynth.compiler import each as EACH

_PY_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "array": "list[str]"}
_OBJECTS = "list[dict[str, Any]]"  # a list parameter of small objects


def q(name: str) -> str:
    """A quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def code_hook(node: ast.AST) -> str | None:
    """Render condition-language calls as calls on the episode context."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name in ("now", "today"):
            return f"ctx.{name}()"
        if name in ("exists", "count"):
            kws = ", ".join(f"{kw.arg!r}: {X.render(kw.value, code_hook)}" for kw in node.keywords)
            return f"ctx.{name}({node.args[0].id!r}, {{{kws}}})"  # type: ignore[attr-defined]
        if name == "old":
            raise X.ExprError("old() is only allowed in post-conditions")
        return _v2_call(node, name)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub) and X.temporal(node):
        left, right = X.render(node.left, code_hook), X.render(node.right, code_hook)
        return f"ctx.date_{'add' if isinstance(node.op, ast.Add) else 'sub'}({left}, {right})"
    return None


def _v2_call(node: ast.Call, name: str) -> str | None:
    """Durations, ``any``/``all`` and ``lookup`` as calls on the episode context (names a parameter cannot shadow)."""
    if name in X.DURATION_FUNCTIONS:
        return f"ctx.{name}({X.render(node.args[0], code_hook)})"
    if name in ("any", "all"):
        table, sel, test = X.row_call(node, lambda n: X.render(n, code_hook))
        return f"ctx.every({table!r}, {sel}, {test})" if name == "all" else f"ctx.exists({table!r}, {sel})"
    if name == "lookup":
        keys = "".join(", " + X.render(a, code_hook) for a in node.args[1:])
        return f"ctx.lookup(TABLES[{node.args[0].value!r}]{keys})"  # type: ignore[attr-defined]
    return None


def py(source: str) -> str:
    """Condition-language source as Python for generated code."""
    out = X.render(X.parse(source), code_hook)
    if out.startswith("(") and out.endswith(")") and _balanced(out[1:-1]):
        out = out[1:-1]
    return out


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


def message_code(template: str) -> str:
    """A failure message template (``{alias.field}`` placeholders) as a Python expression."""
    exprs: list[str] = []

    def sub(m: re.Match[str]) -> str:
        exprs.append(py(m.group(1)))
        return "{" + str(len(exprs) - 1) + "}"

    literal = _PLACEHOLDER.sub(sub, template.replace("{{", "\x00").replace("}}", "\x01"))
    literal = literal.replace("\x00", "{{").replace("\x01", "}}")
    if not exprs:
        return repr(literal.replace("{{", "{").replace("}}", "}"))
    return f"{literal!r}.format({', '.join(exprs)})"


class ToolWriter:
    """Writes one function per ToolSpec."""

    def __init__(self, bp: Blueprint) -> None:
        self.bp = bp

    def signature(self, spec: ToolSpec) -> str:
        req = [p for p in spec.params if p.required]
        opt = [p for p in spec.params if not p.required]
        parts = ["ctx: Context"]
        parts += [f"{p.name}: {_OBJECTS if p.item_fields else _PY_TYPES[p.type]}" for p in req]
        parts += [f"{p.name}: {_OBJECTS if p.item_fields else _PY_TYPES[p.type]} | None = None" for p in opt]
        ret = "dict[str, Any]" if spec.returns != "custom" else "Any"
        return f"def {spec.name}({', '.join(parts)}) -> {ret}:"

    def docstring(self, spec: ToolSpec) -> str:
        lines = [spec.description.strip(), ""]
        if spec.params:
            lines.append("Args:")
            for p in spec.params:
                lines.append(f"    {p.name}: {_param_doc(p)}")
            lines.append("")
        lines += ["Returns:", f"    {spec.returns_doc or 'A JSON object.'}", ""]
        rejects = [c for c in spec.pre]
        if rejects:
            lines.append("Raises:")
            for c in rejects:
                lines.append(f"    ToolError: {c.message.replace('{', '').replace('}', '')}")
        body = "\n".join(lines).rstrip()
        return '"""' + body.replace('"""', "'''").replace("\\", "\\\\") + '\n"""'

    def function(self, spec: ToolSpec) -> str:
        body: list[str] = []
        body += self._bindings(spec)
        if spec.query is not None and spec.query.op in ("search", "aggregate"):
            body += self._query(spec)
        elif spec.code is not None and spec.untrusted:
            body += self._sandboxed(spec)
        elif spec.code is not None:
            body += textwrap.dedent(spec.code).rstrip().splitlines()
        else:
            body += self._effects(spec)
        doc = textwrap.indent(self.docstring(spec), "    ")
        head = [f"{untrusted_constant(spec.name)} = {spec.code!r}", "", ""] if spec.untrusted else []
        return "\n".join([*head, self.signature(spec), doc, "    db = ctx.db", *("    " + line if line else "" for line in body)]) + "\n"

    def _sandboxed(self, spec: ToolSpec) -> list[str]:
        """Untrusted code: the body stays a string constant, run in a sandboxed worker by ``run_sandboxed``."""
        names = [p.name for p in spec.params] + [b.alias for b in spec.bindings]
        values = "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"
        scope = f"writes={spec.writes!r}, creates={spec.creates!r}, deletes={spec.deletes!r}"
        return [f"return run_sandboxed(ctx, {spec.name!r}, {untrusted_constant(spec.name)}, {values}, {scope})"]

    # -- parts ---------------------------------------------------------------
    def _fetch(self, b: Binding, key_expr: str) -> str:
        return f"ctx.one('SELECT * FROM {q(b.entity)} WHERE {q(b.key)} = ?', ({key_expr},), {b.entity!r})"

    def _bindings(self, spec: ToolSpec) -> list[str]:
        out: list[str] = []
        by_param = [b for b in spec.bindings if b.param]
        via = [b for b in spec.bindings if b.via]
        for b in by_param:
            if b.many:
                out += EACH.load_many(b)
            elif b.optional:
                out.append(f"{b.alias} = {self._fetch(b, b.param or '')} if {b.param} is not None else None")
            else:
                out.append(f"{b.alias} = {self._fetch(b, b.param or '')}")
        many = {f"exists:{b.alias}" for b in spec.bindings if b.many}  # checked as they are loaded
        exists = [c for c in spec.pre if c.id.startswith("exists:") and c.id not in many]
        others = [c for c in spec.pre if not c.id.startswith("exists:")]
        out += self._checks(exists)
        for b in via:
            src_alias, field = (b.via or "").split(".", 1)
            key = f"{src_alias}[{field!r}]"
            out.append(f"{b.alias} = {self._fetch(b, key)} if {key} is not None else None")
        out += self._checks(others)
        return out

    def _checks(self, checks: list[Check]) -> list[str]:
        out = []
        for c in checks:
            out.append(f"if not ({py(c.check)}):")
            out.append(f"    raise ToolError({message_code(c.message)}, code={c.id!r})")
        return out

    def _effects(self, spec: ToolSpec) -> list[str]:
        out: list[str] = []
        if not spec.effects:  # get
            return [f"return {spec.returns}"]
        # every value is computed before the first write
        computed = [self._values(spec, k, ef) for k, ef in enumerate(spec.effects)]
        for ef, items in zip(spec.effects, computed):
            for field, var, val in items:
                if field in ef.when_given:
                    continue
                out.append(f"{var} = {val}")
        if spec.each:
            inserted = next((items for ef, items in zip(spec.effects, computed) if ef.op == "insert" and ef.alias == "new"), [])
            out += EACH.new_row(spec, [(field, var) for field, var, _ in inserted])
            out += EACH.compute(self.bp, spec, py)
        returned = None
        for ef, items in zip(spec.effects, computed):
            out += self._write(ef, items)
            if ef.op == "insert":
                idf = self.bp.entity(ef.entity).id_field
                returned = (ef, next(var for f, var, _ in items if f == idf))
        out += EACH.write(self.bp, spec)
        out.append(self._return(spec, returned))
        return out

    def _values(self, spec: ToolSpec, k: int, ef: Effect) -> list[tuple[str, str, str]]:
        """``(field, variable, expression)`` of each value effect ``k`` writes."""
        items = []
        for field, src in ef.values.items():
            var = (
                f"{ef.alias}_{field}"
                if ef.op == "update"
                else f"new_{field}"
                if len(spec.effects) == 1 or ef.alias == "new"
                else f"{ef.alias}{k}_{field}"
            )
            if src == "new_id()":
                ent = self.bp.entity(ef.entity)
                val = f"ctx.new_id({ef.entity!r}, {field!r}, {ent.prefix!r})"
            else:
                val = py(src)
            items.append((field, var, val))
        return items

    def _write(self, ef: Effect, items: list[tuple[str, str, str]]) -> list[str]:
        """The SQL statements of one effect (an update of only the given optional fields builds its SET clause)."""
        idf = self.bp.entity(ef.entity).id_field
        if ef.op == "update" and ef.when_given:
            out = ["changes: dict[str, Any] = {}"]
            for field, var, val in items:
                if field in ef.when_given:
                    out.append(f"if {ef.when_given[field]} is not None:")
                    out.append(f"    changes[{field!r}] = {val}")
                else:
                    out.append(f"changes[{field!r}] = {var}")
            out.append("assignments = ', '.join(f'\"{column}\" = ?' for column in changes)")
            out.append(
                f"db.execute(f'UPDATE {q(ef.entity)} SET {{assignments}} WHERE {q(idf)} = ?', (*changes.values(), {ef.alias}[{idf!r}]))"
            )
            return out
        if ef.op == "update":
            sets = ", ".join(f"{q(f)} = ?" for f, _, _ in items)
            args = ", ".join(var for _, var, _ in items)
            return [f"db.execute('UPDATE {q(ef.entity)} SET {sets} WHERE {q(idf)} = ?', ({args}, {ef.alias}[{idf!r}]))"]
        if ef.op == "insert":
            cols = ", ".join(q(f) for f, _, _ in items)
            marks = ", ".join("?" for _ in items)
            args = ", ".join(var for _, var, _ in items)
            return [f"db.execute('INSERT INTO {q(ef.entity)} ({cols}) VALUES ({marks})', ({args},))"]
        out = [f"db.execute('DELETE FROM {q(child)} WHERE {q(ref)} = ?', ({ef.alias}[{idf!r}],))" for child, ref in ef.cascade]
        out.append(f"db.execute('DELETE FROM {q(ef.entity)} WHERE {q(idf)} = ?', ({ef.alias}[{idf!r}],))")
        return out

    def _return(self, spec: ToolSpec, returned: tuple[Effect, str] | None) -> str:
        """The return statement: the inserted row, the deleted id, or the row ``returns`` names, as stored after the writes."""
        if spec.returns == "new" and returned is not None:
            ef, id_var = returned
            ent = self.bp.entity(ef.entity)
            return f"return ctx.one('SELECT * FROM {q(ef.entity)} WHERE {q(ent.id_field)} = ?', ({id_var},), {ef.entity!r})  # type: ignore[return-value]"
        if spec.returns == "none":
            b = spec.bindings[0]
            return f"return {{'deleted': {b.alias}[{self.bp.entity(b.entity).id_field!r}]}}"
        b = spec.binding(spec.returns)
        ent = self.bp.entity(b.entity)
        return f"return ctx.one('SELECT * FROM {q(b.entity)} WHERE {q(ent.id_field)} = ?', ({spec.returns}[{ent.id_field!r}],), {b.entity!r})  # type: ignore[return-value]"

    def _query(self, spec: ToolSpec) -> list[str]:
        qy = spec.query
        assert qy is not None
        out = ["where: list[str] = []", "args: list[Any] = []"]
        for flt in qy.filters:
            col = q(flt.field)
            out.append(f"if {flt.param} is not None:")
            if flt.op == "eq":
                out += [f"    where.append('{col} = ?')", f"    args.append({flt.param})"]
            elif flt.op == "contains":
                like = col + " LIKE ? ESCAPE '\\'"
                out += [f"    where.append({like!r})", f"    args.append(like_pattern({flt.param}))"]
            elif flt.op == "gte":
                out += [f"    where.append('{col} >= ?')", f"    args.append({flt.param})"]
            elif flt.op == "lte":
                out += [f"    where.append('{col} <= ?')", f"    args.append({flt.param})"]
            else:
                out += [
                    f"    where.append('{col} IN (' + ', '.join('?' for _ in {flt.param}) + ')' if {flt.param} else '0')",
                    f"    args.extend({flt.param})",
                ]
        out.append("clause = (' WHERE ' + ' AND '.join(where)) if where else ''")
        table = q(qy.entity)
        if qy.op == "search":
            ent = self.bp.entity(qy.entity)
            direction = " DESC" if qy.descending else ""
            order = f"{q(qy.sort or ent.id_field)}{direction}, {q(ent.id_field)}"
            limit = spec.param("limit").default
            out += [
                f"limit = {limit} if limit is None else limit",
                "offset = 0 if offset is None else offset",
                f"total = db.execute('SELECT COUNT(*) FROM {table}' + clause, args).fetchone()[0]",
                f"items = ctx.all('SELECT * FROM {table}' + clause + ' ORDER BY {order} LIMIT ? OFFSET ?', [*args, limit, offset], {qy.entity!r})",
                "return {'total': total, 'items': items}",
            ]
            return out
        agg = {
            "count": "COUNT(*)",
            "sum": f"TOTAL({q(qy.field or '')})",
            "avg": f"AVG({q(qy.field or '')})",
            "min": f"MIN({q(qy.field or '')})",
            "max": f"MAX({q(qy.field or '')})",
        }[qy.agg or "count"]
        rounding = qy.agg in ("sum", "avg")
        value = "round(value, 2) if value is not None else None" if rounding else "value"
        if qy.group_by:
            g = q(qy.group_by)
            out += [
                f"rows = db.execute('SELECT {g}, {agg} FROM {table}' + clause + ' GROUP BY {g} ORDER BY {g}', args).fetchall()",
                f"return {{'groups': [{{{qy.group_by!r}: key, 'value': {value.replace('value', 'v')}}} for key, v in rows]}}",
            ]
        else:
            out += [
                f"value = db.execute('SELECT {agg} FROM {table}' + clause, args).fetchone()[0]",
                f"return {{'value': {value}}}",
            ]
        return out


def untrusted_constant(tool: str) -> str:
    """The module-level name holding an untrusted tool's code (text, never compiled here)."""
    return f"UNTRUSTED_CODE_{tool}"


def _param_doc(p: ParamSpec) -> str:
    extra = []
    if p.enum:
        extra.append("one of " + ", ".join(p.enum))
    if not p.required:
        extra.append("optional")
    text = p.description.rstrip(".")
    return text + (f" ({'; '.join(extra)})." if extra else ".")


def write_tools_module(bp: Blueprint, specs: list[ToolSpec], version: str) -> str:
    """The whole ``tools.py`` of an app."""
    w = ToolWriter(bp)
    bools = {e.name: tuple(f.name for f in e.fields if f.type == "bool") for e in bp.entities}
    bools = {k: v for k, v in bools.items() if v}
    head = [
        f'"""Tools of {bp.title} ({bp.name}).',
        "",
        f"Generated by envsynth {version} from the blueprint {bp.name!r}: one function per tool.",
        "Each takes the episode context first, then the tool's arguments; a ToolError is an",
        'Anticipated Rejection (its message is what the agent sees)."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any",
        "",
        "from envsynth.runtime.toolkit import Context, ToolError, like_pattern",
        *(["from envsynth.sandbox.untrusted import run_sandboxed"] if any(s.untrusted for s in specs) else []),
        "",
        f"BOOL_COLUMNS: dict[str, tuple[str, ...]] = {bools!r}",
        f"TOOLS = {[s.name for s in specs]!r}",
        *([f"TABLES: dict[str, Any] = {tables!r}"] if (tables := getattr(bp, "tables", None)) else []),
        "",
    ]
    funcs = ["\n" + w.function(s) for s in specs]
    src = "\n".join(head) + "\n".join(funcs)
    compile(src, "tools.py", "exec")
    return src


__all__ = ["Effect", "ToolWriter", "message_code", "py", "q", "untrusted_constant", "write_tools_module"]
