"""A ChatAgent over a scripted model that makes mistakes gets exactly the reward it deserves."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_helpers import ORACLE, first_write, kinds, oracle_plan, planned, run

from envsynth.agents import ChatAgent, OracleAgent
from envsynth.corpus import Corpus
from envsynth.llm import Fail, RetryPolicy, ScriptedProvider, text_reply, tool_call, tool_reply
from envsynth.rollout import run_batch, run_episode, summarize
from envsynth.tasks.building.instantiate import execute
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged


def _tasks(corpus: Corpus, kind: str) -> list[Task]:
    return [t for t in corpus.tasks if t.kind == kind]


@pytest.fixture(scope="module")
def action_task(corpus: Corpus) -> Task:
    return next(t for t in corpus.tasks if t.kind in ("action", "mixed") and first_write(corpus, t) is not None)


@pytest.fixture(scope="module")
def answer_task(corpus: Corpus) -> Task:
    return next(t for t in corpus.tasks if t.answer_step is not None)


def test_following_the_oracle_scores_one(corpus: Corpus, action_task: Task) -> None:
    traj = run(corpus, action_task, oracle_plan(action_task))
    assert traj.passed and traj.stop_reason == "complete_task" and traj.error is None
    assert traj.messages[0]["role"] == "system" and traj.messages[1] == {"role": "user", "content": action_task.instruction}
    assert traj.usage["requests"] == len(action_task.oracle) + 1 and traj.usage["total_tokens"] > 0


def test_invalid_arguments_then_recovery_scores_one(corpus: Corpus, action_task: Task) -> None:
    i = first_write(corpus, action_task)
    assert i is not None
    bad = {**action_task.oracle[i].args, "bogus": 1}
    traj = run(corpus, action_task, [tool_reply((action_task.oracle[i].tool, bad)), *oracle_plan(action_task)])
    assert traj.passed
    first = traj.tool_calls[0]
    assert (first["outcome"], first["code"]) == ("anticipated_rejection", "invalid_arguments")
    assert "unexpected argument 'bogus'" in traj.messages[3]["content"]


def test_unknown_tool_then_recovery_scores_one(corpus: Corpus, action_task: Task) -> None:
    traj = run(corpus, action_task, [tool_reply(("launch_rockets", {"count": 3})), *oracle_plan(action_task)])
    assert traj.passed
    assert traj.tool_calls[0] == {
        "turn": 1,
        "tool": "launch_rockets",
        "outcome": "anticipated_rejection",
        "code": "unknown_tool",
        "arguments": {"count": 3},
    }
    assert traj.messages[3]["name"] == "launch_rockets" and "Unknown tool" in traj.messages[3]["content"]


def test_malformed_json_becomes_an_error_message_then_recovery(corpus: Corpus, action_task: Task) -> None:
    tool = action_task.oracle[0].tool
    traj = run(corpus, action_task, [tool_reply((tool, '{"oops": ')), tool_reply((tool, "[1, 2]")), *oracle_plan(action_task)])
    assert traj.passed
    assert [c["outcome"] for c in traj.tool_calls[:2]] == ["malformed", "malformed"]
    assert "not valid JSON" in traj.messages[3]["content"] and "not an object" in traj.messages[5]["content"]
    assert traj.messages[2]["tool_calls"][0]["function"]["arguments"] == '{"oops": '


def test_rate_limit_is_retried(corpus: Corpus, action_task: Task) -> None:
    traj = run(corpus, action_task, [Fail(429), Fail(503), ORACLE, Fail(None), *oracle_plan(action_task)[1:]])
    assert traj.passed and traj.error is None
    assert traj.usage["retries"] == 3 and traj.turns == len(action_task.oracle) + 1


@pytest.fixture(scope="module")
def wide_corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    """More tasks of one app than the shared corpus has, so that some create can be repeated."""
    from envsynth import catalog
    from envsynth.corpus import build_corpus, load_corpus

    out = tmp_path_factory.mktemp("wide") / "corpus"
    build_corpus(out, blueprints=[catalog.load("peak_fitness")], tasks_per_app=16, states=1, distractors=0, seed=0)
    return load_corpus(out)


def test_extra_harmful_write_scores_zero(wide_corpus: Corpus) -> None:
    corpus = wide_corpus
    found = None
    for task in corpus.tasks:  # a create that, repeated after the oracle, succeeds: one row too many
        app = corpus.apps[task.app]
        for c in task.oracle:
            looked_up = all(app.spec_by_name[task.oracle[r.step].tool].mode == "read" for r in c.refs.values())
            if not looked_up or not app.spec_by_name[c.tool].creates:
                continue  # (arguments taken from a lookup, such as the requester's, are passed as the lookup gave them)
            results = execute(app, merged(task.state.core, task.state.distractors), list(task.oracle)).results
            args = {**c.args, **{p: resolve(r, results) for p, r in c.refs.items()}}
            plan = [*oracle_plan(task)[:-1], tool_reply((c.tool, args)), ORACLE]
            traj = run(corpus, task, plan)
            if traj.tool_calls[-2]["outcome"] == "success":
                found = traj
                break
        if found:
            break
    assert found is not None, "no repeatable write in the corpus"
    assert found.reward["score"] == 0.0 and not found.passed
    assert "extra_row" in kinds(found) and all(k.startswith("extra_") for k in kinds(found))


def test_wrong_argument_value_scores_zero(corpus: Corpus) -> None:
    for task in corpus.tasks:
        if task.clarify:
            continue  # a must-ask task: the scripted plan asks no one (tests/tasks/test_clarify.py covers those)
        ep = corpus.start(task)
        schemas = {s["function"]["name"]: s["function"]["parameters"] for s in ep.tools}
        ep.finish()
        for i, c in enumerate(task.oracle):
            props = schemas[c.tool]["properties"]
            enum_arg = next((k for k, v in c.args.items() if "enum" in props.get(k, {}) and len(props[k]["enum"]) > 1), None)
            if enum_arg is None or c.refs or corpus.apps[task.app].spec_by_name[c.tool].mode != "write":
                continue  # (a wrong filter of a read changes only the answer)
            if any(enum_arg in later.args for later in task.oracle[i + 1 :]):
                continue  # a later step writes the same field again (register, then update the profile's country)
            other = next(v for v in props[enum_arg]["enum"] if v != c.args[enum_arg])
            wrong = tool_reply(tool_call(c.tool, {**c.args, enum_arg: other}, call_id=f"oracle-{i}"))
            plan = [*[ORACLE] * i, wrong, *[ORACLE] * (len(task.oracle) - i)]
            traj = run(corpus, task, plan)
            if traj.tool_calls[i]["outcome"] != "success":
                continue
            assert traj.reward["score"] == 0.0
            if corpus.apps[task.app].spec_by_name[c.tool].creates:  # the new row differs: the expected one is missing, another is extra
                assert {"extra_row", "missing_row"} <= set(kinds(traj))
                assert set(kinds(traj)) <= {"extra_row", "missing_row", "wrong_value", "extra_update", "missing_update", "wrong_answer"}
            else:
                assert "wrong_value" in kinds(traj) or "extra_update" in kinds(traj)
                assert set(kinds(traj)) <= {"wrong_value", "extra_update", "missing_update", "wrong_answer"}
            return
    pytest.skip("no enum argument to get wrong in this corpus")


def test_wrong_and_missing_answers(corpus: Corpus, answer_task: Task) -> None:
    plan = oracle_plan(answer_task)[:-1]
    wrong = run(corpus, answer_task, [*plan, tool_reply(("complete_task", {"answer": "certainly not this"}))])
    assert wrong.reward["score"] == 0.0 and kinds(wrong) == ["wrong_answer"] and wrong.answer == "certainly not this"
    missing = run(corpus, answer_task, [*plan, tool_reply(("complete_task", {}))])
    assert missing.reward["score"] == 0.0 and kinds(missing) == ["missing_answer"]
    silent = run(corpus, answer_task, [*plan, text_reply("I have looked into it.")])
    assert silent.stop_reason == "final_message" and kinds(silent) == ["wrong_answer"]


def test_an_answer_written_in_the_final_message_is_graded(corpus: Corpus, answer_task: Task) -> None:
    """A model that answers in words instead of calling complete_task is read as a person would read it."""
    plan = oracle_plan(answer_task)[:-1]
    texted = run(corpus, answer_task, [*plan, text_reply(f"The answer is {answer_task.expected_answer}.")])
    assert texted.stop_reason == "final_message" and texted.reward["passed"] and texted.answer.startswith("The answer is")
    hedged = run(corpus, answer_task, [*plan, text_reply("It is hard to say, maybe several.")])
    assert hedged.reward["score"] == 0.0 and kinds(hedged) == ["wrong_answer"]


def test_doing_nothing_scores_zero(corpus: Corpus, action_task: Task) -> None:
    traj = run(corpus, action_task, [text_reply("Done!")])
    assert traj.stop_reason == "final_message" and traj.turns == 1 and traj.reward["score"] == 0.0 and traj.tool_calls == []


def test_calls_after_complete_task_are_skipped(corpus: Corpus, action_task: Task) -> None:
    i = first_write(corpus, action_task)
    assert i is not None
    c = action_task.oracle[i]
    traj = run(corpus, action_task, [tool_reply(("complete_task", {}), (c.tool, c.args))])
    assert [x["outcome"] for x in traj.tool_calls] == ["success", "skipped"] and traj.reward["score"] == 0.0
    assert traj.messages[-1]["role"] == "tool" and "Not run" in traj.messages[-1]["content"]


def test_turn_and_token_limits(corpus: Corpus, action_task: Task) -> None:
    read = next(s["function"]["name"] for s in corpus.start(action_task).tools if s["function"]["name"].startswith(("get_", "search_")))
    looping = [tool_reply((read, "{}"))] * 10
    turns = run(corpus, action_task, looping, max_turns=3)
    assert turns.stop_reason == "max_turns" and turns.turns == 3 and turns.reward["score"] == 0.0
    tokens = run(corpus, action_task, looping, max_tokens=1)
    assert tokens.stop_reason == "max_tokens" and tokens.turns == 1


def test_model_failure_is_recorded_and_the_batch_goes_on(corpus: Corpus, tmp_path: Path) -> None:
    tasks = corpus.tasks[:3]

    def factory(task: Task, attempt: int) -> ChatAgent | OracleAgent:
        if task is tasks[1]:
            return ChatAgent(ScriptedProvider([Fail(500)] * 10, retry=RetryPolicy(max_retries=2, sleep=_no_sleep)))
        return ChatAgent(planned(task, oracle_plan(task)))

    res = run_batch(corpus, factory, tasks, attempts=1, concurrency=2, out=tmp_path / "run")
    assert (res.written, res.errors) == (3, 1)
    s = summarize(tmp_path / "run").to_dict()
    assert s["pass@1"] == pytest.approx(2 / 3, abs=1e-6) and s["errors"]["episodes"] == 1
    err = s["errors"]["first"][0]
    assert err["task_id"] == tasks[1].id and err["kind"] == "server" and err["status"] == 500
    assert s["stop_reasons"] == {"complete_task": 2, "model_error": 1} and s["retries"] == 2


def test_oracle_agent_through_run_episode_directly(corpus: Corpus, answer_task: Task) -> None:
    traj = asyncio.run(run_episode(corpus, answer_task.id, OracleAgent(answer_task)))
    assert traj.passed and traj.answer == answer_task.expected_answer


async def _no_sleep(_s: float) -> None:
    return None


def test_tool_names_can_be_left_out_of_requests(corpus: Corpus, action_task: Task) -> None:
    llm = planned(action_task, oracle_plan(action_task))
    traj = asyncio.run(run_episode(corpus, action_task, ChatAgent(llm, tool_names=False)))
    assert traj.passed and all("name" not in m for r in llm.requests for m in r if m["role"] == "tool")
    assert all("name" in m for m in traj.messages if m["role"] == "tool")
