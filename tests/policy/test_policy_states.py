"""Refusal tasks with several initial states (docs/tasks.md, policy tasks): every state of a task index
gets the same forbidden request, on its own copy of the row, and scores as a one-state refusal does."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from envsynth import load_blueprint
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.tasks.admission.policy import oracle_plus_forbidden, requester_key
from envsynth.tasks.model import Task
from envsynth.tasks.state import merged
from replay_helpers import play

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("policy_states") / "corpus"
    build_corpus(
        out, blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=24, states=2, distractors=2, seed=0
    )  # 24 task indexes: about 10 hold a policy
    return load_corpus(out)


def test_two_state_refusals_share_the_request_and_score_like_one_state_ones(corpus: Corpus) -> None:
    by_index: dict[int, list[Task]] = defaultdict(list)
    for t in corpus.tasks:
        by_index[t.coordinates.task].append(t)
    refusing = [ts for ts in by_index.values() if any(t.policy and t.policy.refusal for t in ts)]
    involved = [ts for ts in by_index.values() if any(t.policy for t in ts)]
    assert refusing and 3 * len(refusing) >= len(involved), (
        len(refusing),
        len(involved),
    )  # 6 of 11 task indexes (16 indexes gave 2 of 5 to 2 of 7, too few to measure a share)
    # a new row drawn for the forbidden request may be listed by a search of the oracle (items[k]) and move the row the
    # oracle means: the oracle is re-placed (tasks/admission/refusal_rows.py); what is still lost is a new row that changes the
    # answer (a count of the requester's reservations) or is listed past the search's first page
    assert any(len(states) == 2 for states in refusing)  # both states refuse, each on its own copy of the row
    for states in refusing:  # else (no forbidden row fits every state) the first state alone
        assert [t.coordinates.state for t in states] in ([0, 1], [0]) and all(t.policy and t.policy.refusal for t in states)
        assert len({t.instruction for t in states}) == 1 and len({t.policy.request for t in states if t.policy}) == 1
        for task in states:
            assert task.policy is not None
            forbidden = task.policy.forbidden[0]
            rows = merged(task.state.core, task.state.distractors)
            assert any(forbidden.args["reservation_id"] == r["reservation_id"] for r in rows["reservation"])
            assert forbidden.args["customer_id"] == requester_key(corpus.apps[task.app], task, rows)
            if task.answer_step is None:
                assert play(corpus, task, task.oracle) == 1.0
                assert play(corpus, task, []) == 0.0
                assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0


def test_a_state_without_the_forbidden_rows_table_is_no_synthesis_error() -> None:
    # juniper_goods task 44 of the catalogue corpus (app 6, T=40 S=2 D=4 seed 0): state 1 held no
    # payment_method row, and carrying state 0's new forbidden row into it raised KeyError
    from envsynth import catalog
    from envsynth.compiler.compile import compile_app
    from envsynth.graph import build_graph
    from envsynth.tasks import Rejection, synthesize

    app = compile_app(catalog.load("juniper_goods"))
    out = synthesize(app, build_graph(app.specs), app_index=6, task_index=44, states=2, depth=4, seed=0)
    assert not (isinstance(out, Rejection) and out.reason == "synthesis_error"), out
