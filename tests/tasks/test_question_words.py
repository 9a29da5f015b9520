"""Questions and requests of synthesized catalogue tasks read like requests a person makes (issue 11).

Each test reads the real instructions of the first task indexes of a catalogue app (the same
coordinates as ``envsynth build OUT -T 40 -S 2 -D 4 --seed 0``; state 0, no distractors: the
words do not depend on them) and checks one way they used to read badly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import cache
from typing import Any
from unittest.mock import patch

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.model import Call
from envsynth.tasks.wording.questions import unfiltered

INDEXES = 48


@contextmanager
def _guesses_admitted() -> Iterator[None]:
    """Admission without the guessing baselines' refusal: these tests read how questions are worded, and many
    questions worth reading (a count of one flight, of one club with a pool) have an answer a guess would find."""
    with ExitStack() as stack:
        for target in ("admit.guessed_by", "admit.first_candidate_wins", "restate.constant_guess", "restate.first_candidate_wins"):
            stack.enter_context(patch(f"envsynth.tasks.admission.{target}", return_value=None))
        yield


@cache
def _synthesized(name: str) -> tuple[list[Task], list[Rejection]]:
    app = compile_app(catalog.load(name), 0)
    graph = build_graph(app)
    with _guesses_admitted():
        return _synthesize(app, graph, name)


def _synthesize(app: Any, graph: Any, name: str) -> tuple[list[Task], list[Rejection]]:
    tasks, rejected = [], []
    for t in range(INDEXES):
        out = synthesize(app, graph, app_index=catalog.names().index(name), task_index=t, states=1, depth=0, seed=0)
        if isinstance(out, Rejection):
            rejected.append(out)
        else:
            tasks.append(out[0])
    return tasks, rejected


def _texts(name: str) -> list[str]:
    return [t.instruction for t in _synthesized(name)[0]]


@pytest.mark.parametrize("name", ["relay_chat", "tempo_music", "juniper_goods"])
def test_no_question_counts_every_row_of_a_table(name: str) -> None:
    """ "Count the payments and tell me the number.": a count with no filter and no row it is about is not asked."""
    tasks, rejected = _synthesized(name)
    app = compile_app(catalog.load(name), 0)
    for task in tasks:
        if task.answer_step is None or (task.answer_field or "").startswith("groups["):  # one group of a grouped count: a filter
            continue
        call = task.oracle[task.answer_step]
        query = app.spec_by_name[call.tool].query
        if query is not None and query.op in ("search", "aggregate"):
            assert call.refs or any(v is not None for k, v in call.args.items() if k not in ("limit", "offset")), task.instruction
    # the rule is live: a count over every row is refused (the lists of one row's rows now name that row, see test_info_reads)
    every = next(t for t in tasks if t.answer_step is not None and app.spec_by_name[t.oracle[t.answer_step].tool].kind == "search")
    spec = app.spec_by_name[every.oracle[every.answer_step or 0].tool]
    assert unfiltered(spec, Call(tool=spec.name, args={p.name: None for p in spec.params}), "total")
    assert not any(r.reason == "question_without_filter" and r.detail == "list_channel_members" for r in rejected)


def test_a_date_range_reads_as_a_participle() -> None:
    """Not "the charges date of the charge on or after ...": "the charges made on or after ..."."""
    texts = _texts("northwind_bank") + _texts("peak_fitness") + _texts("relay_chat")
    labels = ("date of the charge", "date", "time sent", "start time", "date read", "transfer date", "time played")
    said = re.compile(r"with an? (\w+ )?$")  # "with a date on ...", "with a due date on or before ...": a noun, said as one
    bad = [t for t in texts for label in labels for m in re.finditer(rf"\b{label} (on|between) ", t) if not said.search(t[: m.start()])]
    assert not bad, bad
    assert any(re.search(r"charges (made|posted) on or (after|before) ", t) for t in texts)


def test_a_value_that_names_a_row_says_which_field_it_is_in_a_question() -> None:
    """Not 'How many flights are there "NS926" and on April 4 ...': 'with the flight number "NS926"'."""
    texts = _texts("northstar_air")
    assert not [t for t in texts if re.search(r'are there "', t)]
    assert any("with the flight number" in t for t in texts)


def test_conditions_read_as_one_phrase() -> None:
    """Not "clubs ... and that are pool", "tasks ... that are todo and that are low", "with a seats of at least 8"."""
    texts = _texts("peak_fitness") + _texts("taskboard") + _texts("northstar_air")
    assert not [t for t in texts if " and that are " in t or "that are pool" in t or "with a seats" in t]
    assert not [t for t in texts if re.search(r"Count the \w+.* and tell me the number", t)]
    assert any("with a pool" in t or "without a pool" in t for t in texts)


def test_field_words_take_the_verb_of_their_head_noun() -> None:
    """ "the estimate in hours is 4" (or "estimated at 4 hours"), never "the estimate in hours are 4"."""
    texts = _texts("taskboard")
    assert not [t for t in texts if "estimate in hours are" in t]
    assert any("estimate in hours is" in t or re.search(r"estimated at [\d.]+ hours?\b", t) for t in texts)


def test_the_requester_speaks_of_their_own_account_as_theirs() -> None:
    """Not "deactivate the account of my account" or "What is the job title of my account?"."""
    texts = _texts("taskboard") + _texts("relay_chat") + _texts("tempo_music")
    assert not [t for t in texts if re.search(r"\bthe (account|job title|role|hours per week|country) of my account\b", t)]
    assert any(re.search(r"\b(activate|deactivate|suspend) my account\b", t) for t in texts)


def test_a_say_slot_naming_a_bound_row_keeps_the_phrase() -> None:
    """relay_chat's leave_huddle says "take me out of {huddle}" (the huddle of the huddle spot): not "leave that huddle spot"."""
    tasks = _synthesized("relay_chat")[0]
    leaving = [t.instruction for t in tasks if any(c.tool == "leave_huddle" for c in t.oracle)]
    assert leaving
    assert not [t for t in leaving if "leave that huddle spot" in t or "leave the new huddle spot" in t]
    assert any("take me out of" in t for t in leaving)


def test_a_say_in_the_past_is_said_of_many_rows_in_the_plural() -> None:
    """ "How many texts are there that were delivered?", not "... that wa delivered" (a say of one row, "that was {value}",
    had its "s" cut like "that costs" -> "that cost")."""
    from envsynth.tasks.wording.questions import _plural_say

    assert _plural_say("that was {value}") == "that were {value}"
    assert _plural_say("who was {value}") == "who were {value}"
    assert _plural_say("who has {value}") == "who have {value}"
    assert _plural_say("that costs {value}") == "that cost {value}"
