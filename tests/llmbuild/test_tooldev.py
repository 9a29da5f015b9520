"""The debug loop: cases are fixed, never dropped to make a tool pass; the debugger sees its earlier rounds."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from envsynth.llm import ScriptedProvider
from envsynth.llm.types import Message, message_text
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.design import DomainDesign
from envsynth.llmbuild.scripted import CASES, ScriptedBuilder, _design, role_of
from envsynth.llmbuild.tooldev import CaseVerdict, DebugReply, TestCase, develop_tool, merge_cases

TOOL = "score_candidate_match"
FULL_MATCH = CASES[TOOL][0]["name"]  # six years for a mid-level role: expects a score of 100

# off by a hundredth: the unit case catches it, the procedural cases (no declared post-condition on the score) do not
NEARLY = """posting = ctx.one('SELECT * FROM "job_posting" WHERE "job_id" = ?', (job_id,), "job_posting")
wanted = {"junior": 1, "mid": 3, "senior": 7}[posting["level"]]
ratio = candidate["years_experience"] / wanted
return {"candidate_id": candidate_id, "job_id": job_id, "score": min(99.99, round(100 * ratio, 2))}
"""

PASSING_CASE = {
    "name": "a junior role needs one year",
    "fixture": {
        "candidate": [{"candidate_id": "cand_300002", "years_experience": 0}],
        "job_posting": [{"job_id": "job_300002", "level": "junior"}],
    },
    "arguments": {"candidate_id": "cand_300002", "job_id": "job_300002"},
    "expect": "success",
    "expect_result": {"score": 0},
}

DELETIONS = [
    {"diagnosis": "The test case is unnecessary.", "cases": []},
    {"diagnosis": "Replacing the cases with a better one.", "cases": [PASSING_CASE]},
    {"diagnosis": "The full-match case is not needed.", "drop": [{"case": FULL_MATCH, "reason": "it is not needed"}]},
]


def design() -> DomainDesign:
    return DomainDesign.model_validate(_design())


def provider(debug_replies: list[dict[str, Any]], code: str | None = None) -> ScriptedProvider:
    """The scripted builder, with ``code`` from the code agent and the debug agent answering ``debug_replies`` in turn."""
    builder = ScriptedBuilder()
    rounds = iter(debug_replies)

    def reply(messages: list[Message], tools: Any, i: int) -> str:
        role = role_of(messages)
        if role == "debugger":
            return json.dumps(next(rounds))
        if role == "coder" and code is not None:
            return json.dumps({"code": code, "notes": ""})
        return builder(messages, tools, i)

    return ScriptedProvider(reply)


def test_a_failing_tool_does_not_ship_by_deleting_its_failing_case() -> None:
    llm = provider(DELETIONS, code=NEARLY)
    out = asyncio.run(develop_tool(BuilderClient(llm), design(), TOOL, rounds=3))
    assert not out.passed and out.debug_rounds == 3
    assert out.dropped is not None and f"{FULL_MATCH}: expected success, got wrong_result" in out.dropped
    assert FULL_MATCH in [c.name for c in out.cases] and PASSING_CASE["name"] in [c.name for c in out.cases]
    refused = [note for h in out.history for note in h["refused"]]
    assert any("left out of your cases: kept" in n for n in refused)
    assert any(f"drop of {FULL_MATCH!r} refused" in n for n in refused)
    assert any(v.kind == "procedural" for v in out.verdicts)  # the procedural cases ran in every round


def test_a_fixed_case_makes_the_tool_pass() -> None:
    fixed = {**CASES[TOOL][0], "expect_result": {"score": 99.99}}  # the expectation is fixed, not deleted
    llm = provider([{"diagnosis": "The spec caps the score below 100.", "cases": [fixed]}], code=NEARLY)
    out = asyncio.run(develop_tool(BuilderClient(llm), design(), TOOL, rounds=3))
    assert out.passed and out.debug_rounds == 1 and [c.name for c in out.cases] == [FULL_MATCH]


def test_only_a_broken_or_repeated_case_may_be_dropped() -> None:
    a = TestCase.model_validate(PASSING_CASE)
    b = TestCase.model_validate({**PASSING_CASE, "name": "same again"})
    c = TestCase.model_validate({**PASSING_CASE, "name": "bad fixture", "fixture": {"nope": [{}]}})
    verdicts = [CaseVerdict("bad fixture", "unit", False, "success", "fixture_error")]
    reply = DebugReply.model_validate(
        {"diagnosis": "x", "drop": [{"case": n, "reason": "r"} for n in ("same again", "bad fixture", "ghost")]}
    )
    cases, notes = merge_cases([a, b, c], reply, verdicts)
    assert [x.name for x in cases] == [a.name] and notes == ["drop of 'ghost' refused: there is no such case"]
    reply = DebugReply.model_validate({"diagnosis": "x", "drop": [{"case": a.name, "reason": "r"}]})
    cases, notes = merge_cases([a, c], reply, verdicts)
    assert [x.name for x in cases] == [a.name, c.name] and "refused" in notes[0]


def test_the_debugger_sees_its_earlier_rounds_and_each_round_is_asked(tmp_path: Path) -> None:
    llm = ScriptedProvider(lambda m, t, i: ScriptedBuilder()(m, t, i))
    client = BuilderClient(llm, cache_dir=tmp_path)
    out = asyncio.run(develop_tool(client, design(), TOOL, rounds=3))
    assert not out.passed and out.debug_rounds == 3
    asked = [message_text(r[-1]["content"]) for r in llm.requests if role_of(r) == "debugger"]
    assert len(asked) == 3 and client.stats["debugger"].cache_hits == 0  # rounds 2 and 3 send one code: both asked
    assert "EARLIER ROUNDS" not in asked[0]
    assert "Round 1:" in asked[1] and "The posting lookup failed" in asked[1]
    assert "Round 1:" in asked[2] and "Round 2:" in asked[2]


def test_the_code_and_test_agents_get_only_the_tools_tables_when_the_schema_does_not_fit() -> None:
    def coder_prompt(context: int) -> tuple[str, bool]:
        llm = ScriptedProvider(lambda m, t, i: ScriptedBuilder()(m, t, i))
        client = BuilderClient(llm, context_tokens=context)
        out = asyncio.run(develop_tool(client, design(), "withdraw_application", rounds=3))
        asked = next(r for r in llm.requests if role_of(r) == "coder")
        return message_text(asked[-1]["content"]), out.passed and client.fits(asked)

    whole, passed = coder_prompt(8192)
    assert passed and 'CREATE TABLE "interview"' in whole and "not shown" not in whole
    small, passed = coder_prompt(5000)
    assert passed and 'CREATE TABLE "interview"' not in small and "2 other tables not shown: interview, saved_job" in small
    assert 'CREATE TABLE "application"' in small and 'CREATE TABLE "job_posting"' in small


def test_a_verdicts_detail_is_the_same_in_every_run() -> None:
    """What changes between runs (an object's address, the checkout's path) is not in the debug agent's prompt: its cache key holds."""
    from envsynth.llmbuild.tooldev import stable_detail

    one = 'File "/home/a/src/envsynth/runtime/toolkit.py", line 3\nTypeError: <sqlite3.Cursor object at 0x7f3a2b1c9d40>'
    two = 'File "/srv/b/envsynth/runtime/toolkit.py", line 3\nTypeError: <sqlite3.Cursor object at 0x7ffe00112233>'
    assert (
        stable_detail(one)
        == stable_detail(two)
        == ('File "envsynth/runtime/toolkit.py", line 3\nTypeError: <sqlite3.Cursor object at 0x...>')
    )
    assert stable_detail('File "/sandbox/worker.py", line 9') == 'File "/sandbox/worker.py", line 9'
    assert stable_detail("x" * 2000) == "x" * 1500
