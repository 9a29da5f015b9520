"""Answer matching: accept what a person would accept, refuse what they would refuse.

An information task's answer is compared with the expected value the way a person reading it
would. Its :class:`AnswerSpec` says what kind of value is expected (a count, an amount of money,
a date, one of an enum's values, a yes/no, a name or title, a list of those), and the matcher
reads the values of that kind out of the answer:

- numbers with or without a currency sign, thousands separators or trailing zeros, with a unit,
  or small ones written as words ("three"; "none" and "no ..." for zero); numbers inside dates,
  times, codes (``TRK8022887261``) and denominators ("out of 5") are not values;
- dates as ``2026-03-05``, "March 5, 2026", "5 Mar 2026", "03/05/2026" (month first, the apps'
  US locale, unless only day first is a date), with a time for a datetime;
- an enum value with spaces, hyphens or underscores, in any case, or in the blueprint's words;
- yes/no in a sentence ("Yes, it is."), or the field's own phrases;
- a text value as a whole phrase of the answer.

A value is *negated* when a negation ("not", "isn't", "never", "rather than") stands before it in
its clause. The answer matches when the expected value is stated and not negated, and no other
value of its kind is stated beside it: "either 3 or 4", "3, or maybe 4", "not archived" and a
list of candidates ("1, 2, 3, 4") are refused. Values the request itself states (an amount in
"orders over $50", "my open account") may be echoed without counting as other values. A list is
matched as a set: every item stated, none missing or extra, in any order.

Every verdict says what was read out of the answer and why it matched or not.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal

AnswerKind = Literal["count", "int", "number", "money", "date", "datetime", "enum", "bool", "text", "list", "dict"]
NUMBER_KINDS = ("count", "int", "number", "money")
TOLERANCE = 0.005


@dataclass(frozen=True)
class AnswerSpec:
    """What the grader knows about an expected answer besides its value.

    Attributes:
        kind: the answer's type (``count`` for a count of rows, ``money``, ``date``, ``enum``...).
        choices: an enum or state field's values (the other values an answer may name).
        labels: value -> other words people use for it (the blueprint's language: labels, say_true/say_false).
        pool: other values of the same field in the task's state (what an answer listing candidates names).
        unit: the unit of a number ("hours", "seconds"), when the field says one.
        day_first: slashed dates read day first (None: the app's locale, month first, unless only day first fits).
        request: the user's request (numbers and words an answer may echo from it).
        item: the spec of each item of a list answer.
    """

    kind: AnswerKind = "text"
    choices: tuple[str, ...] = ()
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    pool: tuple[Any, ...] = ()
    unit: str | None = None
    day_first: bool | None = None
    request: str = ""
    item: AnswerSpec | None = None


@dataclass(frozen=True)
class AnswerVerdict:
    """The verdict on one answer: whether it matched, what was read out of it, and why."""

    matched: bool
    extracted: tuple[Any, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"matched": self.matched, "extracted": [_plain(v) for v in self.extracted], "reason": self.reason}


def _plain(v: Any) -> Any:
    return v if v is None or isinstance(v, str | int | float | bool) else str(v)


# -- reading text ----------------------------------------------------------------------------

_QUOTES = str.maketrans(
    {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2212": "-", "\u2013": "-", "\u2014": " - ", "\u00a0": " "}
)
_NEG = re.compile(
    r"\b(?:not|never|no longer|isn't|aren't|wasn't|weren't|doesn't|don't|didn't|hasn't|haven't|hadn't|won't|can't|cannot|"
    r"isnt|arent|wasnt|doesnt|dont|didnt|rather than|instead of|neither|nor|nothing like)\b|n't\b"
)
_CLAUSE = re.compile(r"[.;!?]\s|[.;!?]$|,|\bbut\b|\bhowever\b|\bwhile\b|\bthough\b|\bthen\b|\n")
_NEG_WINDOW = 40  # characters before a value that a negation reaches (within its clause)
_HEDGE = re.compile(
    r"\beither\b|\bor maybe\b|\bor perhaps\b|\bor possibly\b|\bnot sure\b|\bunsure\b|\bno idea\b|\bi don't know\b|\bdon't know\b"
)


def _text(answer: Any) -> str:
    return " ".join(str(answer).translate(_QUOTES).split()).lower()


def _negated(text: str, start: int) -> bool:
    """Whether a negation stands before ``text[start:]`` in its clause, within a few words."""
    lo = max(0, start - _NEG_WINDOW)
    before = text[lo:start]
    cut = None
    for m in _CLAUSE.finditer(before):
        cut = m.end()
    if cut is not None:
        before = before[cut:]
    return _NEG.search(before) is not None


@dataclass(frozen=True)
class _Mention:
    value: Any
    start: int
    end: int
    negated: bool
    money: bool = False
    percent: bool = False


# -- numbers ---------------------------------------------------------------------------------

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORD_NUM = re.compile(
    r"(?<![\w-])(?:("
    + "|".join(_TENS)
    + r")(?:[- ]("
    + "|".join(k for k in _UNITS if _UNITS[k] and _UNITS[k] < 10)
    + r"))?|("
    + "|".join(_UNITS)
    + r")|(a dozen|a single|a couple of|once|twice|a hundred|one hundred))(?![\w-])"
)
_WORD_EXTRA = {"a dozen": 12, "a single": 1, "once": 1, "twice": 2, "a hundred": 100, "one hundred": 100, "a couple of": 2}
_ZERO = re.compile(
    r"(?<![\w-])(?:none|nobody|nothing|no(?= (?!longer\b|more\b|less\b|later\b|earlier\b|sooner\b|than\b)[a-z])|"
    r"(?:not|never) (?:have |has |had |hold |find |see |show )?(?:any|a single)(?![\w-]))"
    r"|n't (?:have |has |had |hold |find |see |show )?(?:any|a single)(?![\w-])"
)
_NUMBER = re.compile(
    r"(?<![\w.#/\\-])(?P<sign>[-+])?(?P<cur>\$|usd ?|us\$|€|£)?\s?(?P<sign2>-)?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\w]|\.\d|,\d{3}|/\d)"
    r"(?P<suffix> ?(?:%|percent\b|usd\b|dollars?\b|bucks\b|eur\b|euros?\b))?"
)
_CONTEXT_NUM = re.compile(r"\bout of \$?\d[\d,]*(?:\.\d+)?|\b(?:of|among) (?:the |your |my |all |all the |all your )\d[\d,]*\b")
_TIME = re.compile(r"(?<![\w:])\d{1,2}(?::\d{2}){1,2}(?: ?[ap]\.?m\.?)?(?![\w:])|(?<![\w:])\d{1,2} ?[ap]\.?m\.?(?![\w])")


_MAYBE_DATE = re.compile(r"\d[-/.]\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")
_AMPM = re.compile(r"\d ?[ap]\.?m\b")


def _word_numbers(text: str) -> list[_Mention]:
    out = []
    for m in _WORD_NUM.finditer(text):
        tens, unit, small, extra = m.groups()
        if small == "one" and _one_not_a_number(text, m.start(), m.end()):
            continue
        value = _TENS[tens] + (_UNITS[unit] if unit else 0) if tens else _UNITS[small] if small else _WORD_EXTRA[extra]
        out.append(_Mention(value, m.start(), m.end(), _negated(text, m.start())))
    for m in _ZERO.finditer(text):
        out.append(_Mention(0, m.start(), m.end(), False))  # "none", "no orders": the zero is itself the negation
    return out


def _one_not_a_number(text: str, start: int, end: int) -> bool:
    """'one' as a pronoun: "the one", "which one", "one of", "no one", "one more thing"."""
    before, after = text[max(0, start - 7) : start], text[end : end + 7]
    return bool(re.search(r"\b(?:the|this|that|which|any|no|each|every|another|a) $", before) or re.match(r" (?:of|more|another)\b", after))


def _masked(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _numbers(text: str, spec: AnswerSpec) -> list[_Mention]:
    """The numbers an answer states (dates, times, codes and denominators masked out first)."""
    plain = text
    if _MAYBE_DATE.search(text):
        plain = _masked(plain, _DATE_ANY)
    if ":" in text or _AMPM.search(text):
        plain = _masked(plain, _TIME)
    if "of " in text:
        plain = _masked(plain, _CONTEXT_NUM)
    out = []
    for m in _NUMBER.finditer(plain):
        raw = m.group("int").replace(",", "") + (m.group("frac") or "")
        try:
            value: float = float(raw)
        except ValueError:
            continue
        if m.group("sign") == "-" or m.group("sign2"):
            value = -value
        suffix = (m.group("suffix") or "").strip()
        money = bool(m.group("cur")) or suffix.startswith(("usd", "dollar", "buck", "eur", "euro"))
        out.append(_Mention(value, m.start(), m.end(), _negated(text, m.start()), money, suffix in ("%", "percent")))
    if spec.kind in ("count", "int"):
        out += _word_numbers(plain)
    return sorted(out, key=lambda x: x.start)


def _same_number(expected: float, m: _Mention, kind: str) -> bool:
    if abs(m.value - expected) <= TOLERANCE + 1e-9:
        return True
    return m.percent and abs(expected) <= 1.5 and abs(m.value / 100 - expected) <= TOLERANCE / 100 + 1e-12


def _number_candidates(mentions: list[_Mention], kind: str) -> list[_Mention]:
    """The mentions that can be the answer: amounts for money (when any is marked as one), never amounts for counts."""
    if kind == "money" and any(m.money for m in mentions):
        return [m for m in mentions if m.money]
    if kind in ("count", "int"):
        return [m for m in mentions if not m.money and not m.percent]
    return mentions


def _fmt_num(v: float) -> Any:
    return int(v) if float(v).is_integer() and abs(v) < 1e15 else round(v, 6)


@lru_cache(maxsize=4096)
def _echoed_numbers(request: str, kind: AnswerKind) -> frozenset[Any]:
    """The numbers a request states (an answer may repeat them), per request and kind."""
    return frozenset(_fmt_num(m.value) for m in _number_candidates(_numbers(_text(request), AnswerSpec(kind)), kind))


def _match_number(expected: float, text: str, spec: AnswerSpec) -> AnswerVerdict:
    found = _number_candidates(_numbers(text, spec), spec.kind)
    echoed = _echoed_numbers(spec.request, spec.kind) if spec.request else frozenset()
    hits = [m for m in found if _same_number(expected, m, spec.kind)]
    others = [m for m in found if not _same_number(expected, m, spec.kind) and not m.negated and _fmt_num(m.value) not in echoed]
    shown = tuple(dict.fromkeys(_fmt_num(m.value) for m in found if not m.negated))
    want = _fmt_num(expected)
    if not hits:
        if not found:
            return AnswerVerdict(False, (), f"no number in the answer; expected {want}")
        return AnswerVerdict(False, shown, f"the answer states {_listed(shown)}, not {want}")
    if all(m.negated for m in hits):
        return AnswerVerdict(False, shown, f"the answer says it is not {want}")
    if others:
        return AnswerVerdict(False, shown, f"the answer states {_listed(shown)}: more than one value, so it does not commit to {want}")
    return AnswerVerdict(True, (want,), f"the answer states {want}, as expected")


def _listed(values: tuple[Any, ...]) -> str:
    shown = [str(v) for v in values]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1] if shown else "nothing"


# -- dates -----------------------------------------------------------------------------------

_MONTHS = {
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MON = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_TIME_PART = r"(?:(?:,| at| @)?\s*(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::\d{2})?\s*(?P<ap>[ap]\.?m\.?)?(?![\w:]))?"
_DATE_FORMS = [
    re.compile(r"(?<![\w-])(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?:[t ](?P<h>\d{2}):(?P<mi>\d{2})(?::\d{2})?)?(?![\w-])"),
    re.compile(_MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s*(?P<y>\d{4}))?(?![\w])" + _TIME_PART),
    re.compile(r"(?<![\w])(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON + r"(?:,?\s*(?P<y>\d{4}))?(?![\w])" + _TIME_PART),
    re.compile(r"(?<![\w/.-])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})(?![\w/-])" + _TIME_PART),
]


def _rebuild_date_any() -> re.Pattern[str]:
    """One pattern matching any date form (named groups dropped), to mask dates out of numbers."""
    parts = [re.sub(r"\(\?P<\w+>", "(?:", p.pattern) for p in _DATE_FORMS]
    return re.compile("|".join(f"(?:{p})" for p in parts))


_DATE_ANY = _rebuild_date_any()


def _dates(text: str, spec: AnswerSpec, year: int) -> list[_Mention]:
    """(date, time or None) mentions of an answer; a date without a year takes ``year``."""
    out: list[_Mention] = []
    taken: list[tuple[int, int]] = []
    for i, form in enumerate(_DATE_FORMS):
        for m in form.finditer(text):
            if any(s < m.end() and m.start() < e for s, e in taken):
                continue
            g = m.groupdict()
            try:
                day = _date_of(i, g, spec, year)
            except ValueError:
                continue
            if day is None:
                continue
            taken.append((m.start(), m.end()))
            out.append(_Mention((day, _time_of(g)), m.start(), m.end(), _negated(text, m.start())))
    return sorted(out, key=lambda x: x.start)


def _date_of(form: int, g: dict[str, Any], spec: AnswerSpec, year: int) -> dt.date | None:
    y = int(g["y"]) if g.get("y") else year
    if y < 100:
        y += 2000
    if form == 0:
        return dt.date(y, int(g["m"]), int(g["d"]))
    if form in (1, 2):
        return dt.date(y, _MONTHS[g["mon"][:4] if g["mon"][:4] == "sept" else g["mon"][:3]], int(g["d"]))
    a, b = int(g["a"]), int(g["b"])
    if spec.day_first is True or (spec.day_first is None and a > 12 >= b):
        return dt.date(y, b, a)
    return dt.date(y, a, b)


def _time_of(g: dict[str, Any]) -> tuple[int, int] | None:
    if not g.get("h"):
        return None
    h, mi = int(g["h"]), int(g.get("mi") or 0)
    ap = (g.get("ap") or "").replace(".", "")
    if not ap and g.get("mi") is None:
        return None  # a bare number after a date is no time
    if ap == "pm" and h < 12:
        h += 12
    elif ap == "am" and h == 12:
        h = 0
    return (h, mi) if h < 24 and mi < 60 else None


def _parse_expected_date(expected: Any) -> tuple[dt.date, tuple[int, int] | None] | None:
    s = str(expected).strip()
    try:
        if len(s) == 10:
            return dt.date.fromisoformat(s), None
        t = dt.datetime.fromisoformat(s)
        return t.date(), (t.hour, t.minute)
    except ValueError:
        return None


def _fmt_date(v: tuple[dt.date, tuple[int, int] | None]) -> str:
    day, time = v
    return day.isoformat() + (f" {time[0]:02d}:{time[1]:02d}" if time else "")


@lru_cache(maxsize=4096)
def _echoed_dates(request: str, day_first: bool | None, year: int) -> frozenset[dt.date]:
    return frozenset(m.value[0] for m in _dates(_text(request), AnswerSpec("date", day_first=day_first), year))


def _match_date(expected: Any, text: str, spec: AnswerSpec) -> AnswerVerdict:
    want = _parse_expected_date(expected)
    if want is None:
        return _match_text(str(expected), text, spec)
    day, time = want
    timed = spec.kind == "datetime" and time is not None

    def same(m: _Mention) -> bool:
        d, t = m.value
        return d == day and (not timed or t is None or t == time)

    found = _dates(text, spec, day.year)
    echoed = _echoed_dates(spec.request, spec.day_first, day.year) if spec.request else frozenset()
    hits = [m for m in found if same(m)]
    others = [m for m in found if not same(m) and not m.negated and m.value[0] not in echoed]
    shown = tuple(dict.fromkeys(_fmt_date(m.value) for m in found if not m.negated))
    wanted = _fmt_date((day, time if timed else None))
    if not hits:
        if not found:
            return AnswerVerdict(False, (), f"no date in the answer; expected {wanted}")
        return AnswerVerdict(False, shown, f"the answer gives {_listed(shown)}, not {wanted}")
    if all(m.negated for m in hits):
        return AnswerVerdict(False, shown, f"the answer says it is not {wanted}")
    if others:
        return AnswerVerdict(False, shown, f"the answer gives {_listed(shown)}: more than one date, so it does not commit to {wanted}")
    return AnswerVerdict(True, (wanted,), f"the answer gives {wanted}, as expected")


# -- words: enum values, text, yes/no ---------------------------------------------------------

_SPELLINGS = (("cancelled", "canceled"), ("colour", "color"), ("grey", "gray"))


def _forms(value: str, labels: tuple[str, ...] = ()) -> set[str]:
    """The ways a person writes an enum value: spaces, hyphens or underscores, any case; and its labels."""
    base = " ".join(re.split(r"[_\-\s]+", str(value).lower().strip()))
    out = {base, base.replace(" ", "-"), base.replace(" ", "_"), *(" ".join(_text(lb).split()) for lb in labels)}
    if " " in base and len(base.replace(" ", "")) > 4:
        out.add(base.replace(" ", ""))
    for a, b in _SPELLINGS:
        out |= {f.replace(a, b) for f in out} | {f.replace(b, a) for f in out}
    return {f for f in out if f}


_FORM_CACHE: dict[tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], tuple[re.Pattern[str], dict[str, str]]] = {}


def _choice_pattern(choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> tuple[re.Pattern[str], dict[str, str]]:
    key = (choices, tuple(sorted((k, v) for k, v in labels.items())))
    hit = _FORM_CACHE.get(key)
    if hit is None:
        owner: dict[str, str] = {}
        for c in choices:
            for f in _forms(c, labels.get(c, ())):
                owner.setdefault(f, c)
        alts = sorted(owner, key=len, reverse=True)
        pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(a) for a in alts) + r")(?![\w-])") if alts else re.compile(r"(?!x)x")
        if len(_FORM_CACHE) > 2048:
            _FORM_CACHE.clear()
        hit = _FORM_CACHE[key] = (pattern, owner)
    return hit


def _choice_mentions(text: str, choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> list[_Mention]:
    pattern, owner = _choice_pattern(choices, labels)
    return [_Mention(owner[m.group(1)], m.start(), m.end(), _negated(text, m.start())) for m in pattern.finditer(text)]


_ECHO_CHOICES: dict[tuple[str, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], frozenset[str]] = {}


def _echoed_choices(request: str, choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> frozenset[str]:
    key = (request, choices, tuple(sorted(labels.items())) if labels else ())
    hit = _ECHO_CHOICES.get(key)
    if hit is None:
        if len(_ECHO_CHOICES) > 4096:
            _ECHO_CHOICES.clear()
        hit = _ECHO_CHOICES[key] = frozenset(m.value for m in _choice_mentions(_text(request), choices, labels))
    return hit


def _match_enum(expected: Any, text: str, spec: AnswerSpec) -> AnswerVerdict:
    choices = tuple(dict.fromkeys([str(expected), *spec.choices]))
    exp = str(expected)
    found = _choice_mentions(text, choices, spec.labels)
    echoed = _echoed_choices(spec.request, choices, spec.labels) if spec.request else frozenset()
    hits = [m for m in found if m.value == exp]
    others = [m for m in found if m.value != exp and not m.negated and m.value not in echoed]
    shown = tuple(dict.fromkeys(m.value for m in found if not m.negated))
    if not hits:
        if not found:
            return AnswerVerdict(False, (), f"the answer names no value of the field; expected {exp!r}")
        return AnswerVerdict(False, shown, f"the answer names {_listed(shown)}, not {exp!r}")
    if all(m.negated for m in hits):
        return AnswerVerdict(False, shown, f"the answer says it is not {exp!r}")
    if others:
        return AnswerVerdict(False, shown, f"the answer names {_listed(shown)}: more than one value, so it does not commit to {exp!r}")
    if _HEDGE.search(text):
        return AnswerVerdict(False, shown, f"the answer hedges ({_HEDGE.search(text).group(0)!r}) instead of stating {exp!r}")  # type: ignore[union-attr]
    return AnswerVerdict(True, (exp,), f"the answer names {exp!r}, as expected")


def _words(s: str) -> str:
    """Text as plain lower-case words: punctuation and quotes as spaces (a name, a title, a code)."""
    return " ".join(re.sub(r"[^\w@.+#$%&/-]+|(?<!\w)[.\-/]|[.\-/](?!\w)", " ", _text(s)).split())


def _phrase_spans(phrase: str, text: str) -> list[tuple[int, int]]:
    if not phrase:
        return []
    pattern = re.compile(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])")
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def _match_text(expected: str, text: str, spec: AnswerSpec) -> AnswerVerdict:
    want, said = _words(expected), _words(text)
    if not want:
        return AnswerVerdict(not said, (said,) if said else (), "the expected value is empty")
    spans = _phrase_spans(want, said)
    if not spans:
        return AnswerVerdict(False, (_cut(text),), f"the answer does not contain {expected!r}")
    if all(_negated(said, s) for s, _ in spans):
        return AnswerVerdict(False, (expected,), f"the answer says it is not {expected!r}")
    request = _words(spec.request) if spec.request else ""
    others = []
    for other in spec.pool:
        o = _words(str(other))
        if not o or o == want or o in want or (request and _phrase_spans(o, request)):
            continue
        for s, e in _phrase_spans(o, said):
            if not any(s < e2 and s2 < e for s2, e2 in spans) and not _negated(said, s):
                others.append(str(other))
                break
    if others:
        names = tuple(dict.fromkeys([expected, *others]))
        return AnswerVerdict(False, names, f"the answer names {_listed(names)}: more than one value, so it does not commit to {expected!r}")
    hedge = _HEDGE.search(text) or _alternative(said, spans)
    if hedge:
        return AnswerVerdict(False, (expected,), f"the answer hedges ({hedge.group(0).strip()!r}) instead of stating {expected!r}")
    return AnswerVerdict(True, (expected,), f"the answer contains {expected!r}, as expected")


def _alternative(said: str, spans: list[tuple[int, int]]) -> re.Match[str] | None:
    """An " or " right beside the expected phrase ("X or Y", "Y or X"): the answer offers alternatives."""
    for s, e in spans:
        m = re.match(r" or (?:maybe |perhaps |possibly )?\w", said[e:]) or re.search(r"\w or $", said[max(0, s - 40) : s])
        if m:
            return m
    return None


_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|correct|true|affirmative|indeed|that's right|that is right|right|sure|it is|it does|they do|they are)\b"
)
_NO = re.compile(r"^(?:no|nope|nah|false|negative|incorrect|not)\b")


def _match_bool(expected: bool, text: str, spec: AnswerSpec) -> AnswerVerdict:
    said = text.strip(" \"'`.,;:!?()[]")
    yes, no = _YES.search(said), _NO.search(said)
    both = re.search(r"\b(?:yes|yeah)\b.*\b(?:no|nope)\b|\b(?:no|nope)\b.*\b(?:yes|yeah)\b", said)
    if both and not _NEG.search(said[: both.start()] or " "):
        return AnswerVerdict(False, (), "the answer says both yes and no")
    if yes or no:
        value = bool(yes) and not no
        if yes and _NEG.search(said[yes.end() :]) and not _labels_say(spec, said, True):
            return AnswerVerdict(False, (), "the answer says yes and then negates it")
    else:
        value = _labels_say(spec, said, True) or not (_NEG.search(said) or _ZERO.search(said) or _labels_say(spec, said, False))
    word = "yes" if value else "no"
    if value == expected:
        return AnswerVerdict(True, (value,), f"the answer says {word}, as expected")
    return AnswerVerdict(False, (value,), f"the answer says {word}; expected {'yes' if expected else 'no'}")


def _labels_say(spec: AnswerSpec, said: str, on: bool) -> bool:
    """Whether ``said`` holds the field's own phrase for true (``on``) or false."""
    key = "true" if on else "false"
    return any(_phrase_spans(_text(p), said) for p in spec.labels.get(key, ()))


# -- lists and dicts -------------------------------------------------------------------------

_SPLIT = re.compile(r"\s*(?:[;\n]|,(?!\d{3}(?!\d))|\band\b|\bplus\b|&)\s*")
_EDGE = "\"'`.,;:!?()[]{}<> \t\n"


def _parsed(v: Any) -> Any:
    """A string holding a JSON list or object as that value; anything else as it is."""
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return json.loads(v)
        except (ValueError, RecursionError):
            return v
    return v


def _match_list(expected: list[Any], answer: Any, spec: AnswerSpec) -> AnswerVerdict:
    item = spec.item or spec_for(expected[0] if expected else "")
    item = replace(item, request=spec.request, pool=spec.pool or item.pool)
    if isinstance(answer, str):
        found = _list_by_mentions(expected, answer, item)
        if found is not None:
            return found
        parts = [p for p in _SPLIT.split(answer.strip().strip(_EDGE)) if p.strip(_EDGE)]
    else:
        parts = list(answer) if isinstance(answer, list | tuple | set) else [answer]
    left = list(range(len(parts)))
    missing = []
    for e in expected:
        hit = next((j for j in left if match_answer(e, parts[j], replace(item, pool=())).matched), None)
        if hit is None:
            missing.append(e)
        else:
            left.remove(hit)
    extra = [
        parts[j] for j in left if not any(match_answer(e, parts[j], replace(item, pool=())).matched for e in expected)
    ]  # a repeat is no extra
    shown = tuple(str(p) for p in parts)
    if missing or extra:
        why = "; ".join(
            x
            for x in (
                f"missing {_listed(tuple(map(str, missing)))}" if missing else "",
                f"extra {_listed(tuple(map(str, extra)))}" if extra else "",
            )
            if x
        )
        return AnswerVerdict(False, shown, f"the list does not match: {why}")
    return AnswerVerdict(True, shown, f"the list holds all {len(expected)} expected items and no other")


def _list_by_mentions(expected: list[Any], answer: str, item: AnswerSpec) -> AnswerVerdict | None:
    """A list of enum values or of text values with a known pool, read as the values named in the answer; None to split it."""
    text = _text(answer)
    if item.kind == "enum":
        names = [
            m.value
            for m in _choice_mentions(text, tuple(dict.fromkeys([*map(str, expected), *item.choices])), item.labels)
            if not m.negated
        ]
    elif item.kind == "text" and item.pool:
        said = _words(answer)
        names = [
            str(v)
            for v in dict.fromkeys([*expected, *item.pool])
            if any(not _negated(said, s) for s, _ in _phrase_spans(_words(str(v)), said))
        ]
    else:
        return None
    got, want = set(names), {str(e) for e in expected}
    shown = tuple(dict.fromkeys(names))
    if got == want:
        return AnswerVerdict(True, shown, f"the answer names all {len(want)} expected items and no other")
    why = [
        f"missing {_listed(tuple(sorted(want - got)))}" if want - got else "",
        f"extra {_listed(tuple(sorted(got - want)))}" if got - want else "",
    ]
    return AnswerVerdict(False, shown, "the list does not match: " + "; ".join(x for x in why if x))


def _match_dict(expected: dict[Any, Any], answer: Any, spec: AnswerSpec) -> AnswerVerdict:
    if not isinstance(answer, dict):
        return AnswerVerdict(False, (_cut(str(answer)),), "expected an object of values, key by key")
    e, a = ({_words(str(k)): v for k, v in d.items()} for d in (expected, answer))
    if e.keys() != a.keys():
        return AnswerVerdict(False, tuple(a), f"the keys differ: expected {sorted(e)}, got {sorted(a)}")
    bad = [k for k in e if not match_answer(e[k], a[k]).matched]
    if bad:
        return AnswerVerdict(False, tuple(a), f"the values of {_listed(tuple(bad))} do not match")
    return AnswerVerdict(True, tuple(a), "every key's value matches")


# -- the entry points ------------------------------------------------------------------------


def _cut(text: str, size: int = 200) -> str:
    return text if len(text) <= size else f"{text[: size // 2]}...{text[-size // 2 :]}"


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NUMERIC = re.compile(r"^[-+]?(?:[$€£]|usd)?\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*(?:usd|%)?$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?$")


def spec_for(expected: Any) -> AnswerSpec:
    """A spec from the expected value alone (no app at hand): its Python type, an ISO date's shape."""
    if isinstance(expected, bool):
        return AnswerSpec("bool")
    if isinstance(expected, int):
        return AnswerSpec("int")
    if isinstance(expected, float):
        return AnswerSpec("number")
    if isinstance(expected, list | tuple | set):
        return AnswerSpec("list", item=spec_for(next(iter(expected))) if expected else None)
    if isinstance(expected, dict):
        return AnswerSpec("dict")
    s = str(expected)
    if _NUMERIC.match(s.strip().lower()):
        return AnswerSpec("money" if re.search(r"[$€£]|usd", s.lower()) else "number")
    if _ISO_DATE.match(s):
        return AnswerSpec("date")
    if _ISO_DATETIME.match(s):
        return AnswerSpec("datetime")
    return AnswerSpec("text")


def _number_text(s: str) -> float:
    """A number written as text ('$1,234.50', '-3', '12%') as a float."""
    t = re.sub(r"[$€£,%\s]|usd", "", s.strip().lower())
    sign = -1.0 if t.count("-") % 2 else 1.0
    return sign * float(t.replace("-", "").replace("+", ""))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _empty(answer: Any) -> bool:
    return (
        answer is None
        or (isinstance(answer, str) and not answer.strip(_EDGE))
        or (isinstance(answer, list | tuple | dict | set) and not answer)
    )


def match_answer(expected: Any, answer: Any, spec: AnswerSpec | None = None) -> AnswerVerdict:
    """Whether ``answer`` (the agent's text or value) gives ``expected``, with what was extracted and why.

    Deterministic and total: any answer (of any type, size or nesting) gets a verdict, never an
    exception. See the module docstring for what is accepted and refused.
    """
    if type(answer) is type(expected) and type(expected) in (int, float, str) and answer == expected and answer != "":
        return AnswerVerdict(True, (expected,), "the answer is the expected value")  # the oracle's (admission grades many)
    try:
        return _match(expected, answer, spec or spec_for(expected))
    except RecursionError:
        return AnswerVerdict(False, (), "the answer is nested too deeply to read")


def _match(expected: Any, answer: Any, spec: AnswerSpec) -> AnswerVerdict:
    expected, answer = _parsed(expected), _parsed(answer)
    if _empty(answer):
        return AnswerVerdict(False, (), "no answer was given")
    if isinstance(expected, dict):
        return _match_dict(expected, answer, spec)
    if isinstance(expected, list | tuple | set):
        return _match_list(list(expected), answer, spec if spec.kind == "list" else AnswerSpec("list", item=spec, request=spec.request))
    if isinstance(answer, list | tuple) and len(answer) == 1:
        answer = answer[0]
    if isinstance(answer, dict | list | tuple | set):
        return AnswerVerdict(False, (_cut(str(answer)),), "expected one value, got a collection")
    if isinstance(expected, str) and spec.kind in NUMBER_KINDS and _NUMERIC.match(expected.strip().lower()):
        expected = _number_text(expected)
    if isinstance(expected, bool) or spec.kind == "bool":
        if isinstance(answer, bool):
            return AnswerVerdict(answer == bool(expected), (answer,), "the answer is " + ("yes" if answer else "no"))
        return _match_bool(bool(expected), _text(answer)[:2000], spec)
    if _is_number(expected):
        return _scalar_number(float(expected), answer, spec)
    if spec.kind in ("date", "datetime"):
        return _match_date(expected, _text(answer)[:4000], spec)
    if spec.kind == "enum":
        if _words(str(answer)) in _forms(str(expected), spec.labels.get(str(expected), ())):
            return AnswerVerdict(True, (str(expected),), f"the answer is {expected!r}")
        return _match_enum(expected, _text(answer)[:4000], spec)
    if isinstance(answer, bool):
        return AnswerVerdict(False, (answer,), f"expected {expected!r}, got {'yes' if answer else 'no'}")
    if _words(str(answer)) == _words(str(expected)):
        return AnswerVerdict(True, (str(expected),), f"the answer is {expected!r}")
    return _match_text(str(expected), str(answer)[:4000], spec)


def _scalar_number(expected: float, answer: Any, spec: AnswerSpec) -> AnswerVerdict:
    if spec.kind not in NUMBER_KINDS:
        spec = replace(spec, kind="int" if float(expected).is_integer() else "number")
    if isinstance(answer, bool):
        return AnswerVerdict(False, (answer,), f"expected the number {_fmt_num(expected)}, got {'yes' if answer else 'no'}")
    if _is_number(answer):
        try:
            value = float(answer)
        except OverflowError:
            value = math.inf
        same = abs(value - expected) <= TOLERANCE + 1e-9
        return AnswerVerdict(
            same,
            (_fmt_num(value) if math.isfinite(value) else str(answer)[:40],),
            "the answer is the number "
            + ("expected" if same else f"{_fmt_num(value) if math.isfinite(value) else 'given'}, not {_fmt_num(expected)}"),
        )
    return _match_number(expected, _text(answer)[:4000], spec)


def mentions(expected: Any, text: str, spec: AnswerSpec | None = None) -> bool:
    """Whether ``text`` (a message, not an answer) states ``expected`` positively, whatever else it says.

    Used where a message may carry other values beside the answer: the agent's words to the user
    (the communication part) and the simulated user's words (a leak of what they do not know).
    """
    if _empty(text) or expected is None:
        return False
    spec = spec or spec_for(expected)
    lone = replace(spec, pool=(), request="")
    t = _text(text)[:8000]
    try:
        if isinstance(expected, list | tuple | set):
            return all(mentions(e, text, spec.item or spec_for(e)) for e in expected)
        if isinstance(expected, bool) or spec.kind == "bool":
            return _match_bool(bool(expected), t, lone).matched
        if _is_number(expected):
            s = lone if lone.kind in NUMBER_KINDS else replace(lone, kind="number")
            return any(_same_number(float(expected), m, s.kind) and not m.negated for m in _number_candidates(_numbers(t, s), s.kind))
        if spec.kind in ("date", "datetime"):
            want = _parse_expected_date(expected)
            if want is not None:
                return any(m.value[0] == want[0] and not m.negated for m in _dates(t, lone, want[0].year))
        if spec.kind == "enum":
            choices = tuple(dict.fromkeys([str(expected), *spec.choices]))
            return any(m.value == str(expected) and not m.negated for m in _choice_mentions(t, choices, spec.labels))
        said = _words(text)
        return any(not _negated(said, s) for s, _ in _phrase_spans(_words(str(expected)), said))
    except RecursionError:
        return False
