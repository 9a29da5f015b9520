"""Refusal tasks are planned when tasks have several initial states (--states 2): in every state, else in the first alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth import load_blueprint
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.tasks.admission import policy as policy_tasks
from envsynth.tasks.admission.policy import oracle_plus_forbidden
from replay_helpers import play

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("refusals_with_states") / "corpus"
    build_corpus(out, blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=30, states=2, seed=0)
    return load_corpus(out)


def test_refusals_are_made_with_two_states_per_task(corpus: Corpus) -> None:
    tasks = corpus.tasks
    involved = [t for t in tasks if t.policy is not None]
    refusals = [t for t in involved if t.policy and t.policy.refusal]
    assert len(involved) >= 0.10 * len(tasks), (len(involved), len(tasks))
    assert len(refusals) >= 0.5 * len(involved), (len(refusals), len(involved))  # 14 of 22 (7 of 21 before the re-placement)
    # a new row drawn for the forbidden request may be listed by a search of the oracle (items[k]) and move the row the
    # oracle means: the oracle is re-placed (tasks/admission/refusal_rows.py); what is still lost is a new row that changes the
    # answer (a count of the requester's reservations) or is listed past the search's first page
    by_index: dict[int, int] = {}
    for t in tasks:
        by_index[t.coordinates.task] = by_index.get(t.coordinates.task, 0) + 1
    for t in refusals:
        assert by_index[t.coordinates.task] in (1, 2)  # every state with its own copy of the forbidden row, else the first alone


def test_a_later_state_takes_its_own_re_placed_oracle(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    # state 1's copy of the new row moves what its searches list as state 0's does: each state keeps its own oracle
    from envsynth.graph import read_graph
    from envsynth.tasks.synth import synthesize

    app = corpus.apps["skylark_air"]
    graph = read_graph(corpus.path / "apps" / "skylark_air")
    monkeypatch.setattr(policy_tasks, "REFUSAL_SHARE", 0.0)  # the same task index without the forbidden request
    moved = 0
    for task in corpus.tasks:
        if not (task.policy and task.policy.refusal):
            continue
        plain = synthesize(app, graph, app_index=0, task_index=task.coordinates.task, states=2)
        assert isinstance(plain, list)
        mine = plain[task.coordinates.state]
        if task.coordinates.state == 1 and mine.oracle != task.oracle:
            assert [c.tool for c in mine.oracle] == [c.tool for c in task.oracle] and mine.oracle_program != task.oracle_program
            moved += 1
        assert play(corpus, task, task.oracle) == 1.0
        assert play(corpus, task, []) == 0.0
        assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0
    assert moved
