"""The user simulator: it opens, reveals the request when asked, ends when satisfied; failures are recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_helpers import ORACLE, first_write, planned

from envsynth.agents import USER_STOP, ChatAgent, UserSimulator
from envsynth.corpus import Corpus
from envsynth.llm import Fail, ScriptedProvider, text_reply
from envsynth.rollout import RunError, Trajectory, run_batch, run_episode, summarize
from envsynth.rollout.command import run_command
from envsynth.rollout.config import RunConfig
from envsynth.tasks.model import Task

OPENING = "Hi, I need a hand with something."
QUESTION = "Sure, what exactly would you like me to do?"


@pytest.fixture(scope="module")
def action_task(corpus: Corpus) -> Task:
    return next(t for t in corpus.tasks if t.kind == "action" and first_write(corpus, t) is not None)


def episode(corpus: Corpus, task: Task, agent_plan: list, user: UserSimulator) -> tuple[Trajectory, ScriptedProvider]:
    llm = planned(task, agent_plan)
    traj = asyncio.run(run_episode(corpus, task, ChatAgent(llm), seed=0, user=user))
    return traj, llm


def test_the_user_reveals_the_request_when_asked_and_ends_when_satisfied(corpus: Corpus, action_task: Task) -> None:
    user_llm = ScriptedProvider([OPENING, action_task.instruction, f"That's everything, thanks! {USER_STOP}"], model="user-m")
    user = UserSimulator(user_llm, action_task, app_title="Harbor Market")
    plan = [text_reply(QUESTION), *[ORACLE] * len(action_task.oracle), text_reply("Done, it's all taken care of.")]
    traj, _ = episode(corpus, action_task, plan, user)
    assert traj.passed and traj.stop_reason == "user_stop" and traj.error is None and traj.answer is None
    assert traj.user_turns == 3 and traj.user_usage is not None and traj.user_usage["requests"] == 3
    msgs = traj.messages
    assert msgs[1] == {"role": "user", "content": OPENING}  # the instruction is not handed to the agent
    assert msgs[2]["content"] == QUESTION and msgs[3] == {"role": "user", "content": action_task.instruction}
    assert msgs[-1]["role"] == "assistant" and "thanks" not in str(msgs[-1]["content"])  # closing words not sent
    # what the simulator saw: its profile and request, the greeting, the agent's plain words only
    first, last = user_llm.requests[0], user_llm.requests[-1]
    system = first[0]["content"]
    assert first[0]["role"] == "system" and action_task.user.name in system and action_task.instruction in system
    assert USER_STOP in system and "Harbor Market" in system
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["content"] for m in last if m["role"] == "user"][1:] == [QUESTION, "Done, it's all taken care of."]
    assert all(m["role"] != "tool" and "tool_calls" not in m for r in user_llm.requests for m in r)


def test_the_user_runs_out_of_turns(corpus: Corpus, action_task: Task) -> None:
    user = UserSimulator(ScriptedProvider([OPENING, "I'd like you to sort it out."]), action_task, max_turns=2)
    traj, llm = episode(corpus, action_task, [text_reply("Which one?"), text_reply("Could you say more?"), text_reply("Hmm?")], user)
    assert traj.stop_reason == "user_turns" and traj.user_turns == 2 and traj.score == 0.0
    assert traj.turns == 2 and len(llm.requests) == 2


def test_a_failing_user_model_is_recorded_and_the_agent_never_runs(corpus: Corpus, action_task: Task) -> None:
    user = UserSimulator(ScriptedProvider([Fail(401, "bad key")]), action_task)
    traj, llm = episode(corpus, action_task, [ORACLE], user)
    assert traj.stop_reason == "user_error" and traj.score == 0.0 and traj.turns == 0 and llm.requests == []
    assert traj.error is not None and (traj.error["source"], traj.error["status"]) == ("user", 401)


def test_a_user_failure_mid_conversation_keeps_the_state_the_agent_left(corpus: Corpus, action_task: Task) -> None:
    user = UserSimulator(
        ScriptedProvider([action_task.instruction, Fail(500), Fail(500), Fail(500), Fail(500), Fail(500), Fail(500), Fail(500)]),
        action_task,
    )
    plan = [*[ORACLE] * len(action_task.oracle), text_reply("All done.")]
    traj, _ = episode(corpus, action_task, plan, user)
    assert traj.stop_reason == "user_error" and traj.error is not None and traj.error["source"] == "user"
    assert traj.passed  # the work was done before the user went away: the state decides
    assert traj.user_usage is not None and traj.user_usage["retries"] == 6


def test_run_batch_with_a_user_factory_and_the_summary(corpus: Corpus, tmp_path: Path) -> None:
    tasks = corpus.tasks[:3]

    def told(task: Task) -> list:  # a question's answer is told to the user before completing (the communication part)
        return [] if task.expected_answer is None else [text_reply(f"I looked it up: {task.expected_answer}.")]

    def agent(task: Task, attempt: int) -> ChatAgent:
        return ChatAgent(planned(task, [text_reply(QUESTION), *[ORACLE] * len(task.oracle), *told(task), ORACLE]))

    def user(task: Task, attempt: int) -> UserSimulator:
        return UserSimulator(ScriptedProvider([OPENING, task.instruction, "Great, thank you."]), task)

    res = run_batch(corpus, agent, tasks, out=tmp_path / "run", user_factory=user)
    assert (res.written, res.errors) == (3, 0)
    s = summarize(tmp_path / "run").to_dict()
    assert s["pass@1"] == 1.0 and s["stop_reasons"] == {"complete_task": 3}
    turns = sum(2 + bool(told(t)) for t in tasks) / 3
    assert s["user_simulator"] is not None and s["user_simulator"]["episodes"] == 3 and s["user_simulator"]["mean_turns"] == round(turns, 6)
    assert summarize_without_user(corpus, tmp_path) is None


def summarize_without_user(corpus: Corpus, tmp_path: Path) -> object:
    run_batch(corpus, lambda t, a: ChatAgent(planned(t, [ORACLE] * (len(t.oracle) + 1))), corpus.tasks[:1], out=tmp_path / "plain")
    return summarize(tmp_path / "plain").to_dict()["user_simulator"]


def test_run_command_checks_the_user_simulator_settings(corpus_path: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"user simulator \(user_sim\) needs a model"):
        RunConfig(corpus=corpus_path, out=tmp_path / "r", agent="oracle", user_sim=True)
    with pytest.raises(ValueError, match="user_max_turns"):
        RunConfig(corpus=corpus_path, out=tmp_path / "r", agent="oracle", user_sim=True, user_model="u", user_max_turns=0)
    run_command(RunConfig(corpus=corpus_path, out=tmp_path / "plain", agent="oracle", limit=1))
    with pytest.raises(RunError, match="without the user simulator"):
        again = RunConfig(
            corpus=corpus_path, out=tmp_path / "plain", agent="oracle", user_sim=True, user_model="u", base_url="http://127.0.0.1:9/v1"
        )
        run_command(again)


def test_the_simulator_needs_a_turn(corpus: Corpus, action_task: Task) -> None:
    with pytest.raises(ValueError, match="at least one turn"):
        UserSimulator(ScriptedProvider([]), action_task, max_turns=0)


def test_the_simulator_is_told_the_scenario() -> None:
    from envsynth.agents.user import profile_text, request_text
    from envsynth.tasks.model import Coordinates, Scenario, Task, TaskState, UserProfile

    task = Task(
        id="shop-t00000-s0",
        app="shop",
        kind="info",
        instruction="Hi, this is Dana (dana@example.net). How much store credit do I have?",
        user=UserProfile(name="Dana", role="customer", email="dana@example.net"),
        scenario=Scenario(
            persona="Dana, a customer of Harbor Market",
            identity=["dana@example.net"],
            style="in a hurry",
            reason="I want to use my credit before it expires",
            knows=["my email is dana@example.net", "they mean my order placed on March 3, 2026"],
            unknowns=["the answer to their question: that is what they want to find out"],
            request="Hi, this is Dana (dana@example.net). How much store credit do I have?",
        ),
        state=TaskState(core={}),
        oracle=[],
        oracle_program="",
        expected_effects={},
        visible_tools=[],
        coordinates=Coordinates(app=0, task=0, state=0, distractors=0),
        seed=0,
    )
    profile = profile_text(task)
    assert "Dana, a customer of Harbor Market" in profile and "in a hurry" in profile and "before it expires" in profile
    request = request_text(task)
    assert request.startswith("Hi, this is Dana") and "- they mean my order placed on March 3, 2026" in request
    assert "- my email is dana@example.net" in request and "never make it up" in request and "the answer to their question" in request
