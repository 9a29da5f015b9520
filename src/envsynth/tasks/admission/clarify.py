"""A variant stage: the request leaves out a value the agent needs, which the user tells when asked (a must-ask task).

"Update my contact details; my new phone is +1-473-787-5286" becomes "Update my contact
details; I'll tell you my new phone when you ask": the scenario knows the value ("my new
phone is +1-473-787-5286"), the task lists it in ``clarify``, and the episode of the task
offers ``ask_user``, which answers with it. The oracle keeps its calls (it knows the value);
the reward's ``clarification`` part passes only when the agent asked before its first write
(:func:`envsynth.grading.grade.clarification_part`). Registered in
:data:`envsynth.tasks.synth.VARIANTS`; the varied task is admitted again on its state.

The value left out is one the request gives after its phrase ("; the new X is V", the last
of such values, see ``Phraser._left_out_values``), stated once in the request and passed to a
write by the oracle; a task is varied when its seed picks it (1 in :data:`SHARE` of those that
can be), so the choice is the same in every state of the task.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Any

from envsynth.runtime.app import App
from envsynth.tasks.admission.admit import Admitted
from envsynth.tasks.model import Rejection, Task
from envsynth.tasks.wording.words import param_value

SHARE = 3
"""One in this many tasks that can leave a value out does (chosen by the task's seed)."""

_WORDS = r"(?:(?! and | is | are )[^;,.?!\"])+?"  # a field's words: no clause break, no other value's "is"


def ask_for_value(app: App, admitted: Admitted) -> Admitted | Rejection:
    """``admitted`` as a must-ask task when its seed picks it and its request gives a value it can leave out, else as is."""
    task = admitted.task
    if task.kind == "info" or task.clarify or task.scenario is None or "conditional" in task.stats:
        return admitted  # a conditional goal's telling states have no write: their requests must stay one
    if random.Random(f"clarify:{task.seed}").randrange(SHARE):
        return admitted
    found = _left_out(app, task)
    if found is None:
        return admitted
    start, end, fact, words = found
    return replace(admitted, task=_without(task, start, end, fact, words))  # sealed after the last variant (admission.vary)


def _left_out(app: App, task: Task) -> tuple[int, int, str, str] | None:
    """(where the words to drop start and end in the instruction, the fact the user tells, the field's words) of the
    first value the request can leave out, or None."""
    text = task.instruction
    for call in task.oracle:
        spec = app.spec_by_name[call.tool]
        if spec.mode != "write":
            continue
        for name, value in call.args.items():
            if not _tellable(value) or name in ("limit", "offset"):
                continue
            said = param_value(spec, app.blueprint, name, value)
            if len(said) < 2 or text.count(said) != 1 or _known_elsewhere(task, said) or _is_answer(task, value):
                continue
            found = _fragment(text, said)
            if found is not None:
                return found
    return None


def _tellable(value: Any) -> bool:
    """Whether ``value`` is one a person states in words (a text, a number or a date; not a yes or no, a list or none)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _known_elsewhere(task: Task, said: str) -> bool:
    """Whether the scenario states ``said`` besides the request (then leaving it out of the request hides nothing)."""
    scenario = task.scenario
    return scenario is not None and any(said in k for k in [*scenario.knows, *scenario.identity, scenario.reason or ""])


def _is_answer(task: Task, value: Any) -> bool:
    """Whether ``value`` is the answer the request asks for (a mixed task): the user cannot tell it."""
    return task.expected_answer is not None and value == task.expected_answer


def _fragment(text: str, said: str) -> tuple[int, int, str, str] | None:
    """Where "the new X is V" (V being ``said``) stands in ``text`` as the last value given after a phrase (after "; " or
    " and ", no other value after it): (start, end, "the new X is V", "the new X"), or None."""
    pattern = re.compile(rf"(?:; | and )((?:the|my) (?:new )?{_WORDS}) (?:is|are) {re.escape(said)}(?!,? and |, (?:the|my|make) )")
    hits = list(pattern.finditer(text))
    if len(hits) != 1:
        return None
    hit = hits[0]
    fact = text[hit.start(1) : hit.end()]
    return hit.start(1), hit.end(), fact, hit.group(1)


def _without(task: Task, start: int, end: int, fact: str, words: str) -> Task:
    """``task`` whose request says it will tell ``words`` when asked instead of ``fact``, the scenario knowing the fact."""
    text = task.instruction
    promise = f"I'll tell you {words} when you ask"
    if text[end : end + 1] == "?":  # "Can you update it; the new name is X?": the question first, then the promise
        before = _last_joined(text[:start].rstrip().removesuffix(";").removesuffix(" and"))
        instruction = f"{before}? {promise[0].upper()}{promise[1:]}.{text[end + 1 :]}"
    else:
        instruction = f"{text[:start]}{promise}{text[end:]}"
    scenario = task.scenario
    if scenario is not None:
        scenario = scenario.model_copy(update={"request": instruction, "knows": [*scenario.knows, fact]})
    user = task.user.model_copy(update={"knows": [instruction, *task.user.knows[1:]]})
    return task.model_copy(update={"instruction": instruction, "scenario": scenario, "user": user, "clarify": [fact]})


def _last_joined(text: str) -> str:
    """``text`` whose list of values after its "; " ends in " and " again ("the new street is X, the new city is Y" ->
    "the new street is X and the new city is Y"), once the last value was taken from it."""
    head, sep, values = text.rpartition("; ")
    first, comma, last = values.rpartition(", ")
    return f"{head}{sep}{first} and {last}" if sep and comma else text


def user_answer(task: Task) -> str:
    """What the user says when asked: the facts of ``task.clarify``, as sentences ('' for a task that needs none)."""
    return " ".join(f"{f[0].upper()}{f[1:]}." for f in task.clarify)
