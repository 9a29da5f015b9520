"""Difficulty: a score from what makes a task hard, its tier, and the constructs it uses.

Every admitted task is rated here (:func:`rated`) before it is sealed. The score adds up what an
agent has to get right: each oracle call, each write, each further row a write changes, each row
it must pick out of a search result, the confusable distractor rows it must tell apart, and a
bonus per construct (a computed answer, a question asked with an action, a policy rule, a
refusal, several rows of one table). The tier cuts the score at fixed points, so tiers mean the
same thing in every corpus: ``easy`` below :data:`MEDIUM`, ``hard`` from :data:`HARD` up.

``envsynth build --difficulty`` steers a corpus's mix of tiers (:mod:`envsynth.corpus.difficulty`),
and ``envsynth export rl`` orders or filters rows by the score (curricula). docs/tasks.md lists the
weights.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, get_args

from envsynth.tasks.model import Tier

if TYPE_CHECKING:
    from envsynth.runtime.app import App
    from envsynth.tasks.model import Task

TIERS: tuple[Tier, ...] = get_args(Tier)

MEDIUM = 5.0
"""The lowest score of a medium task."""
HARD = 8.0
"""The lowest score of a hard task."""

CALL = 1.0  # per oracle call
WRITE = 1.0  # per write, on top of its call
ROW = 1.0  # per changed row beyond one per write
PICK = 0.5  # per row picked out of a search result
DISTRACTORS_PER_POINT = 8  # confusable distractor rows worth one point
DISTRACTOR_CAP = 2.0
BONUS: dict[str, float] = {
    "computed": 1.5,  # an aggregate's value (a sum, an average), not a field read off a row
    "count": 0.5,  # how many rows meet the request's criteria
    "question_and_action": 1.0,  # an answer and an effect in one request
    "multi_row": 1.0,  # several rows of one table change
    "for_each": 0.5,  # the same write on every row a search lists ("cancel all my pending orders")
    "conditional": 1.5,  # the outcome depends on the row's state: look before acting (act in one state, tell in another)
    "comparison": 1.0,  # a row named as the most recent or oldest of its owner's: list them, compare, pick
    "multi_goal": 1.0,  # a further goal in the same request: keep track of what is done and what is left
    "policy": 1.0,  # a rule of the app's policy governs the outcome
    "refusal": 2.0,  # part of the request must be refused under that rule
    "clarification": 1.5,  # the request leaves out a value the user must be asked for before writing
}
"""The score a construct adds (constructs without an entry add nothing on their own: their calls count)."""


def constructs(app: App, task: Task) -> list[str]:
    """The constructs ``task`` uses, in a fixed order (docs/tasks.md, "Difficulty")."""
    out: list[str] = []
    if _picks(task):
        out.append("lookup")
    if task.answer_step is not None:
        query = getattr(app.spec_by_name[task.oracle[task.answer_step].tool], "query", None)
        if query is not None and query.op == "aggregate":
            out.append("computed")
        elif task.answer_field == "total":
            out.append("count")
    if task.kind == "mixed":
        out.append("question_and_action")
    if _writes(app, task) >= 2:
        out.append("multi_write")
    if any(n >= 2 for n in _changed_rows(task.expected_effects).values()):
        out.append("multi_row")
    if for_each(task):
        out.append("for_each")
    if "conditional" in task.stats:
        out.append("conditional")
    if "comparison" in task.stats:
        out.append("comparison")
    if task.stats.get("goals", 1) > 1:
        out.append("multi_goal")
    if task.state.distractors:
        out.append("distractors")
    if task.policy is not None:
        out.append("policy")
        if task.policy.refusal:
            out.append("refusal")
    if task.clarify:
        out.append("clarification")
    return out


def factors(app: App, task: Task) -> dict[str, float]:
    """The parts of the score, by name (they add up to :func:`score`)."""
    writes = _writes(app, task)
    changed = sum(_changed_rows(task.expected_effects).values())
    distractors = sum(len(rows) for rows in task.state.distractors.values())
    used = constructs(app, task)
    return {
        "calls": CALL * len(task.oracle),
        "writes": WRITE * writes,
        "rows": ROW * max(0, changed - writes),
        "picks": PICK * _picks(task),
        "distractors": min(DISTRACTOR_CAP, distractors / DISTRACTORS_PER_POINT),
        "constructs": sum(BONUS.get(c, 0.0) for c in used),
    }


def score(app: App, task: Task) -> float:
    """The difficulty score of ``task``, rounded to 0.01."""
    return round(sum(factors(app, task).values()), 2)


def tier_of(difficulty: float) -> Tier:
    """The tier of a score: easy below :data:`MEDIUM`, medium below :data:`HARD`, else hard."""
    if difficulty < MEDIUM:
        return "easy"
    return "medium" if difficulty < HARD else "hard"


def rated(app: App, task: Task) -> Task:
    """``task`` carrying its difficulty, tier and constructs (not sealed: the caller seals it)."""
    difficulty = score(app, task)
    return task.model_copy(update={"difficulty": difficulty, "tier": tier_of(difficulty), "constructs": constructs(app, task)})


def _writes(app: App, task: Task) -> int:
    return sum(app.spec_by_name[c.tool].mode == "write" for c in task.oracle)


def _picks(task: Task) -> int:
    """How many arguments of the oracle take a row out of a search result's items."""
    return sum(r.item is not None for c in task.oracle for r in c.refs.values())


def _changed_rows(effects: dict[str, Any]) -> dict[str, int]:
    """Rows changed per table in a task's expected effects (updated, added and deleted)."""
    return {t: len(e.get("updated", {})) + len(e.get("added", [])) + len(e.get("deleted", [])) for t, e in effects.items()}


def for_each(task: Task) -> bool:
    """Whether two or more calls of one tool act on items of one search's result (a for-each goal)."""
    seen: dict[tuple[str, int], set[int]] = {}
    for call in task.oracle:
        for ref in call.refs.values():
            if ref.item is not None:
                seen.setdefault((call.tool, ref.step), set()).add(ref.item)
    return any(len(items) >= 2 and sum(c.tool == tool for c in task.oracle) >= 2 for (tool, _), items in seen.items())
