"""One episode, two views: the agent's (tools, call, finish) and the trainer's (reset, step, state) end alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.agents import OracleAgent, converse
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.tasks import Action, TaskEpisode
from envsynth.tasks.trainer import COMPLETED


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out: Path = tmp_path_factory.mktemp("views") / "corpus"
    build_corpus(out, blueprints=[catalog.load("tempo_music")], tasks_per_app=3, states=1, distractors=1, seed=0)
    return load_corpus(out)


def _agent_view(corpus: Corpus, task_id: str, seed: int) -> tuple[TaskEpisode, list[dict], float]:
    """The oracle plays the episode through the agent's view (the rollout loop: tools, call, finish)."""
    task = corpus.task(task_id)
    ep = corpus.start(task, seed=seed)
    conv = asyncio.run(converse(ep, OracleAgent(task)))
    reward = ep.finish(answer=conv.answer)
    return ep, conv.messages, reward.score


def test_the_agent_and_the_trainer_view_give_the_same_reward_and_state(corpus: Corpus) -> None:
    changed = 0
    for task in corpus.tasks:
        agent_ep, messages, score = _agent_view(corpus, task.id, seed=5)
        trainer_ep = corpus.start(task, seed=5)
        first = trainer_ep.reset()
        assert first.observation == task.instruction and not first.done and first.reward is None
        results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
        last = None
        for m in messages:
            for call in m.get("tool_calls") or []:
                last = trainer_ep.step(Action(call["function"]["name"], call["function"]["arguments"]))
                expected = results[call["id"]]
                assert last.observation == (COMPLETED if call["function"]["name"] == "complete_task" else expected)
                if not last.done:
                    assert last.outcome == "success" and last.reward is None
        assert last is not None and last.done and last.reward == score == 1.0
        a, t = agent_ep.state(), trainer_ep.state()
        assert t == a and t.reward is not None and t.reward.to_dict() == a.reward.to_dict()  # type: ignore[union-attr]
        assert t.calls == len(task.oracle) and t.seed == 5 and t.task_id == task.id
        assert trainer_ep.effects().to_dict() == agent_ep.effects().to_dict()
        changed += bool(agent_ep.effects())
    assert changed  # some task changed the state, so states were compared, not only two empty ones


def test_reset_starts_a_used_episode_again_from_s0(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.expected_effects)
    agent_ep, messages, _ = _agent_view(corpus, task.id, seed=0)
    calls = [c for m in messages for c in m.get("tool_calls") or [] if c["function"]["name"] != "complete_task"]
    ep = corpus.start(task, seed=0)
    for c in calls:
        assert ep.step({"name": c["function"]["name"], "arguments": c["function"]["arguments"]}).outcome == "success"
    assert ep.effects()  # the oracle's writes are in this attempt's state
    ep.reset()
    assert ep.state().calls == 0 and not ep.state().done and not ep.effects()  # a fresh copy of s0
    assert ep.step(Action("complete_task", {})).reward == 0.0  # doing nothing fails
    ep.reset(seed=0)  # a finished episode starts again too
    for c in calls:
        ep.step(Action(c["function"]["name"], c["function"]["arguments"]))
    done = ep.step(Action("complete_task", {"answer": agent_ep.answer}))
    assert done.done and done.reward == 1.0 and ep.state().reward == agent_ep.state().reward


def test_a_directly_built_episode_resets_with_another_seed(corpus: Corpus) -> None:
    from envsynth.tasks import state_bytes

    task = corpus.tasks[0]
    app = corpus.apps[task.app]
    ep = TaskEpisode(app, task, state_bytes(app, task), seed=1)
    ep.reset(seed=9)
    assert ep.state().seed == 9 and ep.seed == 9 and ep.state().calls == 0


def test_complete_task_with_a_wrong_argument_is_rejected_and_the_episode_goes_on(corpus: Corpus) -> None:
    ep = corpus.start(corpus.tasks[0])
    bad = ep.step(Action("complete_task", {"answer": "x", "confidence": 1}))
    assert bad.outcome == "anticipated_rejection" and bad.code == "invalid_arguments" and not bad.done
    assert "takes only 'answer'" in bad.observation and not ep.state().done
    assert ep.step(Action("complete_task", "[1]")).code == "invalid_arguments"
    assert ep.step(Action("complete_task", "")).done  # blank JSON text: no arguments
    after = ep.step(Action("complete_task", {}))
    assert after.done and after.code == "episode_finished" and after.reward == ep.state().reward.score  # type: ignore[union-attr]


def test_reset_hands_the_same_warm_state_back_out(corpus: Corpus) -> None:
    task = next(t for t in corpus.tasks if t.expected_effects)
    ep = corpus.start(task)
    ep.step(Action(task.oracle[0].tool, {}))  # any call: the attempt is used
    used = ep._episode.db
    ep.reset()
    assert ep._episode.db is used and not ep.effects()  # the pool's copy of s0, rolled back, not a new connection
