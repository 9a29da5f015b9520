"""The designer's naming and language conventions, and the debug agent's spec amendments.

A designer reply with a parameter named ``id``, a tool named by a noun and a table without
``called`` is sent back with every one of those problems and is fixed in round 2. A debug
reply that deletes a rule is refused (the round counts); an amendment that adds a rule is
applied, recorded in the build report and shown in its table.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from envsynth.llm import ScriptedProvider
from envsynth.llm.types import Message, message_text
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.command import metrics_rows
from envsynth.llmbuild.design import DomainDesign, convention_problems, design_domain
from envsynth.llmbuild.pipeline import build_llm_corpus
from envsynth.llmbuild.scripted import ScriptedBuilder, _design, role_of
from envsynth.llmbuild.tooldev import develop_tool

TOOL = "withdraw_application"  # one pre-condition; the scripted debugger repairs its code in round 1
NEW_RULE = {"check": "application.status != 'hired'", "message": "A hired application cannot be withdrawn."}


def named_badly() -> dict[str, Any]:
    """The scripted design with a parameter named ``id``, a tool named by a noun and a table without ``called``."""
    bad = json.loads(json.dumps(_design()))
    schedule = bad["custom_tools"][1]
    schedule["params"][0]["name"] = "id"
    schedule["pre"] = [{"check": "scheduled_at > now()", "message": "{scheduled_at} is in the past."}]
    schedule["post"] = []
    bad["blueprint"]["actions"][3]["name"] = "company_directory"  # search_companies
    bad["blueprint"]["entities"][1].pop("called")
    return bad


class RenamingDesigner(ScriptedBuilder):
    """The scripted builder whose designer first names badly, then replies with the good design."""

    def _designer(self, messages: list[Message]) -> str:  # type: ignore[override]
        return json.dumps(_design() if any(m.get("role") == "assistant" for m in messages) else named_badly())


def test_conventions_find_id_parameters_and_noun_names() -> None:
    design = DomainDesign.model_validate(named_badly())
    lines = convention_problems(design.data({}))
    assert any("actions[3].name: 'company_directory' is not a verb phrase" in line for line in lines)
    assert any("a parameter named 'id'; name it 'application_id'" in line for line in lines)
    assert convention_problems({"entities": [{"name": "pet", "fields": [{"name": "id", "type": "id"}]}]}) == [
        "design: entities[0].fields[0].name: an id named 'id'; name it 'pet_id'"
    ]
    assert convention_problems(DomainDesign.model_validate(_design()).data({})) == []


def test_badly_named_design_is_corrected_in_round_2() -> None:
    builder = RenamingDesigner()
    llm = ScriptedProvider(lambda m, t, i: builder(m, t, i), model="scripted-builder")
    designed = asyncio.run(design_domain(BuilderClient(llm), "Job Seeking"))
    assert len(llm.requests) == 2 and len(designed.rounds[0]) >= 3 and designed.rounds[1] == []
    note = message_text(llm.requests[1][-1]["content"])
    assert "'company_directory' is not a verb phrase" in note
    assert "custom_tools[1].params[0].name: schedule_interview: a parameter named 'id'; name it 'application_id'" in note
    assert "entities[1].called: table company has no called" in note and ": write it" in note
    assert "reassign_open_tasks" not in message_text(llm.requests[1][0]["content"])  # the correction round leaves the example out


def debugging(replies: list[dict[str, Any]]) -> ScriptedProvider:
    """The scripted builder, its debug agent answering ``replies`` in turn for :data:`TOOL`."""
    builder = ScriptedBuilder()
    rounds = iter(replies)

    def reply(messages: list[Message], tools: Any, i: int) -> str:
        if role_of(messages) == "debugger" and TOOL in message_text(messages[-1]["content"]):
            return json.dumps(next(rounds))
        return builder(messages, tools, i)

    return ScriptedProvider(reply, model="scripted-builder")


def fixed_code() -> str:
    from envsynth.llmbuild.scripted import _code

    return _code(TOOL)


def test_a_reply_that_deletes_a_rule_is_refused_and_the_round_counts() -> None:
    design = DomainDesign.model_validate(_design())
    deleting = {"diagnosis": "The status rule is in the way.", "amend": {"reason": "it blocks the tests", "pre": []}}
    fixing = {"diagnosis": "job_posting has no column 'applicants'.", "code": fixed_code()}
    llm = debugging([deleting, fixing])
    out = asyncio.run(develop_tool(BuilderClient(llm), design, TOOL, rounds=3))
    assert out.passed and out.debug_rounds == 2  # the refused round counted
    (amendment,) = out.amendments
    assert not amendment["accepted"] and "removes 1 pre-condition(s)" in amendment["refused"]
    assert len(design.tool(TOOL).pre) == 1  # the rule stays
    assert "never deleted" in out.history[0]["refused"][0]
    second = [r for r in llm.requests if role_of(r) == "debugger"][1]
    assert "amendment refused" in message_text(second[-1]["content"])  # shown to the debug agent in its next round


def test_a_rule_relaxed_into_one_that_always_holds_is_a_deletion() -> None:
    from envsynth.llmbuild.tooldev import SpecAmendment, amendment_problem

    design = DomainDesign.model_validate(_design())
    assert "removes 1" in amendment_problem(design, TOOL, SpecAmendment(reason="r", pre=["True"]))


class AmendingDebugger(ScriptedBuilder):
    """The scripted builder whose debug agent adds a rule to :data:`TOOL` with its fix."""

    def _debugger(self, messages: list[Message]) -> str:  # type: ignore[override]
        if TOOL not in message_text(messages[-1]["content"]):
            return super()._debugger(messages)
        old = _design()["custom_tools"][0]["pre"]
        amend = {"reason": "hired applications must say so", "pre": [*old, NEW_RULE]}
        return json.dumps({"diagnosis": "the counter is applicant_count", "code": fixed_code(), "amend": amend})


def test_an_amendment_is_applied_recorded_and_shown(tmp_path: Path) -> None:
    builder = AmendingDebugger()
    llm = ScriptedProvider(lambda m, t, i: builder(m, t, i), model="scripted-builder")
    out = tmp_path / "c"
    res = build_llm_corpus(out, ["Job Seeking"], BuilderClient(llm, cache_dir=out / ".llm-cache"))
    (domain,) = res.domains
    assert NEW_RULE in domain.design.tool(TOOL).pre  # the shipped tool has the new rule
    shipped = next(a for a in domain.blueprint.actions if a.name == TOOL)
    assert NEW_RULE["check"] in [c.check for c in shipped.pre]
    (amendment,) = res.metrics["domains"]["Job Seeking"]["spec_amendments"][TOOL]
    assert amendment["accepted"] and amendment["round"] == 1 and amendment["changes"]["pre"][-1] == NEW_RULE
    written = json.loads((out / "llm_build.json").read_text(encoding="utf-8"))
    assert written["domains"]["Job Seeking"]["spec_amendments"][TOOL] == [amendment]
    rows = dict(metrics_rows(written))
    assert rows[f"Job Seeking: {TOOL} spec amendment"] == "round 1: pre (hired applications must say so): applied"
