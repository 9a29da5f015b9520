"""Every catalogue app has a written policy whose rules make policy tasks (docs/tasks.md, "Policy tasks").

A small build of each app (T=20, S=1) admits at least one task that involves a rule the agent
must obey; the oracle obeys it (the reward's policy part passes), and an agent that also makes
the forbidden call of a refusal task fails it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envsynth import catalog
from envsynth.blueprint.policy import agent_rules
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.grading import ScoreRule
from envsynth.runtime.episode import SUCCESS
from envsynth.tasks.admission.policy import forbids, oracle_plus_forbidden, resolved
from envsynth.tasks.model import Call, Task
from envsynth.tasks.state import merged, rows_bytes

N_TASKS = 20


@pytest.mark.parametrize("name", catalog.names())
def test_every_app_has_a_policy_with_rules(name: str) -> None:
    bp = catalog.load(name)
    assert bp.policy is not None and bp.policy.text.strip(), name
    assert len(bp.policy.rules) >= 3, (name, [r.rule for r in bp.policy.rules])
    assert len(agent_rules(bp)) >= 3, name  # rules the agent must obey: these make policy tasks
    assert all(r.text for r in bp.policy.rules), name


@pytest.fixture(scope="module", params=catalog.names())
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out: Path = tmp_path_factory.mktemp(f"policy_{request.param}") / "corpus"
    build_corpus(out, blueprints=[catalog.load(request.param)], tasks_per_app=N_TASKS, states=1, seed=0)
    return load_corpus(out)


def _finish(corpus: Corpus, task: Task, calls: list[Call]) -> Any:
    ep = corpus.start(task.id, score_rule=ScoreRule())
    if task.clarify:  # a must-ask task's user is asked first, as the oracle agent asks
        ep.call("ask_user", {"question": "What does my request leave out?"})
    results: list[Any] = []
    for c in calls:
        res = ep.call(c.tool, resolved(c, results))
        assert res.ok, (task.id, c, res.content)
        results.append(json.loads(res.content))
    answer = None
    if task.answer_step is not None and task.answer_step < len(results):
        got = results[task.answer_step]
        answer = got.get(task.answer_field) if task.answer_field else got
    return ep.finish(answer)


def _oracle_obeys(corpus: Corpus, task: Task) -> bool:
    """No oracle call on an action of the task's rule is one the rule forbids, on the task's own state."""
    assert task.policy is not None
    app = corpus.apps[task.app]
    rule = next(r for r in agent_rules(app.blueprint) if r.rule == task.policy.rule)
    ep = app.episode(rows_bytes(app, merged(task.state.core, task.state.distractors)))
    try:
        results: list[Any] = []
        for call in task.oracle:
            args = resolved(call, results)
            if call.tool in rule.actions and forbids(app, rule, call.tool, args, ep):
                return False
            res = ep.call(call.tool, args)
            results.append(res.data if res.outcome == SUCCESS else None)
        return True
    finally:
        ep.close()


def test_a_small_build_makes_policy_tasks_the_oracle_obeys(corpus: Corpus) -> None:
    tasks = corpus.tasks
    involved = [t for t in tasks if t.policy is not None]
    assert len(tasks) == N_TASKS
    assert involved, "no policy task"
    assert any(t.policy and t.policy.refusal for t in involved), "no refusal task"
    for task in involved:
        assert _oracle_obeys(corpus, task), task.id
        good = _finish(corpus, task, list(task.oracle))
        assert good.passed, (task.id, good.breakdown)
        if task.policy is not None and task.policy.refusal:
            assert good.part("policy") is not None and good.part("policy").passed, task.id
            bad = _finish(corpus, task, oracle_plus_forbidden(task))
            policy = bad.part("policy")
            assert bad.score == 0.0 and policy is not None and not policy.passed, task.id
