"""Instructions and user profiles rendered from a verified chain, with varied phrasing.

Rows the agent must find are named by their descriptions (see :mod:`describe`), values
the user supplies are written out, rows created earlier in the same request are "that
order" / "the new order". Ids never appear.
"""

from __future__ import annotations

import random
import re
from typing import Any

from envsynth.blueprint.entities import Entity
from envsynth.blueprint.language import slots
from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.state import Rows
from envsynth.tasks.model import Call
from envsynth.tasks.wording.describe import Description, flag, human, noun, one_of, render, without_owner
from envsynth.tasks.wording.frames import framed
from envsynth.tasks.wording.questions import Questions, joined
from envsynth.tasks.wording.requester import Requester, greeting, identify_by, identity_fields, profile
from envsynth.tasks.wording.words import and_list, counted, in_first_person, param_field, plural, refers_to
from envsynth.tasks.wording.words import article as _article
from envsynth.tasks.wording.words import field_of as _field_of
from envsynth.tasks.wording.words import param_value as _param_value
from envsynth.tasks.wording.words import verb_is as _is

__all__ = [
    "ID_PATTERN",
    "Phraser",
    "Requester",
    "compose",
    "greeting",
    "identify_by",
    "identity_fields",
    "in_first_person",
    "leaks_id",
    "plural",
    "profile",
    "refers_to",
]

ID_PATTERN = re.compile(r"\b[a-z]{2,5}_\d{6}\b")


def _verb(spec: ToolSpec) -> str:
    """The action words of a tool name without its entity noun: cancel_order -> cancel."""
    words = spec.name.split("_")
    noun = set(spec.entity.split("_"))
    kept = [w for w in words if w not in noun] or words[:1]
    return " ".join(kept)


class Phraser(Questions):
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
        me_table: str | None = None,
    ) -> None:
        self.bp = bp
        self.specs = specs
        self.rng = rng
        self.me = me  # the user's own row, named in the first person
        self.me_key = me_key  # its id: a search or count over "my" rows leaves it implied
        self.me_step = me_step  # the step that signs the user up, when the request does
        self.mine = mine  # ids of the rows that are the user's own (their orders, their accounts): "my order ..."
        self.me_table = me_table if me_table is not None else me.entity if me is not None else None  # the requester's table
        self.mentioned: set[Any] = set()  # ids of the rows named in full so far
        self.owners: list[Description] = []  # the rows named in full inside another's words ("the order of fan X")
        self.named: list[Description] = []  # the rows named in full in their own words ("fan X")
        self.client: tuple[Entity, dict[str, Any], Rows] | None = None  # the person the opening names (a staff request)
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
        if (isinstance(key, str) and key in self.mentioned) or d in self.owners:  # named in full once; then "that order"
            return self.rng.choice(("that ", "the same ")) + noun(self.bp.entity(d.entity))
        if isinstance(key, str):
            self.mentioned.add(key)
        if self._owned(call, param):  # the requester's own row: "my playlist ...", never "... of <the requester>"
            return render(self.bp, without_owner(self.bp, d, self.me_table), possessive="my")
        self.owners.extend(parent for _, parent in d.parents())  # "the order of fan X ... to the same fan"
        told = next((p for _, p in d.parents() if self._is_told(p)), None)
        self.named.append(d)
        if told is not None and (alone := without_owner(self.bp, d, told.entity)) is not d:  # "... of that fan"
            return f"{render(self.bp, alone)} of {self.rng.choice(('that ', 'the same '))}{noun(self.bp.entity(told.entity))}"
        return render(self.bp, d)

    def told(self, row: tuple[str, Any], rows: Rows) -> None:
        """The person ``row`` ((table, id) in ``rows``) is named before the clauses (a staff request's "I'm helping our fan
        X"): the clauses refer back to them ("that fan", "the hold of the same fan")."""
        ent = self.bp.entity(row[0])
        found = next((r for r in rows.get(row[0], []) if r.get(ent.id_field) == row[1]), None)
        if found is not None:
            self.mentioned.add(row[1])
            self.client = (ent, found, rows)

    def _is_client(self, key: Any) -> bool:
        """Whether ``key`` is the id of the person the opening says the request is for."""
        return self.client is not None and key is not None and key == self.client[1].get(self.client[0].id_field)

    def _is_told(self, d: Description) -> bool:
        """Whether ``d`` names a row the request has named in full already (in its own words, or in the opening)."""
        if d in self.named:
            return True
        c = self.client
        return c is not None and d.entity == c[0].name and d.matches(self.bp, c[2], c[1])

    def _is_me(self, call: Call, param: str, descs: dict[str, Description]) -> bool:
        """Whether the row ``param`` names is the requester (their existing row, or the one the request signs them up as)."""
        if param in call.refs:
            return self.me_step is not None and call.refs[param].step == self.me_step
        return self.me is not None and descs.get(param) is self.me

    def said(self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], phrase: str | None = None) -> str | None:
        """The call in the words of its action's ``say`` phrase (or of ``phrase``), or None when the action has none or it
        does not fit the call.

        Row slots become descriptions of the rows, value slots the values; the requester's
        own row is implied when not slotted, other rows and values the phrase leaves out are
        added after it.
        """
        phrase = phrase or self._say(spec.name)
        if phrase is None:
            return None
        signs_me_up = self.me_step is not None and self.me_step < len(calls) and calls[self.me_step] is call
        if in_first_person(phrase) and not (signs_me_up or self._involves_me(spec, call, descs)):
            return None  # "cancel my order" said of a row that is not the requester's
        row_param = {b.alias: b.param for b in spec.bindings if b.param}
        rows = set(row_param.values()) | set(descs)
        fill = self._bound_rows(spec, call, descs, phrase)  # slots naming a row bound through the acted-on row ("{huddle}")
        if any(row_param.get(n, n) not in call.args and row_param.get(n, n) not in call.refs for n in slots(phrase) if n not in fill):
            return None  # an optional row or value this call leaves out: the phrase does not fit
        used: set[str] = {self._main_param(spec)} if fill else set()
        self._fill_slots(spec, call, calls, descs, phrase, fill, used, rows, row_param)
        text = one_of(_mine_said(phrase, fill).format(**fill))  # "for 1 seconds" -> "for 1 second"
        main = self._main_param(spec)
        mine = signs_me_up or bool(main and self._is_me(call, main, descs))
        return self._after_say(spec, call, calls, descs, text, rows, used, "my account" if mine else "it")

    def _after_say(
        self,
        spec: ToolSpec,
        call: Call,
        calls: list[Call],
        descs: dict[str, Description],
        text: str,
        rows: set[str],
        used: set[str],
        subject: str,
    ) -> str:
        """``text`` (a filled say phrase) with the rows and values it leaves out after it; ``subject`` is the acted-on row
        ("it", or "my account" for the requester's own: "make sure my account is ...", "my display name is ...")."""
        question = text.endswith("?")
        switched = self._switched(spec, call, rows, used)  # an update's new plan: "switch it to the plan ..."
        text = text.removesuffix("?") + self._extra_rows(spec, call, calls, descs, rows, used | set(switched))
        values = [
            k for k in call.args if k not in used and k not in rows and k not in ("limit", "offset") and not self._mine(spec, k, call)
        ]
        moves = [self._move(spec, call, calls, descs, p, subject) for p in switched]
        return text + self._left_out_values(spec, call, values, question, subject, moves) + ("?" if question else "")

    def _move(self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], param: str, subject: str) -> str:
        """An update's new parent row: "switch it to the plan ...", or of the requester's own row "my new home club is ..."."""
        row = self.row_text(spec, call, param, descs, calls, role="other")
        if subject != "my account":
            return f"switch {subject} to {row}"
        f = param_field(spec, self.bp, param)[1]
        words = f.label if f is not None and f.label else human(param).removesuffix(" id")
        return f"my new {words} is {row}"

    def _switched(self, spec: ToolSpec, call: Call, rows: set[str], used: set[str]) -> list[str]:
        """The row parameters an update sets on its row and its say phrase leaves out (a subscription's new plan)."""
        if spec.kind != "update":
            return []
        return [
            p
            for p in sorted(rows)
            if p not in used
            and p in call.args
            and (spec.param(p).field or "").split(".")[0] == spec.entity
            and not self._mine(spec, p, call)
        ]

    def _extra_rows(
        self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], rows: set[str], used: set[str]
    ) -> str:
        """The rows a say phrase leaves out (but the requester, implied), after it: " for the colleague ..."."""
        extra = [
            p
            for p in sorted(rows)
            if p not in used
            and (p in call.args or p in call.refs)
            and not self._is_me(call, p, descs)
            and descs.get(p) not in self.owners
            and not self._is_client(call.args.get(p))
        ]  # a row named as another's owner, or in the opening, is not named again ("the hold of fan X", not "... for fan X")
        if not extra:
            return ""
        return " for " + ", ".join(self.row_text(spec, call, p, descs, calls, role="other") for p in extra)

    def _fill_slots(
        self,
        spec: ToolSpec,
        call: Call,
        calls: list[Call],
        descs: dict[str, Description],
        phrase: str,
        fill: dict[str, str],
        used: set[str],
        rows: set[str],
        row_param: dict[str, str | None],
    ) -> None:
        """Fill ``fill`` with the words of each slot of ``phrase`` not filled yet (rows described, values as written),
        adding the parameters it says to ``used``."""
        for name in slots(phrase):
            if name in fill:
                continue
            param = row_param.get(name, name) or name
            used.add(param)
            if param in rows or param in call.refs:
                first = not any(p in rows or p in call.refs for p in used - {param})
                fill[name] = self.row_text(spec, call, param, descs, calls, role="main" if first else "other")
            else:
                fill[name] = _param_value(spec, self.bp, param, call.args[param])

    def _left_out_values(
        self, spec: ToolSpec, call: Call, values: list[str], question: bool, subject: str = "it", moves: list[str] | None = None
    ) -> str:
        """The values a say phrase leaves out, after it: as conditions of a question, else "; the new name is ...",
        ", with 9 seats left" for a count and "make sure {subject} is private" for a yes or no."""
        if not values and not moves:
            return ""
        if question:
            return joined(self._filters(spec, Call(tool=call.tool, args={k: call.args[k] for k in values})))
        entity = spec.query.entity if spec.query else spec.entity
        told, counts = list(moves or []), []
        for k in values:
            part, is_count = self._given(spec, entity, k, call.args[k], subject)
            (counts if is_count else told).append(part)
        counts = [
            c.removeprefix("with ") if i and c.startswith("with ") and counts[i - 1].startswith("with ") else c
            for i, c in enumerate(counts)
        ]
        return (", " + and_list(counts) if counts else "") + ("; " + and_list(told) if told else "")

    def _given(self, spec: ToolSpec, entity: str, k: str, v: Any, subject: str) -> tuple[str, bool]:
        """A value the request gives for parameter ``k``, and whether it is a count (said after the phrase with "with")."""
        words = self._words(spec, entity, k)
        f = param_field(spec, self.bp, k)[1] or self._own_field(entity, k)
        if isinstance(v, bool) and f is not None:  # "make sure it renews automatically", not "the automatic renewal is yes"
            return f"make sure {subject} {flag(f, v)}", False
        if spec.kind != "update" and (count := counted(f, words, v)) is not None:  # ", with 9 seats left"
            return count, True
        whose = "my" if subject == "my account" else "the"  # signing up: "my display name is ..."
        new = "new " if spec.kind == "update" else ""
        return f"{whose} {new}{words} {_is(words)} {_param_value(spec, self.bp, k, v)}", False

    def _own_field(self, entity: str, name: str) -> FieldDef | None:
        """The field ``name`` of ``entity``, if it has one (a parameter named after the field it sets)."""
        ent = self.bp.entity(entity)
        return ent.field(name) if ent.has(name) else None

    @staticmethod
    def _main_param(spec: ToolSpec) -> str:
        """The parameter of the row the tool acts on ("" when none)."""
        return next((b.param for b in spec.bindings if b.param and not b.many and b.entity == spec.entity), "")

    def _bound_rows(self, spec: ToolSpec, call: Call, descs: dict[str, Description], phrase: str) -> dict[str, str]:
        """Words for the slots of ``phrase`` that name a row bound through the acted-on row, not passed ("take me out of
        {huddle}", the huddle of the huddle spot): "that huddle" after a step made the spot, else the row the spot's
        description names it by; none when some such slot has no words (the phrase does not fit)."""
        bound = {b.alias: b.entity for b in spec.bindings if b.param is None and b.via}
        names = [n for n in slots(phrase) if n in bound and n not in call.args]
        main = self._main_param(spec)
        if not names or not main:
            return {}
        d = descs.get(main)
        if isinstance(d, Description) and main not in call.refs and self._leaves_out(d, {bound[n] for n in names}):
            return {}
        out = {}
        for name in names:
            parent = next((pd for _, pd in d.parents() if pd.entity == bound[name]), None) if isinstance(d, Description) else None
            if main in call.refs:
                out[name] = self.rng.choice(("that ", "the same ")) + noun(self.bp.entity(bound[name]))
            elif parent is not None:
                out[name] = render(self.bp, parent)  # "ban {member} from the community": the member the membership is named by
            else:
                return {}
        return out

    def _leaves_out(self, d: Description, said: set[str]) -> bool:
        """Whether a phrase that names only rows of the tables ``said`` would leave out what tells ``d``'s row apart:
        a fact of its own, or a parent other than those and the requester ("ban {member}" of a membership named with
        its community too)."""
        return bool(d.facts) or d.most is not None or any(pd.entity not in said and pd is not self.me for _, pd in d.parents())

    def _say(self, tool: str) -> str | None:
        action = self.actions.get(tool)
        return action.say if action is not None else None

    def _involves_me(self, spec: ToolSpec, call: Call, descs: dict[str, Description]) -> bool:
        """Whether the call acts on the requester or on a row of theirs (one their own request made earlier is theirs)."""
        if self.me is not None and call.refs:
            return True
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
        """Call ``idx`` of the chain as a request clause: in its action's ``say`` phrase, else in words derived from the tool."""
        call = calls[idx]
        spec = self.specs[call.tool]
        said = self.said(spec, call, calls, descs)
        if said is not None:
            return said
        row_params = [b.param for b in spec.bindings if b.param is not None and (b.param in call.args or b.param in call.refs)]
        values = {k: v for k, v in call.args.items() if k not in row_params and k not in ("limit", "offset")}
        main = next((b.param for b in spec.bindings if b.entity == spec.entity and b.param in row_params), None)
        others = [p for p in row_params if p != main]
        if spec.kind == "transfer" and len(row_params) >= 2:
            text = self._transfer(spec, call, calls, descs, row_params, values)
            others = []
        elif spec.kind == "update" and any(c.id == "given" for c in spec.pre):  # an update with only 'set' reads as its verb
            text = self._set(spec, call, calls, descs, main, values, others)
            values, others = {}, []
        else:
            text = self._derived(spec, call, calls, descs, main)
        return text + self._others_and_values(spec, call, calls, descs, others, values)

    def _others_and_values(
        self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], others: list[str], values: dict[str, Any]
    ) -> str:
        """What a derived clause adds after its verb and row: " for the team ..., using ...", ", setting its ..."."""
        text = ""
        if others:
            linked = [self.row_text(spec, call, p, descs, calls, role="other") for p in others]
            text += " for " + linked[0] + "".join(f", using {t}" for t in linked[1:])
        if values:
            parts = [f"{self._words(spec, spec.entity, k)} {_param_value(spec, self.bp, k, v)}" for k, v in values.items()]
            listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
            lead = "," if others else ""
            text += f"{lead} with {listed}" if spec.kind in ("create", "book") else f", setting {listed}"
        return text

    def _transfer(
        self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], row_params: list[str], values: dict[str, Any]
    ) -> str:
        """ "move $20.00 from my account ... to my account ..." (the amount leaves ``values``)."""
        amount = spec.param(next(p.name for p in spec.params if p.name not in row_params))
        src, dst = row_params[0], row_params[1]
        how_much = _param_value(spec, self.bp, amount.name, call.args[amount.name])
        if amount.semantic != "money" and amount.field:
            how_much += " " + human(amount.field.split(".")[1])
        source = self.row_text(spec, call, src, descs, calls)
        target = self.row_text(spec, call, dst, descs, calls, role="other")
        values.pop(amount.name, None)
        return f"move {how_much} from {source} to {target}"

    def _set(
        self,
        spec: ToolSpec,
        call: Call,
        calls: list[Call],
        descs: dict[str, Description],
        main: str | None,
        values: dict[str, Any],
        others: list[str],
    ) -> str:
        """ "update the task ...: set its title to ... and its assignee to ..." (an update with only 'set')."""
        target = self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)
        changes = [f"its {self._words(spec, spec.entity, k)} to {_param_value(spec, self.bp, k, v)}" for k, v in values.items()]
        changes += [f"its {human(p).removesuffix(' id')} to {self.row_text(spec, call, p, descs, calls, role='other')}" for p in others]
        return f"update {target}: set " + ", ".join(changes[:-1]) + (" and " if len(changes) > 1 else "") + changes[-1]

    def _derived(self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], main: str | None) -> str:
        """The call in words derived from the tool's name: "create a task", "delete the label ...", "archive the channel ..."."""
        if spec.kind in ("create", "book"):
            words = spec.name.split("_")
            rest = human("_".join(words[1:])) or human(spec.entity)
            prepositional = rest.split(" ")[0] in ("for", "to", "from", "on", "in", "at", "with", "into")
            return f"{words[0]} {_article(rest)} {rest}" if spec.kind == "create" and not prepositional else f"{words[0]} {rest}"
        target = self.row_text(spec, call, main, descs, calls) if main else human(spec.entity)
        if spec.kind == "delete":
            return f"delete {target}"
        verb = _verb(spec)
        return f"{verb} {target}" if " " not in verb else f"{human(spec.name)} for {target}"


def _mine_said(phrase: str, fill: dict[str, str]) -> str:
    """``phrase`` with "the account of {member}" as "my account" where that slot is the requester ("deactivate my account")."""
    for name, words in fill.items():
        if words == "my account":
            phrase = re.sub(rf"\bthe (\w+) of \{{{name}\}}", r"my \1", phrase)
    return phrase


def compose(
    clauses: list[str], question: str | None, rng: random.Random, greeting: str, style: str = "brief", goals: frozenset[int] = frozenset()
) -> str:
    """The request's text: the greeting, then its clauses and question framed the way a person of ``style`` talks
    (``goals``: the clauses that start a further goal of a multi-goal request, "Also, ...")."""
    sentences = [greeting] if greeting else []
    sentences += framed(clauses, question, rng, style, goals)
    text = " ".join(s[0].upper() + s[1:] if s else s for s in sentences)
    text = _THAT_THAT.sub(lambda m: f"{m.group(1)} the same", text)  # "record that that customer ...": "that the same customer"
    return " ".join(text.split())  # runs of white space made one space, none at the ends


_THAT_THAT = re.compile(r"\b([Tt]hat) that\b")


_ID_ANY_CASE = re.compile(ID_PATTERN.pattern, re.IGNORECASE)


def leaks_id(text: str) -> bool:
    """Whether an instruction contains something shaped like an internal id, in any letter case (``RNT_104200`` too)."""
    return "_" in text and _ID_ANY_CASE.search(text) is not None  # every id has an underscore (a cheap test first)
