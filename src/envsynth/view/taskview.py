"""One task as a person reviews it: request and scenario, visible tools, the rows of s0 it concerns, the oracle.

Shared by the HTML report's task pages and ``envsynth show``. Everything comes from the
stored task record and its app (blueprint and tool specs); trajectories come from run folders.

Distractor rows are stored by table, not by level, so their level is read off the rows the
way :mod:`envsynth.tasks.building.distractors` makes them: a row that copies a core row's facts but one
is a near-duplicate (``d3``), one sharing a core row's label is a namesake (``d2``), a row of
a table without core rows that refers to a core row is a decoy in a related table (``d4``),
anything else is a plain row of the same table (``d1``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from envsynth.blueprint.models import Blueprint, Entity
from envsynth.blueprint.spec import ToolSpec
from envsynth.tasks.model import Task

LEVELS = {
    "core": "a row the task concerns",
    "d1": "distractor: another row of the same table",
    "d2": "distractor: shares the name or title of a core row",
    "d3": "distractor: near-duplicate of a core row (one value changed)",
    "d4": "distractor: a related row of a core row (another order of the same customer)",
}
"""What each row level of a task view means."""


def _facts(ent: Entity) -> list[str]:
    return [f.name for f in ent.fields[1:] if f.type not in ("ref", "text") and not f.unique]


def distractor_level(bp: Blueprint, table: str, row: Mapping[str, Any], core: Mapping[str, list[dict[str, Any]]]) -> str:
    """The depth level (``d1``..``d4``) of a distractor row of ``table``, read off the core rows (see the module docstring)."""
    ent = bp.entity(table)
    own = core.get(table, [])
    facts = _facts(ent)
    for c in own:
        differ = [f for f in facts if row.get(f) != c.get(f)]
        if facts and len(differ) <= 1 and any(c.get(f) is not None for f in facts):
            return "d3"
    if ent.label and any(c.get(ent.label) is not None and c.get(ent.label) == row.get(ent.label) for c in own):
        return "d2"
    if not own:
        core_ids = {c.get(bp.entity(t).id_field) for t, rows in core.items() for c in rows}
        if any(f.type == "ref" and row.get(f.name) in core_ids for f in ent.fields):
            return "d4"
    return "d1"


def task_rows(bp: Blueprint, task: Task) -> list[dict[str, Any]]:
    """The rows of the task's s0, core rows first: ``{"table", "level", "row"}`` (level ``core`` or ``d1``..``d4``)."""
    core = task.state.core
    out = [{"table": t, "level": "core", "row": dict(r)} for t, rows in core.items() for r in rows]
    for table, rows in task.state.distractors.items():
        out += [{"table": table, "level": distractor_level(bp, table, r, core), "row": dict(r)} for r in rows]
    return out


def _tool(spec: ToolSpec | None, name: str) -> dict[str, Any]:
    if spec is None:
        return {"name": name, "mode": "", "kind": "", "entity": "", "description": ""}
    return {"name": name, "mode": spec.mode, "kind": spec.kind, "entity": spec.entity, "description": spec.description}


def _attempt(rec: Mapping[str, Any]) -> dict[str, Any]:
    reward = rec.get("reward", {})
    return {
        "attempt": rec.get("attempt", 0),
        "agent": rec.get("agent", ""),
        "model": rec.get("model", ""),
        "score": float(reward.get("score", 0.0)),
        "passed": bool(reward.get("passed", False)),
        "breakdown": list(reward.get("breakdown", [])),
        "stop_reason": rec.get("stop_reason", ""),
        "turns": rec.get("turns", 0),
        "answer": rec.get("answer"),
        "error": rec.get("error"),
        "messages": list(rec.get("messages", [])),
    }


def task_view(
    task: Task, blueprint: Blueprint, specs: Iterable[ToolSpec], runs: Mapping[str, Iterable[Mapping[str, Any]]] | None = None
) -> dict[str, Any]:
    """Plain data of one task for display.

    Args:
        task: the task record.
        blueprint: its app's blueprint; specs: its app's tool specs.
        runs: run label -> that run's trajectory records of this task (any order).

    Returns:
        ``id``, ``app``, ``kind``, ``instruction``, ``scenario`` (dict or None), ``user``, ``policy``,
        ``clarify`` (the facts a must-ask task's user must be asked for, empty for others),
        ``chain_length``, ``visible_tools`` (name, mode, kind, entity, description), ``rows`` (see
        :func:`task_rows`), ``level_counts``, ``oracle_program``, ``expected_answer``,
        ``expected_effects`` and ``runs`` (label -> attempts sorted by attempt: score, passed,
        reward breakdown, stop reason, messages...).
    """
    by_name = {s.name: s for s in specs}
    rows = task_rows(blueprint, task)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["level"]] = counts.get(r["level"], 0) + 1
    return {
        "id": task.id,
        "app": task.app,
        "kind": task.kind,
        "instruction": task.instruction,
        "scenario": task.scenario.model_dump() if task.scenario else None,
        "user": task.user.model_dump(),
        "policy": task.policy.model_dump() if task.policy else None,
        "clarify": list(task.clarify),
        "chain_length": int(task.stats.get("chain_length", len(task.oracle))),
        "difficulty": task.difficulty,
        "tier": task.tier,
        "constructs": list(task.constructs),
        "visible_tools": [_tool(by_name.get(n), n) for n in task.visible_tools],
        "rows": rows,
        "level_counts": dict(sorted(counts.items())),
        "oracle_program": task.oracle_program,
        "expected_answer": task.expected_answer,
        "expected_effects": task.expected_effects,
        "runs": {label: sorted((_attempt(r) for r in recs), key=lambda a: a["attempt"]) for label, recs in (runs or {}).items()},
    }
