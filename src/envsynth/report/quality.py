"""The task quality linter: defects a reader sees in a corpus's tasks, measured from the records.

It reads only what a corpus stores (each task's text, user profile, initial state and
oracle program, and each app's blueprint and tool specs) and shares no logic with the
task generator, so it can catch what the generator gets wrong. Every check is a plain
reading of the record, the way a person reviewing tasks would make it:

- ``tool_name_verbatim``: the name of a tool the oracle calls appears as words in the text
  ("report equipment fault for the equipment ...");
- ``records``: the text speaks of "records";
- ``field_names``: a column name is read out after "whose", "its" or "with" ("whose
  available is yes", "set its starts at to ...");
- ``missing_identity``: the text says "me"/"my" but names nobody (no name, email or phone);
- ``namesake``: the named user shares the name with another row of the same table in the
  task's state and nothing in the text tells them apart;
- ``create_then_undo``: a row the oracle creates is deleted, cancelled or ended (left, closed,
  archived...) later in the chain;
- ``erased_effect``: a row the oracle writes is deleted later in the chain, or a later call sets
  a field of a row the user already gave a value for earlier in the chain (made a playlist
  called A, then renamed it to B);
- ``answer_in_question``: the expected answer is stated in the text, or set by the oracle;
- ``counter_descriptor``: a row is named by a count or running total no person knows
  ("booked count 4", "tickets sold 127"): a field the blueprint says never describes a
  row, or else a tally (an int/quantity named like a count, "booked_count") or a balance-like
  money field it does not list in ``known_by``;
- ``disconnected``: a multi-step task whose steps do not all touch related rows (rows are
  related when one call's row is, or is the parent of, another call's row);
- ``doubled_word``: a word written twice in a row outside quotes ("Please please update");
- ``yes_no_value``: a value read out as a bare yes or no ("the automatic renewal is yes");
- ``one_plural``: a count of one with a plural noun ("estimated at 1 hours", "1 checked bags").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from pydantic import BaseModel, Field

from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.spec import ToolSpec
from envsynth.tasks.model import Call, Ref, Task

DEFECTS = (
    "tool_name_verbatim",
    "records",
    "field_names",
    "missing_identity",
    "namesake",
    "create_then_undo",
    "erased_effect",
    "answer_in_question",
    "counter_descriptor",
    "disconnected",
    "doubled_word",
    "yes_no_value",
    "one_plural",
)
"""Every defect the linter reports, in report order."""

_NATURAL_TYPES = {"name", "email", "phone", "address", "url", "company"}
_COUNTER_TYPES = {"int", "quantity"}
_TOTAL_WORDS = ("balance", "total", "count", "spent", "sold", "used", "booked", "taken", "credit", "allocated", "stocked", "left")
_UNDO_VERBS = ("delete", "remove", "cancel", "void", "withdraw", "revoke", "undo", "discard")
_END_VERBS = ("leave", "end", "close", "terminate", "archive", "deactivate", "suspend", "unsubscribe", "unfollow", "quit")  # of a made row
_FIRST_PERSON = re.compile(r"\b(my|mine|myself)\b|(?<!tell )(?<!show )(?<!give )(?<!let )(?<!help )\bme\b", re.IGNORECASE)
_QUOTED = re.compile(r'"[^"]*"')
_DOUBLED = re.compile(r"\b([a-z]+) \1\b", re.IGNORECASE)
_YES_NO = re.compile(r"\b(is|are|was|were|to|of) (yes|no)\b(?! (?:longer|more|one|need)\b)", re.IGNORECASE)
_ONE_PLURAL = re.compile(r"(?<![\d.,$])\b1 (?:[a-z-]+ )?([a-z]+)\b")
_NOT_PLURAL = ("ss", "us", "is", "ous")
_VERBS = frozenset(("was", "has", "does", "goes", "as", "its", "his", "this", "yes", "plus", "thus", "makes", "gives", "needs"))
_RECORDS = re.compile(r"\brecords\b|\b(the|a|this|that|each|every) record\b", re.IGNORECASE)  # the noun, not "record that ..."


class TaskLint(BaseModel):
    """The defects found in one task."""

    id: str
    app: str
    role: str
    steps: int
    defects: list[str] = Field(default_factory=list)


class AppCoverage(BaseModel):
    """Share of an app's read and write tools that some task's oracle calls."""

    reads: float
    writes: float
    uncovered: list[str] = Field(default_factory=list)


class QualityReport(BaseModel):
    """Defect rates over a corpus's tasks (shares of all tasks, 0..1).

    ``connected`` is the share of multi-step tasks whose steps touch related rows.
    """

    tasks: int
    rates: dict[str, float]
    counts: dict[str, int]
    multi_step: int
    connected: float
    coverage: dict[str, AppCoverage]
    roles: dict[str, float]
    examples: dict[str, list[str]] = Field(default_factory=dict, description="defect -> up to three task ids")


class AppView:
    """What the linter reads of one app: its blueprint and tool specs."""

    def __init__(self, blueprint: Blueprint, specs: Iterable[ToolSpec]) -> None:
        self.blueprint = blueprint
        self.specs = {s.name: s for s in specs}
        self.id_field = {e.name: e.id_field for e in blueprint.entities}
        self.refs = {e.name: [f.name for f in e.fields if f.type == "ref"] for e in blueprint.entities}
        self.running = {  # (table, field) a tool moves as a side effect: balances, credits, counters
            (table, f)
            for s in self.specs.values()
            if s.kind not in ("create", "update")
            for table, fs in (s.writes or {}).items()
            for f in fs
        }


def lint_task(task: Task, app: AppView) -> TaskLint:
    """Every defect of one task (see the module docstring)."""
    text = task.instruction
    low = " ".join(text.lower().split())
    rows = _rows_by_id(task, app)
    found = [
        name
        for name, hit in (
            ("tool_name_verbatim", _tool_name_verbatim(task, low)),
            ("records", bool(_RECORDS.search(text))),
            ("field_names", _field_names(low, app)),
            ("missing_identity", _missing_identity(task, text)),
            ("namesake", _namesake(task, app, low)),
            ("create_then_undo", _undone(task, app, created_only=True)),
            ("erased_effect", _undone(task, app, created_only=False)),
            ("answer_in_question", _answer_in_question(task, low)),
            ("counter_descriptor", _counter_descriptor(task, app, low, rows)),
            ("disconnected", len(task.oracle) > 1 and not _connected(task, app, rows)),
            ("doubled_word", bool(_DOUBLED.search(_QUOTED.sub('""', text)))),
            ("yes_no_value", bool(_YES_NO.search(_QUOTED.sub('""', text)))),
            ("one_plural", _one_plural(_QUOTED.sub('""', text))),
        )
        if hit
    ]
    return TaskLint(id=task.id, app=task.app, role=task.user.role, steps=len(task.oracle), defects=found)


def lint_corpus(tasks: Iterable[Task], apps: Mapping[str, AppView]) -> QualityReport:
    """Lint every task and add up the rates, tool coverage per app and user roles."""
    tasks = list(tasks)
    linted = [lint_task(t, apps[t.app]) for t in tasks]
    n = max(len(linted), 1)
    counts = Counter(d for t in linted for d in t.defects)
    multi = [t for t in linted if t.steps > 1]
    examples: dict[str, list[str]] = {}
    for t in linted:
        for d in t.defects:
            if len(examples.setdefault(d, [])) < 3:
                examples[d].append(t.id)
    called: dict[str, set[str]] = {}
    for t in tasks:
        called.setdefault(t.app, set()).update(c.tool for c in t.oracle)
    return QualityReport(
        tasks=len(linted),
        rates={d: counts[d] / n for d in DEFECTS},
        counts={d: counts[d] for d in DEFECTS},
        multi_step=len(multi),
        connected=sum("disconnected" not in t.defects for t in multi) / max(len(multi), 1),
        coverage={name: _coverage(view, called.get(name, set())) for name, view in apps.items()},
        roles={role: c / n for role, c in Counter(t.role for t in linted).most_common()},
        examples=examples,
    )


def _coverage(app: AppView, called: set[str]) -> AppCoverage:
    reads = [n for n, s in app.specs.items() if s.mode == "read"]
    writes = [n for n, s in app.specs.items() if s.mode == "write"]
    return AppCoverage(
        reads=sum(n in called for n in reads) / max(len(reads), 1),
        writes=sum(n in called for n in writes) / max(len(writes), 1),
        uncovered=sorted(n for n in app.specs if n not in called),
    )


def _words(name: str) -> str:
    return name.replace("_", " ")


def _tool_name_verbatim(task: Task, low: str) -> bool:
    return any("_" in c.tool and re.search(rf"\b{re.escape(_words(c.tool))}\b", low) for c in task.oracle)


def _field_names(low: str, app: AppView) -> bool:
    for ent in app.blueprint.entities:
        for f in ent.fields:
            if f.type in _NATURAL_TYPES or f.type in ("id", "ref") or f.name == ent.label:
                continue
            if re.search(rf"\b(whose|its|with) {re.escape(_words(f.name))}\b", low):
                return True
    return False


def _one_plural(text: str) -> bool:
    """Whether a count of one is followed by a plural noun, within two words ("1 hours", "1 checked bags")."""
    for m in _ONE_PLURAL.finditer(text):
        words = [w for w in text[m.start() : m.end()].split(" ")[1:] if w.lower() not in _VERBS]
        if any(w.endswith("s") and not w.endswith(_NOT_PLURAL) for w in words):
            return True
    return False


def _missing_identity(task: Task, text: str) -> bool:
    if not _FIRST_PERSON.search(_QUOTED.sub('""', text)):  # words inside quotes are a row's text, not the user's
        return False
    marks = [task.user.name, task.user.email, task.user.phone]
    return not any(m and m.lower() in text.lower() for m in marks)


def _namesake(task: Task, app: AppView, low: str) -> bool:
    name = task.user.name
    if not name or name.lower() not in low:
        return False
    for table, rows in _all_rows(task).items():
        ent = app.blueprint.entity(table)
        name_fields = [f.name for f in ent.fields if f.type == "name"]
        same = [r for r in rows if any(r.get(f) == name for f in name_fields)]
        if len(same) < 2:
            continue
        told_apart = any(_distinguishes(r, same, low, name) for r in same)
        if not told_apart:
            return True
    return False


def _distinguishes(row: dict[str, Any], same: list[dict[str, Any]], low: str, name: str) -> bool:
    for key, value in row.items():
        if not isinstance(value, str) or len(value) < 4 or value == name or value.lower() not in low:
            continue
        if sum(other.get(key) == value for other in same) == 1:
            return True
    return False


def _all_rows(task: Task) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {t: list(rows) for t, rows in task.state.core.items()}
    for table, rows in task.state.distractors.items():
        out.setdefault(table, []).extend(rows)
    return out


def _rows_by_id(task: Task, app: AppView) -> dict[str, tuple[str, dict[str, Any]]]:
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for table, rows in _all_rows(task).items():
        idf = app.id_field.get(table)
        for r in rows:
            if idf and isinstance(r.get(idf), str):
                out[r[idf]] = (table, r)
    return out


def _undone(task: Task, app: AppView, *, created_only: bool) -> bool:
    written: set[Any] = set()  # the rows earlier writes passed: literal ids, or where in an earlier result an id was taken
    for call in task.oracle:
        spec = app.specs.get(call.tool)
        if spec is None:
            continue
        verb = call.tool.split("_")[0]
        undo = spec.kind == "delete" or (spec.mode == "write" and verb in _UNDO_VERBS)
        if (undo or (spec.mode == "write" and verb in _END_VERBS)) and any(_made(task, app, ref) for ref in call.refs.values()):
            return True
        if not created_only and spec.kind == "delete" and any(k in written for k in _row_keys(call)):
            return True
        if spec.mode == "write":
            written.update(_row_keys(call))
    return not created_only and _overwritten(task, app)


def _overwritten(task: Task, app: AppView) -> bool:
    """Whether a later call (an update, or a transition with values) sets a field of a row to another value than an
    earlier call of the chain gave it ("make a playlist called A ... then rename it to B"): the earlier effect is erased."""
    given: dict[tuple[Any, str], Any] = {}  # (row, field) -> the value an earlier create or update set it to from an argument
    for j, call in enumerate(task.oracle):
        spec = app.specs.get(call.tool)
        if spec is None or spec.kind not in ("create", "update", "transition"):
            continue
        ent = app.blueprint.entity(spec.entity)
        idf = ent.id_field
        if spec.kind == "create":
            row: Any = ("made", j)
        elif idf in call.refs:
            ref = call.refs[idf]
            row = ("made", ref.step) if _made(task, app, ref) else _ref_key(ref)
        else:
            row = call.args.get(idf)
        fields = {p.name: p.field.split(".", 1)[1] for p in spec.params if p.field and p.field.startswith(f"{ent.name}.")}
        for name, v in call.args.items():
            k = fields.get(name, name)
            if k == idf or not ent.has(k):
                continue
            if given.get((row, k), v) != v:  # the same person passed twice is no change
                return True
            given[(row, k)] = v
    return False


def _ref_key(ref: Ref) -> tuple[str, int, str, int | None]:
    """A row taken from an earlier result, named by where it was taken: (step, field, item)."""
    return ("ref", ref.step, ref.field, ref.item)


def _made(task: Task, app: AppView, ref: Ref) -> bool:
    """Whether ``ref`` takes the id of the row an earlier create made."""
    src = app.specs.get(task.oracle[ref.step].tool) if 0 <= ref.step < len(task.oracle) else None
    return src is not None and src.kind == "create" and ref.field == app.id_field.get(src.entity)


def _row_keys(call: Call) -> set[Any]:
    """What names a row in ``call``: its literal string arguments, and each ref as (step, field, item)."""
    keys: set[Any] = {v for v in call.args.values() if isinstance(v, str)}
    keys |= {_ref_key(r) for r in call.refs.values()}
    return keys


def _answer_in_question(task: Task, low: str) -> bool:
    answer = task.expected_answer
    if task.kind == "action" or answer is None or isinstance(answer, bool):
        return False
    values = answer if isinstance(answer, list) else [answer]
    if not values:
        return False
    stated = all(any(_mentions(low, form) for form in _forms(v)) for v in values)
    set_by_chain = any(
        v == answer for c in task.oracle for v in c.args.values() if not isinstance(v, bool) and not isinstance(answer, list)
    )
    return stated or set_by_chain


def _forms(value: Any) -> list[str]:
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        if isinstance(value, int) and abs(value) < 10:
            return []  # a single digit is too often part of a date or a count to call it stated
        forms = [str(value), f"{value:,}"]
        if isinstance(value, float):
            forms += [f"{value:.2f}", f"{value:,.2f}"]
        return forms
    if isinstance(value, str):
        forms = [value]
        try:
            d = date.fromisoformat(value[:10])
        except ValueError:
            return forms if len(value) >= 3 else []
        return [*forms, f"{d:%B} {d.day}, {d.year}"]
    return []


def _mentions(low: str, form: str) -> bool:
    form = form.lower()
    return bool(re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", low))


def _counter_descriptor(task: Task, app: AppView, low: str, rows: dict[str, tuple[str, dict[str, Any]]]) -> bool:
    for call in task.oracle:
        for value in call.args.values():
            hit = rows.get(value) if isinstance(value, str) else None
            if hit is None:
                continue
            table, row = hit
            ent = app.blueprint.entity(table)
            for f in ent.fields:
                money = f.type == "money" and ((table, f.name) in app.running or any(w in f.name for w in _TOTAL_WORDS))
                tally = f.type in _COUNTER_TYPES and any(w in f.name for w in _TOTAL_WORDS)
                counter = f.name in ent.never_describe or (f.name not in ent.known_by and (tally or money))
                v = row.get(f.name)
                if not counter or v is None or isinstance(v, bool):
                    continue
                amount = f"{v:.2f}" if isinstance(v, float) else str(v)
                if re.search(rf"\b{re.escape(_words(f.name))} \$?{re.escape(amount)}\b", low):
                    return True
    return False


def _connected(task: Task, app: AppView, rows: dict[str, tuple[str, dict[str, Any]]]) -> bool:
    steps = len(task.oracle)
    parent = list(range(steps))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for j, call in enumerate(task.oracle):
        for ref in call.refs.values():
            parent[find(j)] = find(ref.step)
        for key in _touched(call.args.values(), app, rows):
            if key in owner:
                parent[find(j)] = find(owner[key])
            else:
                owner[key] = j
    return len({find(i) for i in range(steps)}) == 1


def _touched(values: Iterable[Any], app: AppView, rows: dict[str, tuple[str, dict[str, Any]]]) -> set[str]:
    """Ids of the rows a call names, and of their parents."""
    out: set[str] = set()
    for value in values:
        hit = rows.get(value) if isinstance(value, str) else None
        if hit is None:
            continue
        out.add(value)
        table, row = hit
        out.update(row[f] for f in app.refs.get(table, []) if isinstance(row.get(f), str))
    return out
