"""Instructions and user profiles rendered from a verified chain, with varied phrasing.

Rows the agent must find are named by their descriptions (see :mod:`describe`), values
the user supplies are written out, rows created earlier in the same request are "that
order" / "the new order". Ids never appear.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.tasks.describe import Description, fmt_value, human, quoted, render
from envsynth.tasks.model import Call, UserProfile

ID_PATTERN = re.compile(r"\b[a-z]{2,5}_\d{6}\b")
_OPEN = ("Please {x}.", "Could you {x}?", "I need you to {x}.", "Can you {x}?", "I'd like you to {x}.")
_THEN = ("Then {x}.", "After that, {x}.", "Next, {x}.", "Once that's done, {x}.")
_LAST = ("Finally, {x}.", "And lastly, {x}.", "To finish, {x}.")
_ASK = ("{q}", "Also, {q_lower}", "One more thing: {q_lower}")


def _article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def _verb(spec: ToolSpec) -> str:
    """The action words of a tool name without its entity noun: cancel_order -> cancel."""
    words = spec.name.split("_")
    noun = set(spec.entity.split("_"))
    kept = [w for w in words if w not in noun] or words[:1]
    return " ".join(kept)


def _param_field(spec: ToolSpec, bp: Blueprint, name: str) -> tuple[ParamSpec, FieldDef | None]:
    """A parameter and the blueprint field it sets, if any (kept on the spec's index, per blueprint)."""
    return spec.index.paired(_find_param_field, spec, bp, name)


def _find_param_field(spec: ToolSpec, bp: Blueprint, name: str) -> tuple[ParamSpec, FieldDef | None]:
    p = spec.param(name)
    f = None
    if p.field:
        ent, fname = p.field.split(".")
        f = bp.entity(ent).field(fname)
    return p, f


def _param_value(spec: ToolSpec, bp: Blueprint, name: str, value: Any) -> str:
    p, f = _param_field(spec, bp, name)
    if isinstance(value, list):
        return " or ".join(fmt_value(f, v) for v in value)
    if f is not None:
        return quoted(f, value)
    if isinstance(value, str) and not p.enum and p.semantic in ("string", "text"):
        return f'"{value}"'
    return fmt_value(None, value)


class Phraser:
    """Turns each oracle call into a request sentence."""

    def __init__(self, bp: Blueprint, specs: dict[str, ToolSpec], rng: random.Random, me: Description | None = None) -> None:
        self.bp = bp
        self.specs = specs
        self.rng = rng
        self.me = me  # the user's own row, named in the first person

    def row_text(self, spec: ToolSpec, call: Call, param: str, descs: dict[str, Description], calls: list[Call], role: str = "main") -> str:
        if param in call.refs:
            ref = call.refs[param]
            made = self.specs[calls[ref.step].tool]
            ent = next((b.entity for b in spec.bindings if b.param == param), made.entity)
            return self.rng.choice(("that ", "the new ", "the same ")) + human(ent)
        d = descs.get(param)
        if d is not None and d is self.me:
            return "me" if role == "other" else f"my {human(d.entity)} account"
        return render(self.bp, d) if d is not None else "it"

    def clause(self, idx: int, calls: list[Call], descs: dict[str, Description]) -> str:
        call = calls[idx]
        spec = self.specs[call.tool]
        bp = self.bp
        row_params = [b.param for b in spec.bindings if b.param is not None and (b.param in call.args or b.param in call.refs)]
        values = {k: v for k, v in call.args.items() if k not in row_params and k not in ("limit", "offset")}
        main = next((b.param for b in spec.bindings if b.entity == spec.entity and b.param in row_params), None)
        others = [p for p in row_params if p != main]
        if spec.kind == "transfer" and len(row_params) >= 2:
            amount = spec.param(next(p.name for p in spec.params if p.name not in row_params))
            src, dst = row_params[0], row_params[1]
            how_much = _param_value(spec, bp, amount.name, call.args[amount.name])
            if amount.semantic != "money" and amount.field:
                how_much += " " + human(amount.field.split(".")[1])
            source = self.row_text(spec, call, src, descs, calls)
            target = self.row_text(spec, call, dst, descs, calls, role="other")
            text = f"move {how_much} from {source} to {target}"
            values.pop(amount.name, None)
            others = []
        elif spec.kind == "update":
            target = self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)
            changes = [f"its {human(k)} to {_param_value(spec, bp, k, v)}" for k, v in values.items()]
            changes += [f"its {human(p).removesuffix(' id')} to {self.row_text(spec, call, p, descs, calls, role='other')}" for p in others]
            values, others = {}, []
            text = f"update {target}: set " + ", ".join(changes[:-1]) + (" and " if len(changes) > 1 else "") + changes[-1]
        elif spec.kind in ("create", "book"):
            words = spec.name.split("_")
            rest = human("_".join(words[1:])) or human(spec.entity)
            prepositional = rest.split(" ")[0] in ("for", "to", "from", "on", "in", "at", "with", "into")
            text = f"{words[0]} {_article(rest)} {rest}" if spec.kind == "create" and not prepositional else f"{words[0]} {rest}"
        elif spec.kind == "delete":
            text = f"delete {self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)}"
        else:
            target = self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)
            verb = _verb(spec)
            text = f"{verb} {target}" if " " not in verb else f"{human(spec.name)} for {target}"
        if others:
            linked = [self.row_text(spec, call, p, descs, calls, role="other") for p in others]
            text += " for " + linked[0] + "".join(f", using {t}" for t in linked[1:])
        if values:
            parts = [f"{human(k)} {_param_value(spec, bp, k, v)}" for k, v in values.items()]
            joined = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
            lead = "," if others else ""
            text += f"{lead} with {joined}" if spec.kind in ("create", "book") else f", setting {joined}"
        return text

    def _range(self, spec: ToolSpec, field: str, param: str, b: dict[str, Any]) -> str:
        name, dated = _range_words(spec, self.bp, field)
        q = spec.query
        ent = self.bp.entity(q.entity) if q else None
        f = ent.field(field) if ent is not None else None
        lo, hi = b.get("gte"), b.get("lte")
        fmt = lambda v: quoted(f, v) if not dated else fmt_value(f, v)  # noqa: E731
        if lo is not None and hi is not None:
            if lo == hi:
                return f"{name} {'on ' if dated else ''}{fmt(lo)}" if dated else f"whose {name} is {fmt(lo)}"
            return f"{name} between {fmt(lo)} and {fmt(hi)}" if dated else f"whose {name} is between {fmt(lo)} and {fmt(hi)}"
        if lo is not None:
            return f"{name} on or after {fmt(lo)}" if dated else f"with {name} at least {fmt(lo)}"
        return f"{name} on or before {fmt(hi)}" if dated else f"with {name} at most {fmt(hi)}"

    def question(self, call: Call, field: str | None, descs: dict[str, Description], calls: list[Call]) -> str:
        spec = self.specs[call.tool]
        q = spec.query
        noun = human(spec.entity)
        if spec.kind == "get":
            target = self.row_text(spec, call, spec.bindings[0].param or "", descs, calls)
            return self.rng.choice((f"What is the {human(field or '')} of {target}?", f"Tell me the {human(field or '')} of {target}."))
        conds = self._filters(spec, call)
        where = (" " + " and ".join(conds)) if conds else ""
        if q is not None and q.op == "aggregate" and q.agg != "count":
            word = {"sum": "total", "avg": "average", "min": "lowest", "max": "highest"}[q.agg or "sum"]
            return f"What is the {word} {human(q.field or '')} of the {noun} records{where}?"
        return self.rng.choice((f"How many {noun} records are there{where}?", f"Count the {noun} records{where} and tell me the number."))

    def _filters(self, spec: ToolSpec, call: Call) -> list[str]:
        q = spec.query
        out = []
        filters = list(q.filters) if q else []
        bounds: dict[str, dict[str, Any]] = {}
        for flt in filters:
            if flt.op in ("gte", "lte") and call.args.get(flt.param) is not None:
                bounds.setdefault(flt.field, {})[flt.op] = call.args[flt.param]
        done: set[str] = set()
        for flt in filters:
            v = call.args.get(flt.param)
            if v is None:
                continue
            val = _param_value(spec, self.bp, flt.param, v)
            if flt.op in ("gte", "lte"):
                if flt.field in done:
                    continue
                done.add(flt.field)
                out.append(self._range(spec, flt.field, flt.param, bounds[flt.field]))
                continue
            if flt.op == "contains":
                val = f'"{v}"'
            out.append(
                {
                    "eq": f"whose {human(flt.field)} is {val}",
                    "contains": f"whose {human(flt.field)} contains {val}",
                    "gte": f"with {human(flt.field)} at least {val}",
                    "lte": f"with {human(flt.field)} at most {val}",
                    "in": f"whose {human(flt.field)} is {val}",
                }[flt.op]
            )
        return out


def _range_words(spec: ToolSpec, bp: Blueprint, field: str) -> tuple[str, bool]:
    ent = bp.entity(spec.query.entity) if spec.query else None
    f = ent.field(field) if ent is not None and ent.has(field) else None
    dated = f is not None and f.type in ("date", "datetime")
    name = human(field)
    if dated:
        name = name.removesuffix(" at").removesuffix(" on").removesuffix(" date")
    return name, dated


def compose(clauses: list[str], question: str | None, rng: random.Random, greeting: str) -> str:
    sentences = [greeting] if greeting else []
    for i, c in enumerate(clauses):
        pool = _OPEN if i == 0 else _LAST if i == len(clauses) - 1 and i > 1 else _THEN
        sentences.append(rng.choice(pool).format(x=c))
    if question:
        if clauses:
            pick = rng.choice(_ASK)
            sentences.append(pick.format(q=question, q_lower=question[0].lower() + question[1:]))
        else:
            sentences.append(question)
    text = " ".join(s[0].upper() + s[1:] if s else s for s in sentences)
    return " ".join(text.split())  # runs of white space made one space, none at the ends


def profile(
    bp: Blueprint,
    rows: dict[str, list[dict[str, Any]]],
    targets: list[tuple[str, Any]],
    rng: random.Random,
    fake_name: Callable[[], str],
) -> UserProfile:
    """The user: a person the task names (a customer, a member), else a staff member (named by ``fake_name()``)."""
    for table, key in targets:
        ent = bp.entity(table)
        label = ent.field(ent.label) if ent.label else None
        if label is None or label.type != "name":
            continue
        id_field = ent.id_field
        row = next((r for r in rows.get(table, []) if r[id_field] == key), None)
        if row is None:
            continue
        email = next((row[f.name] for f in ent.fields if f.type == "email"), None)
        phone = next((row[f.name] for f in ent.fields if f.type == "phone"), None)
        prefs = {f.name: row[f.name] for f in ent.fields if f.type in ("enum", "bool") and row.get(f.name) is not None}
        return UserProfile(name=row[ent.label], role=human(table), email=email, phone=phone, preferences=prefs)  # type: ignore[index]
    return UserProfile(name=fake_name(), role=f"{bp.title} staff member", preferences={})


def leaks_id(text: str) -> bool:
    """Whether an instruction contains something shaped like an internal id."""
    return "_" in text and ID_PATTERN.search(text) is not None  # every id has an underscore (a cheap test first)
