"""Answer matching: accept what a person would accept, refuse what they would refuse.

An information task's answer is compared with the expected value the way a person reading it
would. Its :class:`AnswerSpec` says what kind of value is expected (a count, an amount of money,
a date, one of an enum's values, a yes/no, a name or title, a list of those), and the matcher
reads the values of that kind out of the answer:

- numbers with or without a currency sign, thousands separators or trailing zeros, with a unit,
  or written as words ("three", "forty-two"; for a count also "none" and "no ..." for zero);
  numbers inside dates, times, codes (``TRK8022887261``) and denominators ("out of 5") are not values;
- dates as ``2026-03-05``, ``2026.03.05``, "March 5, 2026", "5 Mar 2026", "5-Mar-2026", "03/05/2026"
  or "03-05-2026" (month first, the apps' US locale, unless only day first is a date), with a
  time for a datetime;
- an enum value with spaces, hyphens or underscores, in any case, or in the blueprint's words;
  the last part of a path ("New York" for ``America/New_York``), "&" for "and", a time window's
  hours as people write them ("8:00 to 12:00");
- yes/no in a sentence ("Yes, it is.", "It is not."), or the field's own phrases;
- a text value as a whole phrase of the answer (not as part of a longer value of its field:
  "Lunar Harbor" is not stated by "Lunar Harbor Live");
- a lone value under one key of an object (``{"total": 3}``).

A value is *negated* when a negation ("not", "isn't", "never", "rather than") stands before it in
its clause, or it is said to be wrong right after it ("3 is not right"). The answer matches when
the expected value is stated and not negated, no other value of its kind is stated beside it, and
it does not hedge: "either 3 or 4", "3, or maybe 4", "3 or 4", "3-4", "not archived" and a list of
candidates ("1, 2, 3, 4") are refused, as are a yes/no answer's "maybe" and "it depends". Values
the request itself states (an amount in "orders over $50", "my open account") may be echoed
without counting as other values, but not offered as alternatives ("2 or 3"). A code that is also
a short word ("US", "AS") counts as a value only where it is written as a code, in a mixed-case
answer ("let us know" names no country). A list is matched as a set: every item stated, none
missing or extra, in any order, none hedged.

Every verdict says what was read out of the answer and why it matched or not.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Literal, NamedTuple

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
_CLAUSE = re.compile(r"[.;:!?][\"')\]]*(?:\s|$)|,|\bbut\b|\bhowever\b|\bwhile\b|\bthough\b|\bthen\b|\n")
_NEG_WINDOW = 40  # characters before a value that a negation reaches (within its clause)
_HEDGE = re.compile(
    r"\beither\b|\bmaybe\b|\bperhaps\b|\bpossibly\b|\bprobably\b|\bnot sure\b|\bunsure\b|\bno idea\b|\bdon't know\b"
    r"|\bno wait\b|\bwait,? no\b|\bscratch that\b|\bcorrection\b|\bi meant\b"
)
_OR_AFTER = re.compile(r",? or\b")
_OR_BEFORE = re.compile(r"\bor,? $")


def _alternative(text: str, spans: list[tuple[int, int]]) -> re.Match[str] | None:
    """A hedge word (not one of the value's own words: "Maybe Tomorrow"), or an "or" right beside a stated value
    ("3 or 4", "on hold or active"): the answer offers alternatives."""
    for hedge in _HEDGE.finditer(text):
        if not any(s <= hedge.start() and hedge.end() <= e for s, e in spans):
            return hedge
    for s, e in spans:
        m = _OR_AFTER.match(text, e) or _OR_BEFORE.search(text, max(0, s - 6), s)
        if m:
            return m
    return None


def _text(answer: Any) -> str:
    return " ".join(str(answer).translate(_QUOTES).split()).lower()


_NEG_AFTER = re.compile(
    r" (?:is|was|would be|seems) (?:not (?:right|correct|accurate|true|it|the answer)|wrong|incorrect)\b"
    r"| (?:isn't|wasn't) (?:right|correct|accurate|true|it|the answer)\b"
)


def _negated(text: str, start: int, end: int | None = None) -> bool:
    """Whether a negation stands before ``text[start:]`` in its clause, within a few words, or the value at
    ``start:end`` is said to be wrong right after it ("3 is not right")."""
    if end is not None and _NEG_AFTER.match(text, end):
        return True
    before = text[max(0, start - _NEG_WINDOW) : start]
    negations = list(_NEG.finditer(before))  # the last one is the one that may reach the value
    return bool(negations) and _CLAUSE.search(before, negations[-1].end()) is None  # no clause ends between it and the value


class _Mention(NamedTuple):
    value: Any
    start: int
    end: int
    negated: bool
    money: bool = False
    percent: bool = False


def _stated(hits: list[_Mention]) -> list[tuple[int, int]]:
    """The spans of the mentions that are not negated."""
    return [(m.start, m.end) for m in hits if not m.negated]


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
_WORDY = re.compile(r"[a-z]{3}")  # text that may hold a number in words
_WORD_EXTRA = {"a dozen": 12, "a single": 1, "once": 1, "twice": 2, "a hundred": 100, "one hundred": 100, "a couple of": 2}
_ZERO = re.compile(
    r"(?<![\w-])(?:none|nobody|nothing|no(?= (?!longer\b|more\b|less\b|later\b|earlier\b|sooner\b|than\b)[a-z])|"
    r"(?:not|never) (?:have |has |had |hold |find |see |show )?(?:any|a single)(?![\w-]))"
    r"|n't (?:have |has |had |hold |find |see |show )?(?:any|a single)(?![\w-])"
)
_NUMBER = re.compile(
    r"(?<![\w.#/\\-])(?P<sign>[-+]|minus )?(?P<cur>\$|usd ?|us\$|€|£)?\s?(?P<sign2>-)?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\w]|\.\d|,\d{3}|/\d)"
    r"(?P<suffix> ?(?:%|percent\b|usd\b|dollars?\b|bucks\b|eur\b|euros?\b))?"
)
_CONTEXT_NUM = re.compile(r"\bout of \$?\d[\d,]*(?:\.\d+)?|\b(?:of|among) (?:the |your |my |all |all the |all your )\d[\d,]*\b")
_TIME = re.compile(r"(?<![\w:])\d{1,2}(?::\d{2}){1,2}(?: ?[ap]\.?m\.?)?(?![\w:])|(?<![\w:])\d{1,2} ?[ap]\.?m\.?(?![\w])")


_MAYBE_DATE = re.compile(r"\d[-/.]\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")
_MAYBE_TIME = re.compile(r"\d:\d|\d ?[ap]\.?m\b")


def _word_numbers(text: str, counting: bool) -> list[_Mention]:
    """Numbers written as words; when ``counting``, also "once", "a couple of" and the zeros "none", "no orders"."""
    out = []
    for m in _WORD_NUM.finditer(text):
        tens, unit, small, extra = m.groups()
        if (small == "one" and _one_not_a_number(text, m.start(), m.end())) or (extra and not counting and "hundred" not in extra):
            continue
        value = _TENS[tens] + (_UNITS[unit] if unit else 0) if tens else _UNITS[small] if small else _WORD_EXTRA[extra]
        out.append(_Mention(value, m.start(), m.end(), _negated(text, m.start(), m.end())))
    if counting:
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
    if _MAYBE_TIME.search(text):
        plain = _masked(plain, _TIME)
    if "of " in text:
        plain = _masked(plain, _CONTEXT_NUM)
    out = _range_ends(plain, text) if "-" in plain else []
    for m in _NUMBER.finditer(plain):
        raw = m.group("int").replace(",", "") + (m.group("frac") or "")
        try:
            value: float = float(raw)
        except ValueError:
            continue
        if m.group("sign") in ("-", "minus ") or m.group("sign2"):
            value = -value
        suffix = (m.group("suffix") or "").strip()
        money = bool(m.group("cur")) or suffix.startswith(("usd", "dollar", "buck", "eur", "euro"))
        percent = suffix in ("%", "percent") and spec.unit != "percent"  # a share, unless percent is the field's unit
        out.append(_Mention(value, m.start(), m.end(), _negated(text, m.start(), m.end()), money, percent))
    if _WORDY.search(plain):
        out += _word_numbers(plain, counting=spec.kind in ("count", "int"))
    return sorted(out, key=lambda x: x.start)


_RANGE_END = re.compile(
    r"(?<![\w.#/\\-])(?P<cur0>[$€£])?\d[\d,]*(?:\.\d+)?-(?P<cur>[$€£])?(?!0\d)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\w/]|\.\d)"
)
_RANGE_AFTER = re.compile(r" ?(?:-|to|through) ?[$€£]?-?\d")
_RANGE_BEFORE = re.compile(r"\d%? ?(?:-|to|through) ?$")


def _ranged(text: str, spans: list[tuple[int, int]]) -> re.Match[str] | None:
    """A range the stated value begins or ends ("3-4", "from $10 to $20"): no one value."""
    for s, e in spans:
        m = _RANGE_AFTER.match(text, e) or _RANGE_BEFORE.search(text, max(0, s - 12), s)
        if m:
            return m
    return None


def _range_ends(plain: str, text: str) -> list[_Mention]:
    """The second number of a range ("3-4", "$10-$20"): the number pattern leaves out digits after a hyphen (a code's)."""
    out = []
    for m in _RANGE_END.finditer(plain):
        value = float(m.group("int").replace(",", "") + (m.group("frac") or ""))
        money = bool(m.group("cur0") or m.group("cur"))
        out.append(_Mention(value, m.start("int"), m.end(), _negated(text, m.start(), m.end()), money))
    return out


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
    hedge = _alternative(text, _stated(hits)) or _ranged(text, _stated(hits))
    if hedge:
        return AnswerVerdict(False, shown, f"the answer hedges ({hedge.group(0).strip(' ,')!r}) instead of stating {want}")
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
    re.compile(r"(?<![\w-])(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?:[t ](?P<h>\d{2}):(?P<mi>\d{2})(?::\d{2})?)?(?![\w-])"),
    re.compile(_MON + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?!-\d)(?:,?\s*(?P<y>\d{4}))?(?![\w])" + _TIME_PART),
    re.compile(r"(?<![\w])(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:\s+(?:of\s+)?|-)" + _MON + r"(?:(?:,?\s*|-)(?P<y>\d{4}))?(?![\w])" + _TIME_PART),
    re.compile(r"(?<![\w/.-])(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})(?![\w/-])" + _TIME_PART),
    re.compile(r"(?<![\w/.-])(?P<a>\d{1,2})-(?P<b>\d{1,2})-(?P<y>\d{4})(?![\w/-])" + _TIME_PART),
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
            out.append(_Mention((day, _time_of(g)), m.start(), m.end(), _negated(text, m.start(), m.end())))
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
    hedge = _alternative(text, _stated(hits))
    if hedge:
        return AnswerVerdict(False, shown, f"the answer hedges ({hedge.group(0).strip(' ,')!r}) instead of stating {wanted}")
    return AnswerVerdict(True, (wanted,), f"the answer gives {wanted}, as expected")


# -- words: enum values, text, yes/no ---------------------------------------------------------

_SPELLINGS = (("cancelled", "canceled"), ("colour", "color"), ("grey", "gray"))


_WINDOW = re.compile(r"0?(\d{1,2}:\d{2}) ?- ?0?(\d{1,2}:\d{2})")


@lru_cache(maxsize=4096)
def _forms(value: str, labels: tuple[str, ...] = ()) -> frozenset[str]:
    """The ways a person writes an enum value: spaces, hyphens or underscores (for slashes too), any case; and its
    labels, the last part of a path ("America/New_York": "new york"), "&" for "and", a time window's other spellings."""
    low = str(value).lower().strip()
    out = {" ".join(_text(lb).split()) for lb in labels}
    for base in {" ".join(re.split(r"[_\-\s]+", low)), " ".join(re.split(r"[_\-\s/]+", low)), *_short_forms(low)}:
        out |= {base, base.replace(" ", "-"), base.replace(" ", "_"), base.replace(" and ", " & "), base.replace(" and ", "&")}
        if " " in base and len(base.replace(" ", "")) > 4:
            out.add(base.replace(" ", ""))
    for a, b in _SPELLINGS:
        out |= {f.replace(a, b) for f in out} | {f.replace(b, a) for f in out}
    return frozenset(f for f in out if f)


def _short_forms(low: str) -> list[str]:
    """A path's last part ("new york") and a time window's hours as people write them ("8:00 to 12:00")."""
    out = []
    if "/" in low and len(low.rsplit("/", 1)[1]) > 2:
        out.append(" ".join(re.split(r"[_\-\s]+", low.rsplit("/", 1)[1])))
    window = _WINDOW.fullmatch(low)
    if window:
        a, b = window.groups()
        out += [f"{x}{sep}{y}" for x in (a, a.zfill(5)) for y in (b, b.zfill(5)) for sep in ("-", " - ", " to ")]
    return out


_FORM_CACHE: dict[tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], tuple[re.Pattern[str], dict[str, str]]] = {}


def _choice_pattern(choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> tuple[re.Pattern[str], dict[str, str]]:
    key = (choices, tuple(sorted((k, v) for k, v in labels.items())))
    hit = _FORM_CACHE.get(key)
    if hit is None:
        owner: dict[str, str] = {}
        for c in choices:
            for f in _forms(c, tuple(labels.get(c, ()))):
                owner.setdefault(f, c)
        alts = sorted(owner, key=len, reverse=True)
        pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(a) for a in alts) + r")(?![\w-])") if alts else re.compile(r"(?!x)x")
        if len(_FORM_CACHE) > 2048:
            _FORM_CACHE.clear()
        hit = _FORM_CACHE[key] = (pattern, owner)
    return hit


def _choice_mentions(text: str, choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> list[_Mention]:
    pattern, owner = _choice_pattern(choices, labels)
    return [_Mention(owner[m.group(1)], m.start(), m.end(), _negated(text, m.start(), m.end())) for m in pattern.finditer(text)]


_ECHO_CHOICES: dict[tuple[str, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]], frozenset[str]] = {}


def _echoed_choices(request: str, choices: tuple[str, ...], labels: dict[str, tuple[str, ...]]) -> frozenset[str]:
    key = (request, choices, tuple(sorted(labels.items())) if labels else ())
    hit = _ECHO_CHOICES.get(key)
    if hit is None:
        if len(_ECHO_CHOICES) > 4096:
            _ECHO_CHOICES.clear()
        hit = _ECHO_CHOICES[key] = frozenset(m.value for m in _choice_mentions(_text(request), choices, labels))
    return hit


_SMALL_WORDS = frozenset({
    "a", "am", "an", "as", "at", "be", "by", "do", "go", "he", "hi", "i", "if", "in", "is", "it", "me", "my", "no", "of", "oh",
    "ok", "on", "or", "so", "to", "up", "us", "we", "all", "any", "are", "can", "day", "for", "has", "her", "his", "its", "las",
    "los", "may", "new", "not", "now", "one", "our", "sea", "see", "she", "the", "too", "two", "was", "who", "you",
})  # fmt: skip


def _only_a_word(value: str, raw: str) -> bool:
    """Whether a code that is also a short word ("US", "AS") is only that word in ``raw`` ("let us know", "as far as"):
    an answer written in mixed case writes a code in capitals."""
    low = value.lower()
    if low not in _SMALL_WORDS or not value.isupper() or raw == raw.lower():
        return False
    return all(m.group(0).islower() for m in re.finditer(rf"(?<!\w){re.escape(low)}(?!\w)", raw, re.I))


def _match_enum(expected: Any, raw: str, spec: AnswerSpec) -> AnswerVerdict:
    choices = tuple(dict.fromkeys([str(expected), *spec.choices]))
    exp, text = str(expected), _text(raw)
    found = [m for m in _choice_mentions(text, choices, spec.labels) if m.value == exp or not _only_a_word(m.value, raw)]
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
    hedge = _alternative(text, _stated(hits))
    if hedge:
        return AnswerVerdict(False, shown, f"the answer hedges ({hedge.group(0).strip(' ,')!r}) instead of stating {exp!r}")
    return AnswerVerdict(True, (exp,), f"the answer names {exp!r}, as expected")


_NOT_WORD = re.compile(r"[^\w@.+#$%&/'-]+|(?<!\w)[.\-/']|[.\-/'](?!\w)")


def _words(s: str) -> str:
    """Text as plain lower-case words: punctuation and quotes as spaces, apostrophes within words kept ("isn't",
    "O'Brien"), as a name, a title or a code is written."""
    return " ".join(_NOT_WORD.sub(" ", _text(s)).split())


def _phrase_spans(phrase: str, text: str) -> list[tuple[int, int]]:
    if not phrase:
        return []
    pattern = re.compile(r"(?<![\w])" + re.escape(phrase) + r"(?![\w])")
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def _own_spans(phrase: str, spans: list[tuple[int, int]], said: str, pool: tuple[Any, ...]) -> tuple[list[tuple[int, int]], list[str]]:
    """The spans of ``phrase`` in ``said`` that are not part of a longer value of the pool ("Lunar Harbor" in
    "Lunar Harbor Live"), and those longer values."""
    longer = [(str(v), sp) for v in pool if phrase in (w := _words(str(v))) and w != phrase for sp in _phrase_spans(w, said)]
    if not longer:
        return spans, []
    own = [(s, e) for s, e in spans if not any(s2 <= s and e <= e2 for _, (s2, e2) in longer)]
    return own, list(dict.fromkeys(v for v, _ in longer))


def _match_text(expected: str, text: str, spec: AnswerSpec) -> AnswerVerdict:
    want, said = _words(expected), _words(text)
    if not want:
        return AnswerVerdict(not said, (said,) if said else (), "the expected value is empty")
    spans = _phrase_spans(want, said)
    if not spans:
        return AnswerVerdict(False, (_cut(text),), f"the answer does not contain {expected!r}")
    spans, longer = _own_spans(want, spans, said, spec.pool)
    if not spans:
        return AnswerVerdict(False, tuple(longer), f"the answer names {_listed(tuple(longer))}, not {expected!r}")
    if all(_negated(said, s, e) for s, e in spans):
        return AnswerVerdict(False, (expected,), f"the answer says it is not {expected!r}")
    request = _words(spec.request) if spec.request else ""
    others = []
    for other in spec.pool:
        o = _words(str(other))
        if not o or o == want or o in want or (request and _phrase_spans(o, request)) or _only_a_word(str(other), text):
            continue
        for s, e in _phrase_spans(o, said):
            if not any(s < e2 and s2 < e for s2, e2 in spans) and not _negated(said, s, e):
                others.append(str(other))
                break
    if others:
        names = tuple(dict.fromkeys([expected, *others]))
        return AnswerVerdict(False, names, f"the answer names {_listed(names)}: more than one value, so it does not commit to {expected!r}")
    hedge = _alternative(said, spans)
    if hedge:
        return AnswerVerdict(False, (expected,), f"the answer hedges ({hedge.group(0).strip()!r}) instead of stating {expected!r}")
    return AnswerVerdict(True, (expected,), f"the answer contains {expected!r}, as expected")


_YES = re.compile(r"^(?:yes|yeah|yep|yup|correct|true|affirmative|indeed|that's right|that is right|right|sure)\b|^y$")
_NO = re.compile(r"^(?:no|nope|nah|false|negative|incorrect|not)\b|^n$")
_BOOL_HEDGE = re.compile(
    _HEDGE.pattern + r"|\bcould be\b|\bmight\b|\bnot certain\b|\bcan(?:'|no)t tell\b|\bdepends\b|\bsometimes\b|\bunknown\b|\bunclear\b"
)


def _match_bool(expected: bool, text: str, spec: AnswerSpec) -> AnswerVerdict:
    said = text.strip(" \"'`.,;:!?()[]")
    hedge = _BOOL_HEDGE.search(said)
    if hedge:
        return AnswerVerdict(False, (), f"the answer hedges ({hedge.group(0)!r}) instead of saying yes or no")
    yes, no = _YES.search(said), _NO.search(said)
    both = re.search(r"\b(?:yes|yeah)\b.*\b(?:no|nope)\b|\b(?:no|nope)\b.*\b(?:yes|yeah)\b", said)
    if both and not _NEG.search(said[: both.start()] or " "):
        return AnswerVerdict(False, (), "the answer says both yes and no")
    if yes or no:
        value = bool(yes) and not no
        if yes and _NEG.search(said[yes.end() :]) and not _labels_say(spec, said, True):
            return AnswerVerdict(False, (), "the answer says yes and then negates it")
    else:  # a statement: "It is.", "It is not.", the field's own phrase
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
    if item.kind == "enum":
        text = _text(answer)
        choices = tuple(dict.fromkeys([*map(str, expected), *item.choices]))
        mentioned = _choice_mentions(text, choices, item.labels)
        named = [(m.value, (m.start, m.end)) for m in mentioned if not m.negated and not _only_a_word(m.value, answer)]
    elif item.kind == "text" and item.pool:
        text = _words(answer)
        values = [str(v) for v in dict.fromkeys([*expected, *item.pool]) if not _only_a_word(str(v), answer)]
        named = [(v, sp) for v in values for sp in _named_spans(v, text, item.pool)]
    else:
        return None
    names = [v for v, _ in named]
    got, want = set(names), {str(e) for e in expected}
    shown = tuple(dict.fromkeys(names))
    hedge = _alternative(text, [sp for _, sp in named])
    if hedge:
        return AnswerVerdict(False, shown, f"the answer hedges ({hedge.group(0).strip(' ,')!r}) instead of listing the items")
    if got == want:
        return AnswerVerdict(True, shown, f"the answer names all {len(want)} expected items and no other")
    why = [
        f"missing {_listed(tuple(sorted(want - got)))}" if want - got else "",
        f"extra {_listed(tuple(sorted(got - want)))}" if got - want else "",
    ]
    return AnswerVerdict(False, shown, "the list does not match: " + "; ".join(x for x in why if x))


def _named_spans(value: str, said: str, pool: tuple[Any, ...]) -> list[tuple[int, int]]:
    """Where ``said`` names ``value`` (not negated, not as part of a longer value of the pool)."""
    phrase = _words(value)
    spans, _ = _own_spans(phrase, _phrase_spans(phrase, said), said, pool)
    return [(s, e) for s, e in spans if not _negated(said, s, e)]


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
    if isinstance(answer, dict) and len(answer) == 1:  # {"total": 3}: the value under its name
        answer = next(iter(answer.values()))
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
        if _words(str(answer)) in _forms(str(expected), tuple(spec.labels.get(str(expected), ()))):
            return AnswerVerdict(True, (str(expected),), f"the answer is {expected!r}")
        return _match_enum(expected, str(answer)[:4000], spec)
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
    if isinstance(answer, str) and _BARE_NUMBER.match(answer):  # "3", " 2,157.70 ": nothing else to read
        return _bare_number(expected, _number_text(answer.strip().rstrip(". ")))
    return _match_number(expected, _text(answer)[:4000], spec)


_BARE_NUMBER = re.compile(r"\s*[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?[\s.]*$")


def _bare_number(expected: float, value: float) -> AnswerVerdict:
    """The verdict on an answer that is one number and nothing else (what the reading of a sentence would say)."""
    want, got = _fmt_num(expected), _fmt_num(value)
    if abs(value - expected) <= TOLERANCE + 1e-9:
        return AnswerVerdict(True, (want,), f"the answer states {want}, as expected")
    return AnswerVerdict(False, (got,), f"the answer states {got}, not {want}")


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
