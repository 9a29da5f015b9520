"""Refusal tasks are planned when tasks have several initial states (--states 2): in every state, else in the first alone."""

from __future__ import annotations

from pathlib import Path

from envsynth import load_blueprint
from envsynth.corpus import build_corpus, load_corpus

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"


def test_refusals_are_made_with_two_states_per_task(tmp_path: Path) -> None:
    build_corpus(tmp_path / "corpus", blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=30, states=2, seed=0)
    tasks = load_corpus(tmp_path / "corpus").tasks
    involved = [t for t in tasks if t.policy is not None]
    refusals = [t for t in involved if t.policy and t.policy.refusal]
    assert len(involved) >= 0.10 * len(tasks), (len(involved), len(tasks))
    assert len(refusals) >= 0.25 * len(involved), (len(refusals), len(involved))
    # was 0.5: since the oracle finds rows by search (items[k]), a new row drawn for the forbidden request can shift
    # what the search lists, and such a refusal is given up (a known loss, see the stop-20 note)
    by_index: dict[int, int] = {}
    for t in tasks:
        by_index[t.coordinates.task] = by_index.get(t.coordinates.task, 0) + 1
    for t in refusals:
        assert by_index[t.coordinates.task] in (1, 2)  # every state with its own copy of the forbidden row, else the first alone
