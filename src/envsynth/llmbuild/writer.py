"""The task writer: a natural instruction and user profile for an admitted task, checked by rules.

The model rewrites the procedural instruction (and may reword the user's role and add
preferences). The rewrite is accepted only if it

* leaks no id (:func:`~envsynth.tasks.wording.instruction.leaks_id`);
* keeps every identifying value of the procedural instruction (see :func:`required_values`),
  compared normalized: numbers as numbers (``$1,250.00`` = ``1250``), dates as dates
  (``March 3, 2026`` = ``2026-03-03``), times as times, phones by their digits, text
  case- and quote-insensitively;
* still asks for the answer of an information task (see :func:`question_problems`);
* keeps the user: same name (and the same email and phone when the user has them).

Otherwise the model is asked once more with the reasons, then the procedural
instruction is kept and the reasons are returned.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envsynth.blueprint.spec import ToolSpec
from envsynth.llmbuild.prompts import prompt
from envsynth.runtime.app import App
from envsynth.tasks.model import Task, UserProfile
from envsynth.tasks.wording.describe import field_words, fmt_value, human
from envsynth.tasks.wording.instruction import ID_PATTERN, leaks_id

__all__ = [
    "Rewrite",
    "Value",
    "check_rewrite",
    "question_problems",
    "required_values",
    "write_instruction",
]

ROLE = "task_writer"
ATTEMPTS = 2  # the first rewrite and one retry with the reasons

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
_MONTH = r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
_DATE_MDY = re.compile(_MONTH + r"\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})", re.IGNORECASE)
_DATE_DMY = re.compile(r"(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?\s+(\d{4})", re.IGNORECASE)
_DATE_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TIME_12 = re.compile(r"\b(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b\.?", re.IGNORECASE)
_TIME_24 = re.compile(r"\b(\d{1,2}):(\d{2})\b(?!\s*[ap]\.?m)", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]+)\"")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_NUMBER = re.compile(r"(?<![\w.])-?\$?\d[\d,]*(?:\.\d+)?(?![\w])")
_STOP = {"of", "the", "a", "an", "at", "on", "in", "to", "for", "id"}
_AGG_WORDS = {
    "sum": ("total", "sum", "combined", "altogether", "in all"),
    "avg": ("average", "mean"),
    "min": ("lowest", "minimum", "smallest", "least", "cheapest", "earliest"),
    "max": ("highest", "maximum", "largest", "most", "biggest", "latest"),
}
_COUNT_WORDS = ("how many", "count", "number of", "total number")
_ASKING = (
    "?",
    "tell me",
    "let me know",
    "what",
    "which",
    "how many",
    "how much",
    "report",
    "give me",
    "know",
    "confirm",
    "find out",
    "share",
)


class Rewrite(BaseModel):
    """The task writer's reply."""

    model_config = ConfigDict(extra="ignore")

    instruction: str = Field(description="the natural instruction, in the user's voice")
    name: str = Field(description="the user's name (unchanged)")
    role: str = Field(description="who the user is, in a few words")
    email: str | None = None
    phone: str | None = None
    preferences: dict[str, str | int | float | bool] = Field(default_factory=dict)


@dataclass(frozen=True)
class Value:
    """A value the instruction must keep: ``kind`` (text, number, date, time, phone), its normal form and how the procedural text shows it."""

    kind: str
    norm: str
    shown: str


# --- normal forms ----------------------------------------------------------------------------


def _norm_text(text: str) -> str:
    text = text.replace("\u201c", '"').replace("\u201d", '"').replace("\u2018", "'").replace("\u2019", "'")
    text = text.replace('"', " ").replace("_", " ").lower()
    return " " + re.sub(r"\s+", " ", text).strip() + " "


def _norm_number(token: str) -> str | None:
    try:
        return f"{float(token.replace('$', '').replace(',', '')):.10g}"
    except ValueError:
        return None


def _month(name: str) -> int:
    return next(i + 1 for i, m in enumerate(_MONTHS) if m.startswith(name.lower().rstrip(".")[:3]))


def _dates(text: str) -> tuple[set[str], str]:
    """ISO dates written in ``text``, and the text with them blanked out."""
    found: set[str] = set()

    def keep(y: int, m: int, d: int) -> None:
        with contextlib.suppress(ValueError):
            found.add(dt.date(y, m, d).isoformat())

    for mt in _DATE_MDY.finditer(text):
        keep(int(mt[3]), _month(mt[1]), int(mt[2]))
    for mt in _DATE_DMY.finditer(text):
        keep(int(mt[3]), _month(mt[2]), int(mt[1]))
    for mt in _DATE_ISO.finditer(text):
        keep(int(mt[1]), int(mt[2]), int(mt[3]))
    for rx in (_DATE_MDY, _DATE_DMY, _DATE_ISO):
        text = rx.sub(" ", text)
    return found, text


def _times(text: str) -> tuple[set[str], str]:
    """``HH:MM`` times written in ``text`` (12- or 24-hour), and the text with them blanked out."""
    found: set[str] = set()
    for mt in _TIME_12.finditer(text):
        h = int(mt[1]) % 12 + (12 if mt[3].lower() == "p" else 0)
        found.add(f"{h:02d}:{int(mt[2] or 0):02d}")
    text = _TIME_12.sub(" ", text)
    for mt in _TIME_24.finditer(text):
        found.add(f"{int(mt[1]):02d}:{mt[2]}")
    return found, _TIME_24.sub(" ", text)


def _numbers(text: str) -> set[str]:
    return {n for tok in _NUMBER.findall(text) if (n := _norm_number(tok)) is not None}


@dataclass(frozen=True)
class _Forms:
    """The normal forms present in one text."""

    text: str
    digits: str
    numbers: frozenset[str]
    dates: frozenset[str]
    times: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _Forms:
        dates, rest = _dates(text)
        times, rest = _times(rest)
        rest = _EMAIL.sub(" ", rest)
        return cls(_norm_text(text), re.sub(r"\D", "", text), frozenset(_numbers(rest)), frozenset(dates), frozenset(times))

    def has(self, v: Value) -> bool:
        if v.kind == "date":
            return v.norm in self.dates
        if v.kind == "time":
            return v.norm in self.times
        if v.kind == "number":
            return v.norm in self.numbers
        if v.kind == "phone":
            return v.norm in self.digits
        return re.search(rf"(?<!\w){re.escape(v.norm)}(?!\w)", self.text) is not None


# --- what must be kept -------------------------------------------------------------------------


def _literal_values(app: App, task: Task) -> list[tuple[str, Any]]:
    """``(type, value)`` of every literal, non-id argument of the oracle, and of the core rows' plain fields."""
    out: list[tuple[str, Any]] = []
    for c in task.oracle:
        spec = app.spec_by_name[c.tool]
        for k, v in c.args.items():
            p = next((x for x in spec.params if x.name == k), None)
            if p is None or p.ref or p.semantic in ("id", "ref") or k in ("limit", "offset"):
                continue
            for item in v if isinstance(v, list) else [v]:
                out.append(("enum" if p.enum else p.semantic, item))
    for table, rows in task.state.core.items():
        ent = app.blueprint.entity(table)
        for r in rows:
            for f in ent.fields:
                if f.type in ("name", "company", "string", "email", "phone", "enum", "state") and r.get(f.name) is not None:
                    out.append((f.type, r[f.name]))
    return out


def required_values(app: App, task: Task) -> list[Value]:
    """The identifying values the procedural instruction uses, which a rewrite must keep.

    From the procedural text: quoted values, dates, times, numbers (money, quantities,
    bounds) and emails; and every oracle argument or core-row value of a name, company,
    string, email, phone or enum field that the text writes out (the user's own name is
    the profile's, and is not required in the instruction).
    """
    text = task.instruction
    out: dict[tuple[str, str], Value] = {}

    def add(kind: str, norm: str, shown: str) -> None:
        out.setdefault((kind, norm), Value(kind, norm, shown))

    rest = _text_values(text, add)
    user = _norm_text(task.user.name).strip()
    for kind, v in _literal_values(app, task):
        if isinstance(v, bool) or v is None:
            continue
        if kind == "phone":
            if str(v) in text:
                add("phone", re.sub(r"\D", "", str(v)), str(v))
            continue
        if isinstance(v, int | float):
            continue  # numbers are taken from the text itself, below
        shown = human(str(v)) if kind in ("enum", "state") else fmt_value(None, v)
        norm = _norm_text(shown).strip()
        if len(norm) < 3 or norm == user:
            continue
        if re.search(rf"(?<!\w){re.escape(shown)}(?!\w)", text, re.IGNORECASE):
            add("text", norm, shown)
    for tok in _NUMBER.findall(re.sub(r"\+?\d[\d\-\s().]{7,}\d", " ", rest)):
        n = _norm_number(tok)
        if n is not None:
            add("number", n, tok)
    return list(out.values())


def _text_values(text: str, add: Callable[[str, str, str], None]) -> str:
    """Add the dates, times, quoted values and emails ``text`` writes out; the text without them (for its numbers)."""
    for rx in (_DATE_MDY, _DATE_DMY, _DATE_ISO):
        for mt in rx.finditer(text):
            for d in _dates(mt[0])[0]:
                add("date", d, mt[0])
    _, rest = _dates(text)
    for rx in (_TIME_12, _TIME_24):
        for mt in rx.finditer(rest):
            for t in _times(mt[0])[0]:
                add("time", t, mt[0].strip())
    _, rest = _times(rest)
    for q in _QUOTED.findall(rest):
        add("text", _norm_text(q).strip(), q)
    rest = _QUOTED.sub(" ", rest)
    for e in _EMAIL.findall(rest):
        add("text", _norm_text(e).strip(), e)
    return _EMAIL.sub(" ", rest)


def _answer_spec(app: App, task: Task) -> ToolSpec | None:
    if task.answer_step is None:
        return None
    return app.spec_by_name[task.oracle[task.answer_step].tool]


def question_problems(app: App, task: Task, text: str) -> list[str]:
    """Why ``text`` no longer asks what an information task asks (empty: it does, or there is no question).

    Some sentence must ask (a question mark, or "tell me", "let me know", "what",
    "which"...) and name what is asked: the answer field's words for a lookup, "how
    many" / "count" / "number of" for a count, the aggregate ("total", "average",
    "lowest", "highest") and its field for another aggregate.
    """
    spec = _answer_spec(app, task)
    if spec is None:
        return []
    groups, what = _asked_words(app, task, spec)
    for sentence in re.split(r"(?<=[.?!])\s+", text):
        low = _norm_text(sentence)
        if any(w in low for w in _ASKING) and all(any(w in low for w in g) for g in groups):
            return []
    return [f"it no longer asks for {what}: the user must still ask for it, as a question"]


def _asked_words(app: App, task: Task, spec: ToolSpec) -> tuple[list[tuple[str, ...]], str]:
    """The word groups a sentence must use (one word of each) to ask what the task asks, and that thing in words."""
    q = spec.query
    if q is not None and (q.op == "search" or (q.op == "aggregate" and q.agg == "count")):
        return [_COUNT_WORDS], "how many records there are"
    field = (q.field if q is not None and q.op == "aggregate" else task.answer_field) or ""
    ent = app.blueprint.entity(q.entity if q is not None else spec.entity)
    said = field_words(ent.field(field)) if ent.has(field) else human(field)  # the words the instruction uses (its label)
    groups: list[tuple[str, ...]] = [(w, w.rstrip("s")) for w in said.split() if w not in _STOP]
    what = f"the {said}"
    if q is not None and q.op == "aggregate":
        words = _AGG_WORDS.get(q.agg or "sum", (q.agg or "",))
        groups.append(words)
        what = f"the {words[0]} {said}"
    return groups, what


def check_rewrite(app: App, task: Task, rewrite: Rewrite, required: list[Value] | None = None) -> list[str]:
    """The reasons a rewrite is not acceptable (empty: accept it)."""
    reasons = []
    text = rewrite.instruction.strip()
    if not text:
        return ["the instruction is empty"]
    if leaks_id(text):
        reasons.append("the instruction contains an internal id; name rows by their names, dates and amounts instead")
    forms = _Forms.of(text)
    lost = [v.shown for v in (required if required is not None else required_values(app, task)) if not forms.has(v)]
    if lost:
        reasons.append("values of the original are missing or changed: " + ", ".join(json.dumps(s) for s in lost))
    reasons += question_problems(app, task, text)
    user = task.user
    if _norm_text(rewrite.name) != _norm_text(user.name):
        reasons.append(f"the user's name must stay {user.name!r}, not {rewrite.name!r}")
    for what, mine, theirs in (("email", user.email, rewrite.email), ("phone", user.phone, rewrite.phone)):
        if theirs and mine != theirs:
            reasons.append(f"the user's {what} must stay {mine!r}" if mine else f"the user has no {what}: leave it null")
    for k, v in user.preferences.items():
        if k in rewrite.preferences and rewrite.preferences[k] != v:
            reasons.append(f"the preference {k!r} must stay {v!r}")
    if not rewrite.role.strip():
        reasons.append("the user's role is empty")
    return reasons


def _profile(task: Task, rewrite: Rewrite, instruction: str) -> UserProfile:
    user = task.user
    prefs = {**rewrite.preferences, **user.preferences}
    return user.model_copy(update={"role": rewrite.role.strip(), "preferences": prefs, "knows": [instruction]})


def _asked(spec: ToolSpec, task: Task) -> str:
    q = spec.query
    noun = human(q.entity if q is not None else spec.entity)
    if q is not None and (q.op == "search" or (q.op == "aggregate" and q.agg == "count")):
        return f"how many {noun} records match"
    if q is not None and q.op == "aggregate":
        return f"the {_AGG_WORDS.get(q.agg or 'sum', ('',))[0]} {human(q.field or '')} of the matching {noun} records"
    return f"the {human(task.answer_field or '')} of a {noun}"


def _messages(app: App, task: Task, required: list[Value]) -> list[dict[str, Any]]:
    spec = _answer_spec(app, task)
    if spec is None:
        question = "This is an action task: the user asks for changes and expects no particular answer."
    else:
        question = f"This task ends with a question, {_asked(spec, task)}: the rewrite must still ask it, as a question."
    user = task.user.model_dump(exclude={"knows"})
    text = prompt(
        ROLE,
        app_title=app.blueprint.title,
        app_description=app.blueprint.description,
        instruction=task.instruction,
        profile=json.dumps(user, ensure_ascii=False, indent=2),
        oracle=ID_PATTERN.sub("<id>", task.oracle_program.strip()),
        question=question,
        values="\n".join(f"- {v.shown}" for v in required) or "- (none)",
    )
    return [{"role": "user", "content": text}]


async def write_instruction(client: Any, app: App, task: Task) -> tuple[str, UserProfile, dict[str, Any]]:
    """A natural instruction and profile for ``task``, or the procedural ones with the reasons.

    Args:
        client: a :class:`~envsynth.llmbuild.client.BuilderClient`.
        app: the task's app.
        task: an admitted task (state 0 of its task index; the others share its instruction).

    Returns:
        ``(instruction, user profile with knows=[instruction], info)``; ``info`` has
        ``status`` ("rewritten" or "fallback"), ``attempts`` and the ``reasons`` of each
        rejected attempt.

    Raises:
        RoleError: no usable reply (the caller keeps the procedural instruction).
        BuildStop: the token budget is spent, or the endpoint is down.
    """
    required = required_values(app, task)
    messages = _messages(app, task, required)
    reasons: list[list[str]] = []
    for attempt in range(ATTEMPTS):
        rewrite = await client.structured(ROLE, messages, Rewrite, fallback=True)
        problems = check_rewrite(app, task, rewrite, required)
        if not problems:
            text = re.sub(r"\s+", " ", rewrite.instruction).strip()
            return text, _profile(task, rewrite, text), {"status": "rewritten", "attempts": attempt + 1, "reasons": reasons}
        reasons.append(problems)
        feedback = (
            "Your rewrite cannot be used:\n" + "\n".join(f"- {p}" for p in problems) + "\nFix these and return the corrected JSON object."
        )
        messages = [*messages, {"role": "assistant", "content": rewrite.model_dump_json()}, {"role": "user", "content": feedback}]
    user = task.user.model_copy(update={"knows": [task.instruction]})
    return task.instruction, user, {"status": "fallback", "attempts": ATTEMPTS, "reasons": reasons}
