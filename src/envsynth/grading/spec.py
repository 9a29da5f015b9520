"""The :class:`~envsynth.runtime.answers.AnswerSpec` of a task: what kind of value its answer is, from the app.

The answer of an information task is a field of its answer step's result: a field of a row (its
type, an enum's values, the field's words), the ``total`` of a search (a count), or the value of an
aggregate (a count, or a sum, average, minimum or maximum of a field, with that field's type).
The other values of that field in the task's state are the pool an answer that lists candidates
names. Kept per task (a small cache keyed by the task's hash): an episode's grading reads it once.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from envsynth.runtime.answerpath import group_of
from envsynth.runtime.answers import AnswerKind, AnswerSpec, spec_for

if TYPE_CHECKING:
    from envsynth.blueprint.models import Entity, FieldDef
    from envsynth.runtime.app import App
    from envsynth.tasks.model import Task

_KINDS: dict[str, AnswerKind] = {
    "money": "money",
    "int": "int",
    "quantity": "int",
    "float": "number",
    "date": "date",
    "datetime": "datetime",
    "enum": "enum",
    "state": "enum",
    "bool": "bool",
}
_UNIT = re.compile(r"(?:^|_)(hours|minutes|seconds|days|weeks|months|years|kg|km|miles|points|percent|calories|kwh|mb|gb)(?:_|$)")
_CACHE: OrderedDict[tuple[str, str], AnswerSpec] = OrderedDict()
_CACHE_SIZE = 8192


def answer_spec(app: App, task: Task) -> AnswerSpec:
    """The spec of ``task``'s expected answer (a spec from the value alone when the app does not say more)."""
    key = (app.name, task.hash or task.id)
    hit = _CACHE.get(key)
    if hit is None:
        hit = _build(app, task)
        _CACHE[key] = hit
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return hit


def _build(app: App, task: Task) -> AnswerSpec:
    expected = task.expected_answer
    base = spec_for(expected)
    request = task.instruction
    if task.answer_step is None or task.answer_field is None or task.answer_step >= len(task.oracle):
        return _with(base, request=request)
    spec = app.spec_by_name.get(task.oracle[task.answer_step].tool)
    if spec is None:
        return _with(base, request=request)
    bp = app.blueprint
    try:
        ent = bp.entity(spec.entity)
    except KeyError:
        return _with(base, request=request)
    name = task.answer_field
    group = group_of(name)
    q = spec.query
    if q is not None and q.op == "aggregate" and (group is not None or name == "value"):
        if q.agg == "count":
            return AnswerSpec("count", request=request)
        f = _field(ent, q.field)
        if f is None:
            return _with(base, request=request)
        spec = _numeric(f, base, request)
        return _with(spec, kind="number") if q.agg == "avg" and spec.kind == "int" else spec  # an average of whole numbers is not one
    if name in ("total", "count") and isinstance(expected, int) and not isinstance(expected, bool):
        return AnswerSpec("count", request=request)
    f = _field(ent, name)
    if f is None:
        return _with(base, request=request)
    return field_spec(f, expected, pool=_pool(task, ent.name, f.name), request=request)


def field_spec(f: FieldDef, expected: Any, pool: tuple[Any, ...] = (), request: str = "") -> AnswerSpec:
    """The spec of an answer that is a value of field ``f``: its kind, an enum's values, a bool's phrases, a
    number's unit; ``pool`` (the field's other values in the state) for a text value."""
    kind = _KINDS.get(f.type)
    if kind is None:
        return AnswerSpec("text", pool=pool, request=request) if isinstance(expected, str) else _with(spec_for(expected), request=request)
    if kind == "enum":
        return AnswerSpec("enum", choices=tuple(f.choices or ()), request=request)
    if kind == "bool":
        labels = {"true": (f.say_true,), "false": (f.say_false,)} if f.say_true and f.say_false else {}
        return AnswerSpec("bool", labels=labels, request=request)
    if kind in ("money", "int", "number"):
        return _numeric(f, spec_for(expected), request)
    return AnswerSpec(kind, request=request)


def _field(ent: Entity, name: str | None) -> FieldDef | None:
    if name is None or not ent.has(name):
        return None
    return ent.field(name)


def _numeric(f: FieldDef, base: AnswerSpec, request: str) -> AnswerSpec:
    kind = _KINDS.get(f.type, base.kind)
    if kind not in ("money", "int", "number"):
        kind = base.kind
    m = _UNIT.search(f.name)
    return AnswerSpec(kind, unit=m.group(1) if m else None, request=request)


def _pool(task: Task, table: str, name: str) -> tuple[Any, ...]:
    """The values of ``table.name`` in the task's state (core rows and distractors), once each."""
    values = [r.get(name) for part in (task.state.core, task.state.distractors) for r in part.get(table, [])]
    return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def _with(spec: AnswerSpec, **changes: Any) -> AnswerSpec:
    from dataclasses import replace

    return replace(spec, **changes)
