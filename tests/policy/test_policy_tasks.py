"""Policy tasks on the example airline (tests/data/examples/policy.yaml): the share of tasks that
involve a rule, refusals scored on the real runtime, and the policy on every agent surface."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from envsynth import load_blueprint
from envsynth.agents import OracleAgent
from envsynth.agents.loop import converse
from envsynth.blueprint.policy import policy_text
from envsynth.corpus import Corpus, build_corpus, load_corpus
from envsynth.export import export_rl
from envsynth.runtime.app import App
from envsynth.tasks.admission import policy as policy_tasks
from envsynth.tasks.admission.policy import oracle_plus_forbidden, requester_key, resolved
from envsynth.tasks.model import Call, Task
from envsynth.tasks.planning.refs import resolve
from envsynth.tasks.state import merged, rows_bytes
from replay_helpers import play

EXAMPLE = Path(__file__).parent.parent / "data" / "examples" / "policy.yaml"
N_TASKS = 30


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    out = tmp_path_factory.mktemp("policy_tasks") / "corpus"
    build_corpus(out, blueprints=[load_blueprint(EXAMPLE)], tasks_per_app=N_TASKS, seed=0)
    return load_corpus(out)


def test_share_of_policy_tasks_and_refusals(corpus: Corpus) -> None:
    tasks = corpus.tasks
    involved = [t for t in tasks if t.policy is not None]
    refusals = [t for t in involved if t.policy and t.policy.refusal]
    assert len(tasks) == N_TASKS
    assert len(involved) >= 0.10 * len(tasks), len(involved)
    assert len(refusals) >= 0.5 * len(involved), (len(refusals), len(involved))  # 7 of 11 (3 before the re-placement)
    # a new row drawn for the forbidden request may be listed by a search of the oracle (items[k]) and move the row the
    # oracle means: the oracle is re-placed (tasks/admission/refusal_rows.py); what is still lost is a new row that changes the
    # answer (a count of the requester's reservations) or is listed past the search's first page


def test_refusal_scores_oracle_one_nothing_zero_and_forbidden_zero(corpus: Corpus) -> None:
    refusals = [t for t in corpus.tasks if t.policy and t.policy.refusal]
    assert refusals
    for task in refusals:
        assert task.policy is not None and task.policy.forbidden and task.policy.rule == "basic_economy_final"
        assert task.policy.request and task.policy.request in task.instruction  # both requests, in the user's words
        assert task.scenario is not None and task.scenario.request == task.instruction
        assert any(k.startswith("I mean my reservation") for k in task.scenario.knows)
        assert task.policy.forbidden[0].tool in task.visible_tools
        assert play(corpus, task, task.oracle) == 1.0
        assert play(corpus, task, []) == 0.0
        assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0  # the tools allow it; the verifier does not


def _results(app: App, task: Task, calls: list[Call]) -> list[Any]:
    """The results of ``calls`` on the task's state (each must succeed)."""
    ep = app.episode(rows_bytes(app, merged(task.state.core, task.state.distractors)))
    try:
        results: list[Any] = []
        for c in calls:
            res = ep.call(c.tool, resolved(c, results))
            assert res.outcome == "success", (task.id, c, res.content)
            results.append(res.data)
        return results
    finally:
        ep.close()


def test_a_new_row_a_search_lists_first_moves_the_oracle_not_the_refusal(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    # the forbidden request's new row is listed by a search of the oracle before the row the oracle acts on: the refusal
    # task keeps the oracle on its rows, each items[k] re-placed where the search now lists that row (it was given up)
    from envsynth.graph import read_graph
    from envsynth.tasks.synth import synthesize

    app = corpus.apps["skylark_air"]
    graph = read_graph(corpus.path / "apps" / "skylark_air")
    monkeypatch.setattr(policy_tasks, "REFUSAL_SHARE", 0.0)  # the same task index without the forbidden request
    moved = []
    for task in corpus.tasks:
        if task.policy and task.policy.refusal:
            plain = synthesize(app, graph, app_index=0, task_index=task.coordinates.task)
            assert isinstance(plain, list)
            if plain[0].oracle != task.oracle:
                moved.append((task, plain[0]))
    assert moved
    for task, plain in moved:
        assert task.policy is not None
        new = task.policy.forbidden[0].args["reservation_id"]
        assert new not in {r["reservation_id"] for r in merged(plain.state.core, plain.state.distractors)["reservation"]}
        assert [c.tool for c in task.oracle] == [c.tool for c in plain.oracle] and task.oracle_program != plain.oracle_program
        before, after = _results(app, plain, plain.oracle), _results(app, task, task.oracle)
        shifted = 0
        for was, now in zip(plain.oracle, task.oracle, strict=True):
            for p, ref in now.refs.items():
                old = was.refs[p]
                assert resolve(ref, after) == resolve(old, before)  # the same row, where the search lists it now
                if ref != old:
                    assert ref.item is not None and old.item is not None and ref.item > old.item  # the new row listed first
                    assert resolve(old, after) != resolve(old, before)  # the old place names another row now
                    shifted += 1
        assert shifted
        assert play(corpus, task, task.oracle) == 1.0
        assert play(corpus, task, []) == 0.0
        assert play(corpus, task, oracle_plus_forbidden(task)) == 0.0


def test_the_acting_user_is_the_requester(corpus: Corpus) -> None:
    app = corpus.apps["skylark_air"]
    for task in corpus.tasks:
        me = requester_key(app, task, merged(task.state.core, task.state.distractors))
        for c in [*task.oracle, *(task.policy.forbidden if task.policy else [])]:
            if "customer_id" in c.args:
                assert c.args["customer_id"] == me, (task.id, c)


def test_an_allowed_call_of_a_rule_is_marked_without_refusal(corpus: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    from envsynth.graph import read_graph
    from envsynth.tasks.synth import synthesize

    monkeypatch.setattr(policy_tasks, "REFUSAL_SHARE", 0.0)
    app = corpus.apps["skylark_air"]
    graph = read_graph(corpus.path / "apps" / "skylark_air")
    marked = []
    for i in range(40):
        made = synthesize(app, graph, app_index=0, task_index=i)
        if isinstance(made, list) and made[0].policy is not None:
            marked.append(made[0])
    assert marked and all(not t.policy.refusal and any(c.tool == "cancel_reservation" for c in t.oracle) for t in marked if t.policy)


def test_no_admitted_oracle_breaks_the_policy(corpus: Corpus) -> None:
    # steps on an action a rule governs are solved so that the rule allows them (tests/tasks/test_write_coverage.py), so
    # the catalogue's policy rejections are rare now; what must hold is that no admitted oracle breaks the policy
    app = corpus.apps["skylark_air"]
    rules = [r for r in (app.blueprint.policy.rules if app.blueprint.policy else []) if r.forbid]
    for task in corpus.tasks:  # no admitted oracle breaks the policy
        assert not any(forbidden for _, _, forbidden in policy_tasks._oracle_rules(app, task, rules)), task.id


def test_policy_reaches_the_system_prompt_and_the_rl_export(corpus: Corpus, tmp_path: Path) -> None:
    task = next(t for t in corpus.tasks if t.policy and t.policy.refusal)
    text = policy_text(corpus.apps[task.app].blueprint)
    assert "Basic economy reservations booked more than 24 hours ago cannot be cancelled." in text
    assert "pass their id as `customer_id`" in text
    ep = corpus.start(task.id)
    conv = asyncio.run(converse(ep, OracleAgent(task)))
    assert conv.messages[0] == {"role": "system", "content": f"## Policy\n\n{text}"}
    out = tmp_path / "rl.jsonl"
    export_rl(corpus, out)
    row = json.loads(out.read_text().splitlines()[0])
    assert row["prompt"][0]["role"] == "system" and row["prompt"][0]["content"].endswith(f"## Policy\n\n{text}")


def test_policy_over_http(corpus: Corpus) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from envsynth.serve.http import create_app

    task = corpus.tasks[0]
    text = policy_text(corpus.apps[task.app].blueprint)
    with TestClient(create_app(corpus)) as c:
        assert c.get(f"/tasks/{task.id}").json()["policy"] == text
        started = c.post("/episodes", json={"task_id": task.id}).json()
        assert started["policy"] == text and started["instruction"] == task.instruction


def test_policy_over_mcp(corpus: Corpus) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client

    from envsynth.serve.mcp import build_server

    task = corpus.tasks[0]
    text = policy_text(corpus.apps[task.app].blueprint)
    server = build_server(corpus, task.id)

    async def main() -> None:
        async with Client(server) as client:
            assert client.instructions == f"## Policy\n\n{text}\n\n## Request\n\n{task.instruction}"
            listed = (await client.list_resources()).resources
            assert [str(r.uri) for r in listed] == ["envsynth://policy"]
            got = await client.read_resource("envsynth://policy")
            assert got.contents[0].text == text

    anyio.run(main)


def test_the_user_simulator_insists_on_the_forbidden_part(corpus: Corpus) -> None:
    from envsynth.agents.user import request_text

    task = next(t for t in corpus.tasks if t.policy and t.policy.refusal)
    assert task.policy is not None and task.policy.request
    text = request_text(task)
    assert f"You really want this part done too: {task.policy.request}." in text and "insist once" in text
    plain = next(t for t in corpus.tasks if t.policy is None)
    assert "insist" not in request_text(plain)


def test_policy_reaches_the_code_mode_system_prompt(corpus: Corpus) -> None:
    from envsynth.agents import CODE_SYSTEM_PROMPT, ChatAgent
    from envsynth.llm import ScriptedProvider
    from envsynth.rollout import run_episode
    from envsynth.sandbox import CodeSandbox, Limits

    task = next(t for t in corpus.tasks if t.policy and t.policy.refusal)
    text = policy_text(corpus.apps[task.app].blueprint)
    agent = ChatAgent(ScriptedProvider(["I cannot do the second part: the policy forbids it."]), system_prompt=CODE_SYSTEM_PROMPT)
    with CodeSandbox(workers=1, limits=Limits(wall=3.0, cpu=1.0, memory=256 << 20, output=4000)) as sb:
        traj = asyncio.run(run_episode(corpus, task, agent, seed=0, sandbox=sb))
    system = traj.messages[0]["content"]
    assert system.startswith(CODE_SYSTEM_PROMPT.split("{tools}")[0]) and system.endswith(f"## Policy\n\n{text}")
    assert traj.score == 0.0  # refusing everything leaves the allowed part undone
