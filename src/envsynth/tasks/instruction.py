"""Instructions and user profiles rendered from a verified chain, with varied phrasing.

Rows the agent must find are named by their descriptions (see :mod:`describe`), values
the user supplies are written out, rows created earlier in the same request are "that
order" / "the new order". Ids never appear.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from envsynth.blueprint.language import person_name, slots
from envsynth.blueprint.models import Blueprint, Entity, FieldDef, UserRole
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.tasks.answerpath import group_of
from envsynth.tasks.describe import Description, field_words, fmt_value, human, noun, quoted, render
from envsynth.tasks.model import Call, UserProfile

ID_PATTERN = re.compile(r"\b[a-z]{2,5}_\d{6}\b")
_FIRST_PERSON = re.compile(r"\b(my|me|mine|myself|I|I'm|I'd|I've|I'll)\b")
_SLOT = re.compile(r"\{[a-z_0-9]+\}")
_OPEN = ("Please {x}.", "Could you {x}?", "I need you to {x}.", "Can you {x}?", "I'd like you to {x}.")
_THEN = ("Then {x}.", "After that, {x}.", "Next, {x}.", "Once that's done, {x}.")
_LAST = ("Finally, {x}.", "And lastly, {x}.", "To finish, {x}.")
_ASK = ("{q}", "Also, {q_lower}", "One more thing: {q_lower}")


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def plural(word: str) -> str:
    """A noun's plural, for the regular cases a domain's nouns take (order -> orders, entry -> entries)."""
    last = word.rsplit(" ", 1)[-1]
    if last.endswith("y") and last[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if last.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def _field_of(bp: Blueprint, entity: str, name: str) -> str:
    """The words for field ``name`` of ``entity`` (its label, else the name in words)."""
    ent = bp.entity(entity)
    return field_words(ent.field(name)) if ent.has(name) else human(name)


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

    def __init__(
        self,
        bp: Blueprint,
        specs: dict[str, ToolSpec],
        rng: random.Random,
        me: Description | None = None,
        me_key: Any = None,
        me_step: int | None = None,
        mine: frozenset[Any] = frozenset(),
    ) -> None:
        self.bp = bp
        self.specs = specs
        self.rng = rng
        self.me = me  # the user's own row, named in the first person
        self.me_key = me_key  # its id: a search or count over "my" rows leaves it implied
        self.me_step = me_step  # the step that signs the user up, when the request does
        self.mine = mine  # ids of the rows that are the user's own (their orders, their accounts): "my order ..."
        self.mentioned: set[Any] = set()  # ids of the rows named in full so far
        self.actions = bp.index.actions

    def row_text(self, spec: ToolSpec, call: Call, param: str, descs: dict[str, Description], calls: list[Call], role: str = "main") -> str:
        if self._is_me(call, param, descs):
            return "me" if role == "other" else "my account"
        if param in call.refs:
            ref = call.refs[param]
            made = self.specs[calls[ref.step].tool]
            ent = next((b.entity for b in spec.bindings if b.param == param), made.entity)
            return self.rng.choice(("that ", "the new ", "the same ")) + noun(self.bp.entity(ent))
        d = descs.get(param)
        if d is None:
            return "it"
        if isinstance(d, list):  # a list of ids: "my item ... and my item ..."
            keys = call.args.get(param) or []
            texts = [render(self.bp, one, possessive="my" if k in self.mine else "the") for one, k in zip(d, keys)]
            return ", ".join(texts[:-1]) + (" and " if len(texts) > 1 else "") + texts[-1]
        key = call.args.get(param)
        if isinstance(key, str) and key in self.mentioned:  # named in full once; after that "that order"
            return self.rng.choice(("that ", "the same ")) + noun(self.bp.entity(d.entity))
        if isinstance(key, str):
            self.mentioned.add(key)
        return render(self.bp, d, possessive="my" if self._owned(call, param) else "the")

    def _is_me(self, call: Call, param: str, descs: dict[str, Description]) -> bool:
        """Whether the row ``param`` names is the requester (their existing row, or the one the request signs them up as)."""
        if param in call.refs:
            return self.me_step is not None and call.refs[param].step == self.me_step
        return self.me is not None and descs.get(param) is self.me

    def said(self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description]) -> str | None:
        """The call in the words of its action's ``say`` phrase, or None when the action has none or it does not fit the call.

        Row slots become descriptions of the rows, value slots the values; the requester's
        own row is implied when not slotted, other rows and values the phrase leaves out are
        added after it.
        """
        phrase = self._say(spec.name)
        if phrase is None:
            return None
        if in_first_person(phrase) and not self._involves_me(spec, call, descs):
            return None  # "cancel my order" said of a row that is not the requester's
        row_param = {b.alias: b.param for b in spec.bindings if b.param}
        rows = set(row_param.values()) | set(descs)
        if any(row_param.get(n, n) not in call.args and row_param.get(n, n) not in call.refs for n in slots(phrase)):
            return None  # an optional row or value this call leaves out: the phrase does not fit
        fill: dict[str, str] = {}
        used: set[str] = set()
        for name in slots(phrase):
            param = row_param.get(name, name)
            used.add(param)
            if param in rows or param in call.refs:
                first = not any(p in rows or p in call.refs for p in used - {param})
                fill[name] = self.row_text(spec, call, param, descs, calls, role="main" if first else "other")
            else:
                fill[name] = _param_value(spec, self.bp, param, call.args[param])
        text = phrase.format(**fill)
        question = text.endswith("?")
        text = text.removesuffix("?")
        extra_rows = [p for p in sorted(rows) if p not in used and (p in call.args or p in call.refs) and not self._is_me(call, p, descs)]
        if extra_rows:
            text += " for " + ", ".join(self.row_text(spec, call, p, descs, calls, role="other") for p in extra_rows)
        values = [
            k for k in call.args if k not in used and k not in rows and k not in ("limit", "offset") and not self._mine(spec, k, call)
        ]
        if values and question:
            conds = self._filters(spec, Call(tool=call.tool, args={k: call.args[k] for k in values}))
            text += "".join(f" {c}" for c in conds)
        elif values:
            entity = spec.query.entity if spec.query else spec.entity
            new = "new " if spec.kind == "update" else ""
            parts = []
            for k in values:
                words = self._words(spec, entity, k)
                parts.append(f"the {new}{words} {_is(words)} {_param_value(spec, self.bp, k, call.args[k])}")
            text += "; " + ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return text + ("?" if question else "")

    def _say(self, tool: str) -> str | None:
        action = self.actions.get(tool)
        return action.say if action is not None else None

    def _involves_me(self, spec: ToolSpec, call: Call, descs: dict[str, Description]) -> bool:
        """Whether the call acts on the requester or on a row of theirs."""
        return any(self._is_me(call, p, descs) or self._mine(spec, p, call) or self._owned(call, p) for p in (*call.args, *call.refs))

    def _owned(self, call: Call, param: str) -> bool:
        value = call.args.get(param)
        return isinstance(value, str) and value in self.mine  # list arguments (a status filter) name no row

    def _mine(self, spec: ToolSpec, param: str, call: Call) -> bool:
        """Whether a parameter carries the requester's own id (implied by "my")."""
        return self.me_key is not None and refers_to(self.bp, spec.param(param)) is not None and call.args.get(param) == self.me_key

    def _words(self, spec: ToolSpec, entity: str, param: str) -> str:
        p = spec.param(param)
        if p.field:
            ent, fname = p.field.split(".")
            return _field_of(self.bp, ent, fname)
        return _field_of(self.bp, entity, param)

    def clause(self, idx: int, calls: list[Call], descs: dict[str, Description]) -> str:
        call = calls[idx]
        spec = self.specs[call.tool]
        bp = self.bp
        said = self.said(spec, call, calls, descs)
        if said is not None:
            return said
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
        elif spec.kind == "update" and any(c.id == "given" for c in spec.pre):  # an update with only 'set' reads as its verb
            target = self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)
            changes = [f"its {self._words(spec, spec.entity, k)} to {_param_value(spec, bp, k, v)}" for k, v in values.items()]
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
            parts = [f"{self._words(spec, spec.entity, k)} {_param_value(spec, bp, k, v)}" for k, v in values.items()]
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
                return f"{name} {'on ' if dated else ''}{fmt(lo)}" if dated else f"with {_article(name)} {name} of exactly {fmt(lo)}"
            return f"{name} between {fmt(lo)} and {fmt(hi)}" if dated else f"with {_article(name)} {name} between {fmt(lo)} and {fmt(hi)}"
        if lo is not None:
            return f"{name} on or after {fmt(lo)}" if dated else f"with {_article(name)} {name} of at least {fmt(lo)}"
        return f"{name} on or before {fmt(hi)}" if dated else f"with {_article(name)} {name} of at most {fmt(hi)}"

    def question(self, call: Call, field: str | None, descs: dict[str, Description], calls: list[Call]) -> str:
        spec = self.specs[call.tool]
        q = spec.query
        entity = q.entity if q else spec.entity
        many = plural(noun(self.bp.entity(entity)))
        if spec.kind == "get":
            target = self.row_text(spec, call, spec.bindings[0].param or "", descs, calls)
            words = _field_of(self.bp, entity, field or "")
            return self.rng.choice((f"What is the {words} of {target}?", f"Tell me the {words} of {target}."))
        of_row = self._of_row(spec, call, calls)
        if of_row is not None:
            return of_row
        group = group_of(field) if field else None
        if group is not None and q is not None:  # one group of a grouped count or total: the group is one more filter
            return self._group_question(spec, call, q.entity, group)
        phrase = self._say(spec.name)
        counts = q is not None and (q.op == "search" or q.agg == "count")  # the answer is a number: the question must ask how many
        fits = phrase is not None and phrase.endswith("?") and (not counts or phrase.lower().startswith("how many"))
        said = self.said(spec, call, calls, descs) if fits else None
        if said is not None:
            return said[0].upper() + said[1:]
        conds = self._filters(spec, call)
        where = (" " + " and ".join(conds)) if conds else ""
        if q is not None and q.op == "aggregate" and q.agg != "count":
            word = {"sum": "total", "avg": "average", "min": "lowest", "max": "highest"}[q.agg or "sum"]
            return f"What is the {word} {_field_of(self.bp, entity, q.field or '')} of the {many}{where}?"
        return self.rng.choice((f"How many {many} are there{where}?", f"Count the {many}{where} and tell me the number."))

    def _group_question(self, spec: ToolSpec, call: Call, entity: str, group: tuple[str, str]) -> str:
        """ "How many orders are there that are pending?", "What is the total balance of the accounts where the currency is EUR?" """
        q = spec.query
        ent = self.bp.entity(entity)
        f = ent.field(group[0])
        conds = [*self._filters(spec, call), _matching_phrase(f, field_words(f), group[1], fmt_value(f, group[1]))]
        where = " " + " and ".join(conds)
        many = plural(noun(ent))
        if q is not None and q.agg not in (None, "count"):
            word = {"sum": "total", "avg": "average", "min": "lowest", "max": "highest"}[q.agg or "sum"]
            words = _field_of(self.bp, entity, q.field or "")
            what = words if word in words.split() else f"{word} {words}"
            return f"What is the {what} of the {many}{where}?"
        return self.rng.choice((f"How many {many} are there{where}?", f"Count the {many}{where} and tell me the number."))

    def _of_row(self, spec: ToolSpec, call: Call, calls: list[Call]) -> str | None:
        """A count or total over the rows of a row an earlier call named ("How many reviews does that product have?"), or None.

        The row is the only filter of such a read (see :func:`envsynth.tasks.chain.plan_chain`):
        the requester's own ("do I have"), one the request made, or one it named before ("that product").
        """
        q = spec.query
        rows = [p for p in (*call.args, *call.refs) if refers_to(self.bp, spec.param(p)) not in (None, q.entity if q else None)]
        others = [k for k in call.args if k not in rows and k not in ("limit", "offset")]
        if q is None or len(rows) != 1 or others:
            return None
        param = rows[0]
        value = call.args.get(param)
        if param not in call.refs and (value is None or value not in self.mentioned | {self.me_key}):
            return None
        many = plural(noun(self.bp.entity(q.entity)))
        mine = param not in call.refs and value == self.me_key
        owner = self.rng.choice(("that ", "the same ")) + noun(self.bp.entity(refers_to(self.bp, spec.param(param)) or ""))
        now = " now" if any(_changes(self.specs[c.tool], q.entity) for c in calls) else ""  # after a write to such rows
        if q.op == "aggregate" and q.agg != "count":
            word = {"sum": "total", "avg": "average", "min": "lowest", "max": "highest"}[q.agg or "sum"]
            whose = f"my {many}" if mine else f"the {many} of {owner}"
            words = _field_of(self.bp, q.entity, q.field or "")
            what = words if word in words.split() else f"{word} {words}"  # never "the total line total"
            return f"What is the {what} of {whose}{now}?"
        return f"How many {many} do I have{now}?" if mine else f"How many {many} does {owner} have{now}?"

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
            f = self.bp.entity(q.entity).field(flt.field) if q and self.bp.entity(q.entity).has(flt.field) else None
            words = field_words(f) if f is not None else human(flt.field)
            if flt.op in ("gte", "lte"):
                if flt.field in done:
                    continue
                done.add(flt.field)
                out.append(self._range(spec, flt.field, flt.param, bounds[flt.field]))
                continue
            if flt.op == "contains":
                out.append(f'with "{v}" in the {words}')
            else:
                out.append(_matching_phrase(f, words, v, val))
        return out


def _changes(spec: ToolSpec, entity: str) -> bool:
    """Whether a write tool may add, change or remove rows of ``entity``."""
    return spec.mode == "write" and (entity in spec.writes or any(ef.entity == entity for ef in spec.effects))


def in_first_person(phrase: str) -> bool:
    """Whether a ``say`` phrase speaks as the requester ("cancel my order"), slots aside."""
    return _FIRST_PERSON.search(_SLOT.sub("", phrase)) is not None


def _is(words: str) -> str:
    """The verb for a field's words: "the notes are", "the status is"."""
    last = words.rsplit(" ", 1)[-1]
    return "are" if last.endswith("s") and not last.endswith(("ss", "us", "is")) else "is"


def refers_to(bp: Blueprint, p: ParamSpec) -> str | None:
    """The entity whose id a parameter carries: a row parameter's, or a filter's on a ref field."""
    if p.ref is not None:
        return p.ref
    if p.semantic in ("ref", "id") and p.field:
        ent, name = p.field.split(".")
        f = bp.entity(ent).field(name)
        return f.ref if f.type == "ref" else ent
    return None


def _matching_phrase(f: FieldDef | None, words: str, raw: Any, val: str) -> str:
    """A filter ``field == value`` said of the rows a question is about: "that are pending", "from Lumen & Co"."""
    if f is not None and f.say and not isinstance(raw, list):
        return f.say.replace("{value}", val)
    if f is not None and f.type in ("enum", "state"):
        return f"that are {val}"
    if f is not None and f.type == "bool" and f.label:
        return f"that are {'' if raw else 'not '}{f.label}"
    return f"where the {words} is {val}"


def _range_words(spec: ToolSpec, bp: Blueprint, field: str) -> tuple[str, bool]:
    ent = bp.entity(spec.query.entity) if spec.query else None
    f = ent.field(field) if ent is not None and ent.has(field) else None
    dated = f is not None and f.type in ("date", "datetime")
    name = field_words(f) if f is not None else human(field)
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


@dataclass(frozen=True)
class Requester:
    """Who asks: their profile, the table their row is in (None for staff) and how they identify themselves."""

    user: UserProfile
    table: str | None = None
    key: Any = None
    identity: tuple[str, ...] = ()
    made_at: int | None = None  # the step that signs the requester up, when the chain does

    @property
    def staff(self) -> bool:
        return self.table is None


def _role(bp: Blueprint, table: str | None) -> UserRole | None:
    return next((u for u in bp.users if u.entity == table), None)


def profile(
    bp: Blueprint,
    rows: dict[str, list[dict[str, Any]]],
    targets: list[tuple[str, Any]],
    rng: random.Random,
    fake_name: Callable[[], str],
    made: list[tuple[int, str, dict[str, Any], str | None]] | None = None,
) -> Requester:
    """The user: a person the task names (a customer, a member), else a staff member (named by ``fake_name()``).

    ``made`` lists the rows the chain creates, as (step, table, argument values, the action's
    ``say``): a person of a declared role the chain signs up ("sign me up ...") is the one asking. Otherwise the first person among
    the ``targets`` is, people of a declared role (``users``) first. A declared role gives the
    role's words and the values the requester identifies themselves by (``identify_by``); other
    people identify themselves by their unique email or phone, if they have one.
    """
    for step, table, values, say in made or []:
        role = _role(bp, table)
        name_field = person_name(bp.entity(table)) if role else None
        signs_up = say is None or in_first_person(say)  # "sign me up", not "invite {name}"
        if name_field is not None and values.get(name_field) and signs_up:
            return _person(bp, table, values, None, step)
    for table, key in sorted(targets, key=lambda tk: _role(bp, tk[0]) is None):  # declared roles first (a stable sort)
        ent = bp.entity(table)
        if _name_field(bp, ent) is None:
            continue
        row = next((r for r in rows.get(table, []) if r[ent.id_field] == key), None)
        if row is not None:
            return _person(bp, table, row, key, None)
    staff = _role(bp, None)
    role_words = (staff.called or human(staff.role)) if staff else f"{bp.title} staff member"
    return Requester(UserProfile(name=fake_name(), role=role_words, preferences={}))


def identity_fields(bp: Blueprint, ent: Entity) -> set[str]:
    """The fields a person of ``ent`` gives to say who they are: their name and what the app finds them by."""
    name = _name_field(bp, ent)
    return ({name} if name else set()) | set(identify_by(bp, ent))


def identify_by(bp: Blueprint, ent: Entity) -> list[str]:
    """The fields a person of ``ent`` is found by besides their name: their role's ``identify_by``, else a unique email or phone."""
    role = _role(bp, ent.name)
    return role.identify_by if role else [f.name for f in ent.fields if f.unique and f.type in ("email", "phone")]


def _name_field(bp: Blueprint, ent: Entity) -> str | None:
    if _role(bp, ent.name) is not None:
        return person_name(ent)
    label = ent.field(ent.label) if ent.label else None
    return ent.label if label is not None and label.type == "name" else None


def _person(bp: Blueprint, table: str, row: dict[str, Any], key: Any, made_at: int | None) -> Requester:
    """The requester who is ``row`` of ``table`` (an existing row with id ``key``, or one step ``made_at`` creates)."""
    ent = bp.entity(table)
    role = _role(bp, table)
    ident = identify_by(bp, ent)
    user = UserProfile(
        name=row[_name_field(bp, ent) or ""],
        role=(role.called or human(role.role)) if role else human(table),
        email=next((row.get(f.name) for f in ent.fields if f.type == "email"), None),
        phone=next((row.get(f.name) for f in ent.fields if f.type == "phone"), None),
        preferences={f.name: row[f.name] for f in ent.fields if f.type in ("enum", "bool") and row.get(f.name) is not None},
        knows=[f"my {field_words(ent.field(f))} is {quoted(ent.field(f), row[f])}" for f in ident if row.get(f) is not None],
    )
    ids = tuple(quoted(ent.field(f), row[f]) for f in ident if row.get(f) is not None)
    return Requester(user, table, key, ids, made_at)


def greeting(requester: Requester, rng: random.Random) -> str:
    """How a person the task names opens: their name, and what the app finds them by; staff do not introduce themselves."""
    if requester.staff:
        return ""
    name = requester.user.name
    if requester.identity:
        ids = " / ".join(requester.identity)
        return rng.choice((f"Hi, this is {name} ({ids}).", f"Hello, I'm {name}, {ids}.", f"Hi, {name} here ({ids})."))
    return rng.choice((f"Hi, this is {name}.", f"Hello, I'm {name}."))


_ID_ANY_CASE = re.compile(ID_PATTERN.pattern, re.IGNORECASE)


def leaks_id(text: str) -> bool:
    """Whether an instruction contains something shaped like an internal id, in any letter case (``RNT_104200`` too)."""
    return "_" in text and _ID_ANY_CASE.search(text) is not None  # every id has an underscore (a cheap test first)
