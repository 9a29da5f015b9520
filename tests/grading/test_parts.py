"""The reward's parts on real episodes: state, answer, policy and communication, and the score rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envsynth import load_blueprint
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.grading import ScoreRule, add_communication, answer_spec, grade_task
from envsynth.runtime.reward import Effects
from envsynth.tasks.admission.policy import oracle_plus_forbidden, resolved
from envsynth.tasks.model import Call, Task

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("parts") / "corpus"
    build_corpus(out, blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=30, states=1, seed=0)
    return load_corpus(out)


def _play(corpus: Corpus, task: Task, calls: list[Call], answer: Any = None, rule: ScoreRule | None = None) -> Any:
    ep = corpus.start(task.id, score_rule=rule or ScoreRule())
    results: list[Any] = []
    for c in calls:
        res = ep.call(c.tool, resolved(c, results))
        assert res.ok, (task.id, c, res.content)
        results.append(json.loads(res.content))
    if answer is None and task.answer_step is not None and calls:
        answer = results[task.answer_step].get(task.answer_field)
    return ep, ep.finish(answer)


def test_a_forbidden_call_fails_the_policy_part_and_the_state_part(corpus: Corpus) -> None:
    refusals = [t for t in corpus.tasks if t.policy is not None and t.policy.refusal]
    assert refusals
    for task in refusals:
        _, good = _play(corpus, task, list(task.oracle))
        assert good.passed and good.part("policy") is not None and good.part("policy").passed, task.id
        _, bad = _play(corpus, task, oracle_plus_forbidden(task))
        policy = bad.part("policy")
        assert bad.score == 0.0 and policy is not None and not policy.passed, task.id
        assert task.policy.forbidden[0].tool in policy.detail and task.policy.rule in policy.detail
        assert not bad.part("state").passed  # the forbidden write is an extra write too
        kinds = {m.kind for m in bad.breakdown}
        assert "policy_violation" in kinds
        d = bad.to_dict()
        assert d["parts"]["policy"]["passed"] is False and d["rule"] == {"mode": "all"}


def test_a_weighted_rule_scores_the_share_of_the_parts_that_pass(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.policy is not None and t.policy.refusal)
    rule = ScoreRule("weighted", {"state": 1.0, "policy": 3.0})
    _, bad = _play(corpus, task, oracle_plus_forbidden(task), rule=rule)
    names = [p.name for p in bad.parts]
    assert names[0] == "state" and "policy" in names
    weights = {"state": 1.0, "policy": 3.0}
    want = sum(weights.get(p.name, 1.0) for p in bad.parts if p.passed) / sum(weights.get(p.name, 1.0) for p in bad.parts)
    assert bad.score == pytest.approx(want) and not bad.passed
    _, good = _play(corpus, task, list(task.oracle), rule=rule)
    assert good.score == 1.0 and good.passed


def test_an_answer_in_a_sentence_passes_and_the_verdict_is_explained(corpus: Corpus) -> None:
    info = [t for t in corpus.tasks if t.kind == "info" and isinstance(t.expected_answer, int | float | str)]
    assert info
    for task in info:
        value = task.expected_answer
        _, r = _play(corpus, task, list(task.oracle), answer=f"I checked for you: it is {value}.")
        assert r.passed, (task.id, value, r.answer)
        assert r.answer is not None and r.answer.matched and r.to_dict()["answer"]["reason"]
        _, nothing = _play(corpus, task, [], answer=None)
        assert not nothing.passed and nothing.part("answer") is not None and not nothing.part("answer").passed


def test_the_communication_part_needs_the_answer_in_the_agents_words(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.expected_answer is not None)
    app = corpus.apps[task.app]
    ep, reward = _play(corpus, task, list(task.oracle))
    told = add_communication(reward, app, task, ["Let me look.", f"Here you go: {task.expected_answer}."])
    assert told.passed and told.part("communication").passed and "message 2 of 2" in told.part("communication").detail
    silent = add_communication(reward, app, task, ["Done, anything else?"])
    assert not silent.passed and silent.score == 0.0 and not silent.part("communication").passed
    assert "not_communicated" in {m.kind for m in silent.breakdown}
    # the same through the pure grader, from what the episode left behind
    again = grade_task(app, task, ep.effects(), task.expected_answer, transcript=["Done."])
    assert not again.passed and again.part("state").passed and again.part("answer").passed
    assert answer_spec(app, task) is answer_spec(app, task)  # built once per task


def test_an_action_task_has_no_answer_part_and_nothing_does_nothing(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.kind == "action")
    app = corpus.apps[task.app]
    r = grade_task(app, task, Effects())
    assert [p.name for p in r.parts][:1] == ["state"] and r.part("answer") is None and not r.passed


@pytest.mark.parametrize(
    ("mode", "weights", "message"),
    [
        ("some", None, "use 'all' or 'weighted'"),
        ("weighted", "speed=1", "the parts are state, answer, policy, communication"),
        ("weighted", "state=x", "must be a number"),
        ("weighted", "state", "write PART=NUMBER"),
        ("weighted", "state=-1", "must be a number >= 0"),
    ],
)
def test_score_rule_errors_name_the_problem(mode: str, weights: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ScoreRule.parse(mode, weights)
