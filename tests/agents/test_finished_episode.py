"""A finished episode refuses tool calls: nothing reaches the pooled starting state (issue 13, item 1)."""

from __future__ import annotations

import asyncio

import pytest

from envsynth.agents import OracleAgent
from envsynth.corpus import Corpus
from envsynth.rollout import run_episode
from envsynth.tasks.model import Task


def _writes(corpus: Corpus, task: Task) -> bool:
    spec = corpus.apps[task.app].spec_by_name[task.oracle[0].tool]
    return not task.oracle[0].refs and bool(spec.writes or spec.creates or spec.deletes)


def _oracle_score(corpus: Corpus, task: Task) -> float:
    return asyncio.run(run_episode(corpus, task, OracleAgent(task), seed=0)).reward["score"]


def test_call_after_finish_is_refused_and_spoils_nothing(corpus: Corpus) -> None:
    tasks = [t for t in corpus.tasks if _writes(corpus, t)]
    assert len(tasks) >= 2, "the corpus needs tasks whose first oracle call writes"
    baseline = {t.id: corpus.start(t).finish(answer=t.expected_answer).score for t in tasks}
    late = []
    for t in tasks:  # the repro: start, finish, then call the oracle's first (writing) step
        ep = corpus.start(t)
        ep.finish()
        late.append(ep.call(t.oracle[0].tool, t.oracle[0].args))
    for t in tasks:  # a do-nothing agent (even one giving the right answer) gains nothing
        assert corpus.start(t).finish(answer=t.expected_answer).score == baseline[t.id] < 1.0
        assert _oracle_score(corpus, t) == 1.0
        assert _oracle_score(corpus, t) == 1.0  # and again, on the pooled connection
    assert {(r.outcome, r.code) for r in late} == {("anticipated_rejection", "episode_finished")}
    assert all("finished" in r.content for r in late)


def test_second_finish_returns_the_same_reward_and_releases_once(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if _writes(corpus, t))
    ep = corpus.start(task)
    first = task.oracle[0]
    assert ep.call(first.tool, first.args).ok
    reward = ep.finish()
    again = ep.finish(answer="something else")
    assert again.to_dict() == reward.to_dict()
    assert ep.effects().to_dict() == ep.effects().to_dict()
    # a double release would hand the same connection to two live episodes
    a, b = corpus.start(task), corpus.start(task)
    assert a._episode.db is not b._episode.db
    assert a.call(first.tool, first.args).ok and b.call(first.tool, first.args).ok
    assert a.finish().to_dict() == b.finish().to_dict()


def test_runtime_episode_after_close_refuses(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if _writes(corpus, t))
    ep = corpus.apps[task.app].episode()
    ep.close()
    ep.close()  # harmless
    res = ep.call(task.oracle[0].tool, task.oracle[0].args)
    assert res.outcome == "anticipated_rejection" and res.code == "episode_finished"


def test_finish_that_raises_still_gives_the_state_back_once(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    import envsynth.tasks.episode as task_episode

    task = next(t for t in corpus.tasks if _writes(corpus, t))
    first = task.oracle[0]
    ep = corpus.start(task)
    assert ep.call(first.tool, first.args).ok

    def broken(*args: object, **kwargs: object) -> None:
        raise ValueError("scoring bug")

    monkeypatch.setattr(task_episode, "grade_task", broken)
    with pytest.raises(ValueError, match="scoring bug"):
        ep.finish()
    monkeypatch.undo()
    assert ep.call(first.tool, first.args).code == "episode_finished"
    with pytest.raises(RuntimeError, match="failed while finishing"):
        ep.finish()
    with pytest.raises(RuntimeError, match="failed while finishing"):
        ep.effects()
    # the pooled connection came back rolled back, and only once
    a, b = corpus.start(task), corpus.start(task)
    assert a.call(first.tool, first.args).ok and b.call(first.tool, first.args).ok
    assert a.finish().to_dict() == b.finish().to_dict()
