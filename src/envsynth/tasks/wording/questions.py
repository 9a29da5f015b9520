"""Questions of information tasks, in the words a person asks them: a count, a total, a field of a row.

The rows a count or total is about are said the way people narrow them down: by what they are
("that are pending"), where or when ("from CLT", "placed on or after March 3, 2026"), and what
they hold ("with "mat" in the name", "with at least 8 seats"); never a labelled date field where
a participle belongs ("date of the charge on or after ..."). A count over every row of a table
asks nothing a person wants to know: :func:`unfiltered` tells synthesis to drop it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.spec import ToolSpec
from envsynth.runtime.answerpath import group_of
from envsynth.tasks.model import Call
from envsynth.tasks.wording.describe import Description, field_words, flag, fmt_value, human, noun, one_of, quoted
from envsynth.tasks.wording.words import article, field_of, is_plural, param_value, plural, refers_to, verb_is

_AGG_WORD = {"sum": "total", "avg": "average", "min": "lowest", "max": "highest"}
_RELATIVE = ("that ", "who ", "where ")
_DATED_SUFFIX = re.compile(r"_(?:at|on|date)$")
_NOT_ASKED = ("limit", "offset")
_LISTING = re.compile(r"^(?:which|what) ((?:\{\w+\} )?[a-z]+s (?:are|am|do|does|have|has|can|did)\b)", re.IGNORECASE)
_STATE = re.compile(r"^that are ([a-z][a-z-]*)$")  # one word of what the rows are: "trial subscriptions", "verified artists"
_KIND = re.compile(r"^where the ([a-z][a-z ]*) (?:is|are) ([a-z][a-z-]*(?: [a-z][a-z-]*)?)$")  # "water accounts", "low-priority tasks"
_SCALES = ("priority", "intensity", "severity", "tier", "level")  # said with their value: "low-priority", "gold-tier"


class Questions:
    """The question-asking part of :class:`~envsynth.tasks.wording.instruction.Phraser` (a mixin: it uses the phraser's state)."""

    bp: Blueprint
    specs: dict[str, ToolSpec]
    rng: random.Random
    mentioned: set[Any]
    me_key: Any

    row_text: Callable[..., str]  # the phraser's: a row in words ("my order placed on ...", "that product")
    said: Callable[..., str | None]  # the phraser's: a call in its action's say phrase
    _say: Callable[[str], str | None]  # the phraser's: a tool's say phrase
    _is_me: Callable[..., bool]  # the phraser's: whether a parameter names the requester

    def question(self, call: Call, field: str | None, descs: dict[str, Description], calls: list[Call]) -> str:
        """The request's question about the result of ``call`` (``field`` of it: a get's field, a count, a total)."""
        spec = self.specs[call.tool]
        q = spec.query
        entity = q.entity if q else spec.entity
        if spec.kind == "get":
            return self._get_question(spec, call, entity, field or "", descs, calls)
        named = self._described_row(spec, call, descs)
        if named is not None and q is not None:  # about the rows of a row the request names: "How many people follow ...?"
            return self._about_named_row(spec, call, q.entity, named, descs, calls)
        of_row = self._of_row(spec, call, calls, descs)
        if of_row is not None:
            return of_row
        group = group_of(field) if field else None
        if group is not None and q is not None:  # one group of a grouped count or total: the group is one more filter
            return self._group_question(spec, call, q.entity, group, descs, calls)
        said = self._asked_in_say(spec, call, calls, descs)
        if said is not None:
            return said
        return self._count_or_total(spec, entity, self._filters(spec, call))

    def _asked_in_say(
        self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description], listed: bool = False
    ) -> str | None:
        """The question in the words of the read's ``say`` phrase, when it is a question that asks what the answer is
        (how many, for a count), else None. ``listed``: a question that lists rows ("which labels are on {task}?") asks
        how many of them there are ("how many labels are on {task}?")."""
        q = spec.query
        phrase = self._say(spec.name)
        counts = q is not None and (q.op == "search" or q.agg == "count")  # the answer is a number: the question must ask how many
        if listed and counts and phrase is not None:
            phrase = how_many(phrase)
        fits = phrase is not None and phrase.endswith("?") and (not counts or phrase.lower().startswith("how many"))
        said = self.said(spec, call, calls, descs, phrase) if fits else None
        if said is None:
            return None
        said = said.replace(" does my account ", " do I ")  # the requester as the subject: "how many followers do I have?"
        return said[0].upper() + said[1:]

    def _described_row(self, spec: ToolSpec, call: Call, descs: dict[str, Description]) -> str | None:
        """The parameter of the row a search or aggregate is about that the request names by its description (not the
        requester, not a row an earlier step named), or None."""
        return next(
            (
                p
                for p in descs
                if p in call.args
                and p not in call.refs
                and spec.query is not None
                and any(flt.param == p for flt in spec.query.filters)
                and call.args[p] not in self.mentioned | {self.me_key}
            ),
            None,
        )

    def _about_named_row(
        self, spec: ToolSpec, call: Call, entity: str, param: str, descs: dict[str, Description], calls: list[Call]
    ) -> str:
        """ "How many people follow the artist "Velvet Harbor"?", "How many songs are on my playlist ...?" (the read's say
        phrase), else "How many comments does the post ... have?", "How many reviews are there of the product ... that are published?"."""
        said = self._asked_in_say(spec, call, calls, descs, listed=True)
        if said is not None:
            return said
        q = spec.query
        row = self.row_text(spec, call, param, descs, calls)
        others = self._filters(spec, call, skip=param)
        if others or q is None:
            return self._count_or_total(spec, entity, [f"of {row}", *others])
        many = plural(noun(self.bp.entity(entity)))
        if q.op == "aggregate" and q.agg != "count":
            return _total_question(_AGG_WORD[q.agg or "sum"], field_of(self.bp, entity, q.field or ""), f"the {many} of {row}")
        return f"How many {many} does {row} have?"

    def _get_question(self, spec: ToolSpec, call: Call, entity: str, field: str, descs: dict[str, Description], calls: list[Call]) -> str:
        """ "What is the status of my order placed on ...?"; of the requester's own row: "What is my job title?" """
        target = self.row_text(spec, call, spec.bindings[0].param or "", descs, calls)
        words = field_of(self.bp, entity, field)
        be = verb_is(words)
        ent = self.bp.entity(entity)
        if target == "my account" and (own := _of_me(ent.field(field) if ent.has(field) else None, words)) is not None:
            return own
        if (when := _when_question(words, target)) is not None:  # "When was that product added?"
            return when
        if target == "my account" and words != "status" and not words.startswith(("date ", "time ")):  # not "my date joined"
            return self.rng.choice((f"What {be} my {words}?", f"Tell me my {words}."))
        return self.rng.choice((f"What {be} the {words} of {target}?", f"Tell me the {words} of {target}."))

    def _count_or_total(self, spec: ToolSpec, entity: str, conds: list[str]) -> str:
        """ "How many orders are there placed on or after March 3, 2026 that are paid?", "What is the total amount of ...?" """
        q = spec.query
        # "open business accounts", not "accounts where the account type is business that are open"
        head = noun(self.bp.entity(entity))[:4]
        before = [c for c in conds if _STATE.match(c)] + [c for c in conds if _KIND.match(c)]
        before = [c for c in before if not _kind_words(c).startswith(head)]  # not "booked bookings"
        kinds = [_kind_words(c) for c in before]
        many = " ".join([*kinds, plural(noun(self.bp.entity(entity)))])
        where = joined([c for c in conds if c not in before])
        if q is not None and q.op == "aggregate" and q.agg != "count":
            return _total_question(_AGG_WORD[q.agg or "sum"], field_of(self.bp, entity, q.field or ""), f"the {many}{where}")
        return self.rng.choice((f"How many {many} are there{where}?", f"Could you tell me how many {many} there are{where}?"))

    def _group_question(
        self, spec: ToolSpec, call: Call, entity: str, group: tuple[str, str], descs: dict[str, Description], calls: list[Call]
    ) -> str:
        """ "How many orders are there that are pending?", "What is the total balance of the accounts where the currency is EUR?";
        a group of a row, by the row's description: "How many memberships are there for the plan "Premium" that are frozen?" """
        f = self.bp.entity(entity).field(group[0])
        if group[0] in descs:  # the row the group is of, described
            cond = self._group_row_phrase(spec, call, f, group[0], descs, calls)
        else:
            cond = matching_phrase(f, field_words(f), group[1], fmt_value(f, group[1]))
        return self._count_or_total(spec, entity, [*self._filters(spec, call), cond])

    def _group_row_phrase(
        self, spec: ToolSpec, call: Call, f: FieldDef, param: str, descs: dict[str, Description], calls: list[Call]
    ) -> str:
        """The group's row as a condition: the field's ``say`` ("from the colleague ..."), a participle label ("logged by
        me"), "where the sender is me" for the requester, else "for the plan ..."."""
        words = field_words(f)
        me = self._is_me(call, param, descs)
        row = "me" if me else self.row_text(spec, call, param, descs, calls)
        if f.say:
            return matching_phrase(f, words, None, row)
        if words.endswith(" by"):
            return f"{words} {row}"
        return f"where the {words} is me" if me else f"for {row}"

    def _of_row(self, spec: ToolSpec, call: Call, calls: list[Call], descs: dict[str, Description]) -> str | None:
        """A count or total over the rows of a row an earlier call named ("How many reviews does that product have?"), or None.

        The row is the only filter of such a read (see :func:`envsynth.tasks.planning.chain.plan_chain`):
        the requester's own ("do I have"), one the request made, or one it named before ("that product").
        """
        q = spec.query
        param = self._row_asked_of(spec, call)
        if q is None or param is None:
            return None
        value = call.args.get(param)
        many = plural(noun(self.bp.entity(q.entity)))
        mine = param not in call.refs and value == self.me_key
        said = self._asked_in_say(spec, call, calls, descs, listed=True) if mine and len(calls) == 1 else None
        if said is not None:  # an information task about the requester's rows, in the read's words: "How many artists am I following?"
            return said
        owner = self.rng.choice(("that ", "the same ")) + noun(self.bp.entity(refers_to(self.bp, spec.param(param)) or ""))
        now = " now" if any(_changes(self.specs[c.tool], q.entity) for c in calls) else ""  # after a write to such rows
        if q.op == "aggregate" and q.agg != "count":
            whose = f"my {many}" if mine else f"the {many} of {owner}"
            return _total_question(_AGG_WORD[q.agg or "sum"], field_of(self.bp, q.entity, q.field or ""), whose, now)
        return f"How many {many} do I have{now}?" if mine else f"How many {many} does {owner} have{now}?"

    def _row_asked_of(self, spec: ToolSpec, call: Call) -> str | None:
        """The parameter of the one row a search or aggregate ``call`` is about (its only filter), when the request named
        that row before, made it, or it is the requester's own; else None."""
        q = spec.query
        rows = [p for p in (*call.args, *call.refs) if refers_to(self.bp, spec.param(p)) not in (None, q.entity if q else None)]
        others = [k for k in call.args if k not in rows and k not in _NOT_ASKED]
        if q is None or len(rows) != 1 or others:
            return None
        param = rows[0]
        value = call.args.get(param)
        if param not in call.refs and (value is None or value not in self.mentioned | {self.me_key}):
            return None
        return param

    def _filters(self, spec: ToolSpec, call: Call, skip: str | None = None) -> list[str]:
        """The conditions a search or aggregate call sets (but the parameter ``skip``), each as words about the rows it keeps."""
        q = spec.query
        out = []
        filters = [flt for flt in q.filters if flt.param != skip] if q else []
        bounds: dict[str, dict[str, Any]] = {}
        for flt in filters:
            if flt.op in ("gte", "lte") and call.args.get(flt.param) is not None:
                bounds.setdefault(flt.field, {})[flt.op] = call.args[flt.param]
        done: set[str] = set()
        for flt in filters:
            v = call.args.get(flt.param)
            if v is None:
                continue
            val = param_value(spec, self.bp, flt.param, v)
            f = self.bp.entity(q.entity).field(flt.field) if q and self.bp.entity(q.entity).has(flt.field) else None
            words = field_words(f) if f is not None else human(flt.field)
            if flt.op in ("gte", "lte"):
                if flt.field in done:
                    continue
                done.add(flt.field)
                out.append(bounded(f, words, bounds[flt.field]))
                continue
            if flt.op == "contains":
                out.append(f'with "{v}" in the {words}')
            else:
                out.append(matching_phrase(f, words, v, val))
        return out


def how_many(phrase: str) -> str:
    """A say phrase that lists rows as a question of how many there are: "which labels are on {task_id}?" -> "how many
    labels are on {task_id}?", "what songs are on {playlist_id}?" -> "how many songs are ..."; other phrases unchanged."""
    return _LISTING.sub(r"how many \1", phrase, count=1)


def _kind_words(cond: str) -> str:
    """The words a condition puts before the plural noun: "trial" ("that are trial"), "business" ("where the account type
    is business"), "low-priority" ("where the priority is low")."""
    m = _STATE.match(cond)
    if m is not None:
        return m.group(1)
    m = _KIND.match(cond)
    words, value = m.group(1), m.group(2)  # type: ignore[union-attr]
    if words.rsplit(" ", 1)[-1] in _SCALES:
        return f"{'-'.join(value.split())}-{words.rsplit(' ', 1)[-1]}"
    return value


def _of_me(f: FieldDef | None, words: str) -> str | None:
    """A question about the requester's own row in their words, where "my <field>" is not: "How many personal training
    credits do I have?", "What is the date I joined?"; None for the other fields."""
    if f is not None and f.type in ("int", "quantity") and is_plural(words):
        return f"How many {words} do I have?"
    return None


_ACTIVE = {"joined": "join"}  # a participle whose row did it, not had it done: "When did I join?"
_NOT_WHEN = ("worked", "played", "reacted")  # "When was the reaction reacted?": these are asked for the date itself


def _when_question(words: str, target: str) -> str | None:
    """A date field named "date <participle>" or "time <participle>" asked as "When was <row> <participle>?" ("When was
    that product added?", "When did I join?"); None for other fields."""
    head, _, rest = words.partition(" ")
    if head not in ("date", "time") or not rest.endswith("ed") or " " in rest or rest in _NOT_WHEN:
        return None
    who = "I" if target == "my account" else target
    if rest in _ACTIVE:
        return f"When did {who} {_ACTIVE[rest]}?"
    return None if who == "I" else f"When was {target} {rest}?"


def unfiltered(spec: ToolSpec, call: Call, field: str | None) -> bool:
    """Whether asking ``field`` of ``call`` (of tool ``spec``) is a count or total over every row of its table (no
    filter, no row it is about, no group of a grouped count): a question nobody asks."""
    q = spec.query
    if q is None or q.op not in ("search", "aggregate") or (field and group_of(field)):
        return False
    return not call.refs and all(k in _NOT_ASKED or v is None for k, v in call.args.items())


def _total_question(word: str, words: str, whose: str, now: str = "") -> str:
    """ "What is the total amount of the charges ...?" (never "the total line total"; "What are the total minutes ...?")."""
    what = words if word in words.split() else f"{word} {words}"
    return f"What {verb_is(words)} the {what} of {whose}{now}?"


def joined(conds: list[str]) -> str:
    """Conditions after a plural noun: phrases first, one after another ("with ... and with ..."), then the relative
    clauses ("that are paid and where the priority is low"); the text starts with a space (empty without conditions)."""
    phrases = [c for c in conds if not c.startswith(_RELATIVE)]
    states = [c.removeprefix("that are ") for c in conds if c.startswith("that are ")]  # "that are open and active"
    clauses = ([f"that are {_and(states)}"] if states else []) + [
        c for c in conds if c.startswith(_RELATIVE) and not c.startswith("that are ")
    ]
    text = ""
    for i, c in enumerate(phrases):
        text += " and " if i and c.startswith("with ") and phrases[i - 1].startswith("with ") else " "
        text += c
    if clauses:
        text += " " + " and ".join(clauses)
    return text


def _and(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]


def _changes(spec: ToolSpec, entity: str) -> bool:
    """Whether a write tool may add, change or remove rows of ``entity``."""
    return spec.mode == "write" and (entity in spec.writes or any(ef.entity == entity for ef in spec.effects))


def matching_phrase(f: FieldDef | None, words: str, raw: Any, val: str) -> str:
    """A filter ``field == value`` said of the rows a question is about: "that are pending", "from Lumen & Co", "with a pool"."""
    if f is not None and f.say and f.say.strip() != "{value}":
        return one_of(_plural_say(f.say).replace("{value}", val))  # "for 1 unit"
    if f is not None and f.say:  # the value alone names a row ("NS926"); of many rows, say which field it is
        return f"with the {words} {val}"
    if f is not None and f.type in ("date", "datetime") and not isinstance(raw, list):
        return dated(f, words, f"on {val}")
    if f is not None and (f.type == "state" or (f.type == "enum" and (f.name.endswith("status") or val.endswith("ed")))):
        return f"that are {val}"  # "that are delayed"; other values say their field: "where the priority is low"
    if f is not None and f.type == "bool" and f.label and f.say_true is None:
        return _flag_phrase(f, f.label, bool(raw))
    if f is not None and f.type == "bool":  # "that renew automatically", never "where the auto renew is yes"
        return _plural_say(f"that {flag(f, bool(raw))}")
    return f"where the {words} {verb_is(words)} {val}"


def _flag_phrase(f: FieldDef, label: str, on: bool) -> str:
    """A labelled bool said of many rows: "with a pool" (``has_pool``), "that are not video-equipped"."""
    if f.name.startswith("has_") and not label.endswith("ed"):  # has_pool "pool": a noun, not "video-equipped"
        return f"{'with' if on else 'without'} {article(label)} {label}"
    return f"that are {'' if on else 'not '}{label}"


def _plural_say(say: str) -> str:
    """A field's ``say`` (written of one row) said of many: "who is {value}" -> "who are {value}", "that costs" -> "that cost"."""
    for one, many in (
        ("who is a ", "who are "),
        ("that is a ", "that are "),
        ("who is ", "who are "),
        ("that is ", "that are "),
        ("that does ", "that do "),
        ("that has ", "that have "),
        ("who was ", "who were "),
        ("that was ", "that were "),
        ("who has ", "who have "),
    ):
        if say.startswith(one):
            rest = say[len(one) :]
            return many + (re.sub(r"\{value\}$", "{value}s", rest) if one.endswith(" a ") else rest)
    m = re.match(r"that (\w+?)s (.*)$", say)
    if m is not None and not m.group(1).endswith("s"):
        return f"that {m.group(1)} {m.group(2)}"
    return say


def dated(f: FieldDef, words: str, when: str) -> str:
    """A date condition ``when`` ("on or after March 3, 2026") with the words of its field: the participle a person uses
    ("placed on or after ...", from the field's ``say`` "placed on {value}" or a name like ``posted_at``), else
    "with a start time on or after ..."."""
    if f.say and f.say.endswith("on {value}"):
        lead = f.say[: -len("on {value}")].strip()
        return f"{lead} {when}".strip()
    stem = human(_DATED_SUFFIX.sub("", f.name))
    if stem.split(" ")[-1].endswith("ed"):
        return f"{stem} {when}"
    head, _, rest = words.partition(" ")
    if head in ("date", "time") and rest.endswith("ed"):  # "date worked", "time sent"
        return f"{rest} {when}"
    name = words if words not in ("date", "time") else human(f.name)
    return f"with {article(name)} {name} {when}"


def bounded(f: FieldDef | None, words: str, b: dict[str, Any]) -> str:
    """A range condition ``b`` (``gte``, ``lte``) on a field: "placed between ... and ...", "with at least 8 seats"."""
    lo, hi = b.get("gte"), b.get("lte")
    if f is not None and f.type in ("date", "datetime"):
        if lo is not None and hi is not None:
            when = f"on {fmt_value(f, lo)}" if lo == hi else f"between {fmt_value(f, lo)} and {fmt_value(f, hi)}"
        else:
            when = f"on or after {fmt_value(f, lo)}" if lo is not None else f"on or before {fmt_value(f, hi)}"
        return dated(f, words, when)
    value = lambda v: quoted(f, v)  # noqa: E731
    if lo is not None and hi is not None:
        amount = f"exactly {value(lo)}" if lo == hi else f"between {value(lo)} and {value(hi)}"
    else:
        amount = f"at least {value(lo)}" if lo is not None else f"at most {value(hi)}"
    if is_plural(words):  # "with at least 8 seats", not "with a seats of at least 8"
        return f"with {amount} {words}"
    return f"with {article(words)} {words} of {amount}"
