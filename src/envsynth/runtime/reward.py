"""Rule-based reward: the agent's effects on the initial state must equal the oracle's.

Effects are what turns the initial state ``s0`` into a final state: existing rows by primary
key (``updated`` ``{pk: {field: new_value}}``, ``deleted``) and new rows (``added``), a sorted
multiset of contents whose own id is dropped and whose references to other *new* rows become
``<new TABLE #digest>`` (a hash of that row's normalised content), so generated ids never
matter; references to existing rows keep their ids. Identical new rows are interchangeable.
Written datetimes come from the episode clock; ``datetimes="now"`` (default) turns those equal
to the episode's now into ``<now>``, ``"ignore"`` turns all into ``<datetime>``, ``"keep"``
keeps them. Numbers compare within 0.005. Reads make no effects and call order never matters.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.runtime.answers import AnswerSpec, AnswerVerdict, match_answer
from envsynth.runtime.episode import short_repr
from envsynth.runtime.parts import ALL, Part, ScoreRule
from envsynth.runtime.state import Rows, diff_rows, open_state, read_rows

TOLERANCE = 0.005
DatetimeMode = Literal["keep", "now", "ignore"]
MismatchKind = Literal[
    "missing_update", "wrong_value", "extra_update", "missing_row", "extra_row",
    "missing_delete", "extra_delete", "wrong_answer", "missing_answer", "policy_violation", "not_communicated",
    "not_clarified",
]  # fmt: skip


_CANON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)  # what json.dumps would build per call


def _canon(data: Any) -> str:
    return _CANON.encode(data)


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _same(a: Any, b: Any) -> bool:
    """Equality, numbers within the tolerance."""
    if isinstance(a, str) or a is None:  # the common case, not a number
        return bool(a == b)
    return abs(a - b) <= TOLERANCE + 1e-9 if _num(a) and _num(b) else bool(a == b)


def _fmt(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    return repr(v) if isinstance(v, str) else "null" if v is None else str(v)


@dataclass(frozen=True)
class TableEffects:
    """Effects on one table.

    Attributes:
        updated: ``{pk: {field: new_value}}`` for existing rows that changed.
        deleted: primary keys of removed rows, sorted.
        added: normalised contents of new rows, sorted by canonical JSON (a multiset).
        previous: ``{pk: {field: old_value}}`` of updated fields; only used in messages,
            not part of equality or hashing.
    """

    updated: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: tuple[str, ...] = ()
    added: tuple[dict[str, Any], ...] = ()
    previous: dict[str, dict[str, Any]] = field(default_factory=dict, compare=False, repr=False)

    def __bool__(self) -> bool:
        return bool(self.updated or self.deleted or self.added)

    def __hash__(self) -> int:
        return hash(_canon(self.content()))

    def content(self) -> dict[str, Any]:  # what equality and hashing see
        return {"updated": self.updated, "deleted": list(self.deleted), "added": list(self.added)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.content(), "previous": self.previous}


_NO_EFFECTS = TableEffects()  # a table without effects (never modified)


@dataclass(frozen=True)
class Effects:
    """Effects per table (tables without effects omitted); hashable by content, JSON via to_dict/from_dict."""

    tables: dict[str, TableEffects] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.tables.values())

    def __hash__(self) -> int:
        return hash(self.digest)

    @property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON content (without ``previous``)."""
        return hashlib.sha256(_canon({t: e.content() for t, e in self.tables.items() if e}).encode()).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {t: e.to_dict() for t, e in sorted(self.tables.items()) if e}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Effects:
        conv: dict[str, Any] = {"deleted": tuple, "added": tuple}
        return cls({t: TableEffects(**{k: conv.get(k, dict)(v) for k, v in d.items()}) for t, d in data.items()})


def _normalised_fields(bp: Blueprint) -> tuple[dict[str, dict[str, FieldDef | None]], dict[str, tuple[str, ...]]]:
    """Per table: each field name to its definition when its values are normalised (a ref or a
    datetime) else None, and the names of the fields a new row's content holds (all but the id).

    Kept on the blueprint's index (it is frozen).
    """
    return bp.index.of(_build_normalised_fields, bp)


def _build_normalised_fields(bp: Blueprint) -> tuple[dict[str, dict[str, FieldDef | None]], dict[str, tuple[str, ...]]]:
    return (
        {e.name: {f.name: f if f.type in ("ref", "datetime") else None for f in e.fields} for e in bp.entities},
        {e.name: tuple(f.name for f in e.fields[1:]) for e in bp.entities},
    )


def _rows(bp: Blueprint, state: Rows | sqlite3.Connection | bytes) -> Rows:
    if isinstance(state, bytes):
        with contextlib.closing(open_state(state)) as conn:
            return read_rows(conn, bp)
    return read_rows(state, bp) if isinstance(state, sqlite3.Connection) else state


def effects_of(
    bp: Blueprint, before: Rows | sqlite3.Connection | bytes, after: Rows | sqlite3.Connection | bytes, *,
    now: str | None = None, datetimes: DatetimeMode = "now",
) -> Effects:  # fmt: skip
    """The effects that turn ``before`` (the initial state) into ``after``.

    Args:
        bp: the app's blueprint.
        before: the initial state, as Rows (:func:`read_rows`), a connection or state bytes.
        after: the final state, in any of the same forms.
        now: the episode clock; defaults to the app clock, noon on ``bp.reference_date``.
        datetimes: normalisation of written datetime values (see the module docstring).

    Returns:
        The normalised :class:`Effects`.
    """
    now = now or f"{bp.reference_date}T12:00:00"
    diffs = diff_rows(bp, _rows(bp, before), _rows(bp, after))
    special, content_fields = _normalised_fields(bp)
    memo: dict[tuple[str, Any], dict[str, Any]] = {}

    def norm(table: str, name: str, v: Any, visiting: frozenset[tuple[str, Any]] = frozenset()) -> Any:
        f = special[table][name]
        if f is None:  # neither a ref nor a datetime
            return v
        if f.type == "ref":
            if f.ref in diffs and v in diffs[f.ref].added:
                target = (f.ref, v)
                if target in visiting:  # a cycle of new rows: cut it
                    return f"<new {f.ref} (cycle)>"
                sub = {k: round(x, 2) if isinstance(x, float) else x for k, x in content(target, visiting | {target}).items()}
                return f"<new {f.ref} #{hashlib.sha256(_canon(sub).encode()).hexdigest()[:10]}>"
            return v
        if v is None or datetimes == "keep":
            return v
        return "<datetime>" if datetimes == "ignore" else "<now>" if v == now else v

    def content(key: tuple[str, Any], visiting: frozenset[tuple[str, Any]]) -> dict[str, Any]:
        if key not in memo:
            table = key[0]
            row = diffs[table].added[key[1]]
            memo[key] = {name: norm(table, name, row.get(name), visiting) for name in content_fields[table]}
        return memo[key]

    tables: dict[str, TableEffects] = {}
    for t, d in diffs.items():
        real = {str(pk): {c: ch for c, ch in sorted(chs.items()) if not _same(*ch)} for pk, chs in sorted(d.changed.items())}
        updated = {pk: {c: norm(t, c, new) for c, (_, new) in r.items()} for pk, r in real.items() if r}
        previous = {pk: {c: old for c, (old, _) in r.items()} for pk, r in real.items() if r}
        added = [content((t, pk), frozenset({(t, pk)})) for pk in d.added]
        if len(added) > 1:  # (the sort key is costly)
            added.sort(key=_canon)
        tables[t] = TableEffects(updated, tuple(sorted(map(str, d.removed))), tuple(added), previous)
    return Effects({t: te for t, te in tables.items() if te})


@dataclass(frozen=True)
class Mismatch:
    """One difference between the expected and the actual outcome."""

    kind: MismatchKind
    message: str
    table: str | None = None
    key: str | None = None
    field: str | None = None
    expected: Any = None
    actual: Any = None


@dataclass(frozen=True)
class Reward:
    """The verdict: ``score`` from its parts under the score rule, with the reasons.

    Attributes:
        score: 1.0 or 0.0 under the default rule (every part passes); a weighted share under
            a weighted rule.
        breakdown: every difference from the ground truth, as :class:`Mismatch` records.
        parts: the reward's parts (``state``, ``answer``, ``policy``, ``communication``,
            ``clarification``: those that apply to the task), each passed or not with its reason.
        answer: the verdict on the answer (what was read out of it and why it matched or not),
            for a task that asks a question.
        rule: the score rule that made ``score``.
    """

    score: float
    breakdown: tuple[Mismatch, ...] = ()
    parts: tuple[Part, ...] = ()
    answer: AnswerVerdict | None = None
    rule: ScoreRule = ALL

    @property
    def passed(self) -> bool:
        """Every part passed (under any score rule)."""
        return self.score == 1.0 if not self.parts else all(p.passed for p in self.parts)

    @property
    def feedback(self) -> str:
        """The mismatch messages, one per line ('' when passed)."""
        return "\n".join(m.message for m in self.breakdown)

    def part(self, name: str) -> Part | None:
        """The part called ``name``, or None when it does not apply."""
        return next((p for p in self.parts if p.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"score": self.score, "passed": self.passed, "breakdown": [asdict(m) for m in self.breakdown]}
        out["parts"] = {p.name: p.to_dict() for p in self.parts}
        out["rule"] = self.rule.to_dict()
        if self.answer is not None:
            out["answer"] = self.answer.to_dict()
        return out

    def rescored(self, rule: ScoreRule, extra: tuple[Part, ...] = ()) -> Reward:
        """This reward with ``extra`` parts added and scored again under ``rule``."""
        parts = (*self.parts, *extra)
        more = tuple(Mismatch("not_communicated", p.detail) for p in extra if p.name == "communication" and not p.passed)
        more += tuple(Mismatch("policy_violation", p.detail) for p in extra if p.name == "policy" and not p.passed)
        more += _not_clarified(extra)
        return Reward(rule.score(parts), (*self.breakdown, *more), parts, self.answer, rule)


def _compare_table(t: str, exp: TableEffects, act: TableEffects) -> list[Mismatch]:
    out: list[Mismatch] = []
    if exp.updated or act.updated:
        for pk in sorted(exp.updated.keys() | act.updated.keys()):
            e, a = exp.updated.get(pk, {}), act.updated.get(pk, {})
            for f in sorted(e.keys() | a.keys()):
                if f not in a:
                    old = exp.previous.get(pk, {}).get(f)
                    was = f"is still {_fmt(old)}" if f in exp.previous.get(pk, {}) else "was not changed"
                    out.append(Mismatch("missing_update", f"{t} {pk}: {f} {was}, expected {_fmt(e[f])}", t, pk, f, e[f], old))
                elif f not in e:
                    old = act.previous.get(pk, {}).get(f)
                    msg = f"extra write: {t} {pk} {f} changed from {_fmt(old)} to {_fmt(a[f])}"
                    out.append(Mismatch("extra_update", msg, t, pk, f, old, a[f]))
                elif not _same(e[f], a[f]):
                    out.append(Mismatch("wrong_value", f"{t} {pk}: {f} is {_fmt(a[f])}, expected {_fmt(e[f])}", t, pk, f, e[f], a[f]))
    if exp.deleted or act.deleted:
        exp_deleted, act_deleted = set(exp.deleted), set(act.deleted)
        out += [Mismatch("missing_delete", f"{t} {pk} should have been deleted", t, pk) for pk in sorted(exp_deleted - act_deleted)]
        out += [Mismatch("extra_delete", f"extra write: {t} {pk} was deleted", t, pk) for pk in sorted(act_deleted - exp_deleted)]
    left = list(act.added)
    for row in exp.added:
        hit = next((i for i, r in enumerate(left) if r.keys() == row.keys() and all(_same(row[k], r[k]) for k in row)), None)
        if hit is None:
            out.append(Mismatch("missing_row", f"missing new {t} row {_fmt(row)}", t, expected=row))
        else:
            left.pop(hit)
    out += [Mismatch("extra_row", f"extra write: new {t} row {_fmt(r)} was created", t, actual=r) for r in left]
    return out


def answers_match(expected: Any, answer: Any, spec: AnswerSpec | None = None) -> bool:
    """Whether ``answer`` gives ``expected`` as a person would accept it (see :mod:`envsynth.runtime.answers`)."""
    return match_answer(expected, answer, spec).matched


def _cut(text: str, size: int = 500) -> str:
    """``text`` or, when longer than ``size``, its start and end around an ellipsis."""
    return text if len(text) <= size else f"{text[: size // 2]}...{text[-size // 2 :]}"


def _answer_text(answer: Any) -> tuple[Any, str]:
    """The agent's answer as the breakdown keeps it and as its message shows it.

    An answer JSON cannot encode (nested too deeply, an integer too long to print) is kept
    as its shortened ``repr``: scoring never fails on what an agent answered.
    """
    if isinstance(answer, str):
        return answer, answer
    try:
        return answer, _canon(answer)
    except (ValueError, RecursionError):
        text = short_repr(answer)
        return text, text


def compare(
    expected: Effects, actual: Effects, *, expected_answer: Any = None, answer: Any = None, spec: AnswerSpec | None = None,
    extra: tuple[Part, ...] = (), rule: ScoreRule = ALL,
) -> Reward:  # fmt: skip
    """Score the actual effects (and answer) against the expected ones.

    Args:
        expected: the oracle's effects.
        actual: the agent's effects on the same initial state.
        expected_answer: the answer an information-seeking task needs (str, number,
            list or dict); None when no answer is required (then ``answer`` is ignored).
        answer: the agent's final answer (a value, or a sentence holding it).
        spec: what kind of value the answer is (:func:`envsynth.grading.spec.answer_spec`);
            None: read from the expected value alone.
        extra: further parts of the reward (policy, communication, clarification), scored with the others.
        rule: how the parts make the score (default: every part must pass).

    Returns:
        A :class:`Reward` with its parts (``state``, and ``answer`` when one is expected, then
        ``extra``), the score ``rule`` gives them, and every mismatch in the breakdown.
    """
    out: list[Mismatch] = []
    for t in sorted(expected.tables.keys() | actual.tables.keys()):
        out += _compare_table(t, expected.tables.get(t, _NO_EFFECTS), actual.tables.get(t, _NO_EFFECTS))
    parts = [_state_part(out)]
    verdict = None
    if expected_answer is not None:
        want = expected_answer if isinstance(expected_answer, str) else _canon(expected_answer)
        verdict = match_answer(expected_answer, answer, spec)
        if not verdict.matched:
            if answer is None or (isinstance(answer, str) and not answer.strip(_EDGE)):
                out.append(Mismatch("missing_answer", f"no answer given, expected '{want}'", expected=expected_answer))
            else:
                kept, text = _answer_text(answer)
                msg = f"answer '{_cut(text)}' does not match expected '{want}': {verdict.reason}"
                out.append(Mismatch("wrong_answer", msg, expected=expected_answer, actual=kept))
        parts.append(Part("answer", verdict.matched, verdict.reason))
    parts += extra
    out += [Mismatch("policy_violation", p.detail) for p in extra if p.name == "policy" and not p.passed]
    out += [Mismatch("not_communicated", p.detail) for p in extra if p.name == "communication" and not p.passed]
    out += _not_clarified(extra)
    return Reward(rule.score(parts), tuple(out), tuple(parts), verdict, rule)


def _not_clarified(parts: tuple[Part, ...]) -> tuple[Mismatch, ...]:
    """The breakdown's entry of a failed clarification part (the agent wrote before asking), if any."""
    return tuple(Mismatch("not_clarified", p.detail) for p in parts if p.name == "clarification" and not p.passed)


_EDGE = "\"'`.,;:!?()[]{}<> \t\n"


def _state_part(mismatches: list[Mismatch]) -> Part:
    if not mismatches:
        return Part("state", True, "the final state has exactly the expected changes")
    first = mismatches[0].message
    more = f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""
    return Part("state", False, f"{first}{more}")
