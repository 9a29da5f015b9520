"""The designer's correction rounds: every problem of the blueprint at once, a bounded number of rounds.

A scripted designer replies with a design that parses but has three independent
problems (an unknown entity, an unknown parameter type, a custom tool on an unknown
entity), then, if it is meant to, the good design. The next prompt must carry all three
problems as ``envsynth check`` prints them; a design never fixed ends after
``max_rounds`` replies with an error listing what is left. Then a whole build with that
designer: the metrics agree with each other and with the requests made, and a rerun
answers every request from the cache.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from envsynth.check import check_data
from envsynth.llm import ScriptedProvider
from envsynth.llm.types import Message, message_text
from envsynth.llmbuild.client import BuilderClient, DesignProblems
from envsynth.llmbuild.design import DomainDesign, design_domain
from envsynth.llmbuild.pipeline import build_llm_corpus
from envsynth.llmbuild.scripted import ScriptedBuilder, _design

PROBLEMS = 3


def bad_design() -> dict[str, Any]:
    """The scripted design with three independent problems."""
    bad = json.loads(json.dumps(_design()))
    bad["blueprint"]["actions"][0]["entity"] = "nope"
    bad["blueprint"]["actions"][2]["params"] = [{"name": "x", "type": "strin"}]
    bad["custom_tools"][2]["entity"] = "ghost"
    return bad


def corrections(messages: list[Message]) -> int:
    """How many of the designer's replies a request already holds."""
    return sum(m.get("role") == "assistant" for m in messages)


class FixingDesigner(ScriptedBuilder):
    """The scripted builder, whose designer first replies with :func:`bad_design` and then with the good one."""

    def __init__(self, fixes: bool = True) -> None:
        self.fixes = fixes

    def _designer(self, messages: list[Message]) -> str:  # type: ignore[override]
        good = self.fixes and corrections(messages) >= 1
        return json.dumps(_design() if good else bad_design())


def provider(fixes: bool = True) -> ScriptedProvider:
    builder = FixingDesigner(fixes)
    return ScriptedProvider(lambda messages, tools, i: builder(messages, tools, i), model="scripted-builder")


def check_lines() -> list[str]:
    """The bad design's problems as ``envsynth check`` reports them, custom tools named as the designer named them."""
    bad = DomainDesign.model_validate(bad_design())
    lines = [p.line() for p in check_data(bad.data({}), "design").problems]
    return [bad._located(line) for line in lines]


def test_check_finds_the_three_problems() -> None:
    lines = check_lines()
    assert len(lines) == PROBLEMS
    assert any("custom_tools[2].entity" in line and "ghost" in line for line in lines)


def test_every_problem_goes_back_at_once_and_the_fix_passes_in_round_2() -> None:
    llm = provider()
    designed = asyncio.run(design_domain(BuilderClient(llm), "Job Seeking"))
    assert len(llm.requests) == 2
    assert [len(r) for r in designed.rounds] == [PROBLEMS, 0]
    note = message_text(llm.requests[1][-1]["content"])
    for line in check_lines():
        assert line in note, line
    assert f"{PROBLEMS} problem(s)" in note
    assert designed.design.problems() == [] and designed.design.to_blueprint({}).name == "job_seeking"


def test_a_design_never_fixed_ends_after_max_rounds_with_what_is_left() -> None:
    llm = provider(fixes=False)
    with pytest.raises(DesignProblems) as caught:
        asyncio.run(design_domain(BuilderClient(llm), "Job Seeking", max_rounds=3))
    assert len(llm.requests) == 3
    err = caught.value
    assert err.rounds == 3 and err.problems == check_lines() and [len(h) for h in err.history] == [PROBLEMS] * 3
    text = str(err)
    assert f"{PROBLEMS} problem(s) after 3 round(s) (--max-rounds 3)" in text
    assert all(line in text for line in check_lines())


def test_a_failed_design_is_a_failed_domain_with_the_problems(tmp_path: Path) -> None:
    llm = provider(fixes=False)
    out = tmp_path / "c"
    res = build_llm_corpus(out, ["Job Seeking"], BuilderClient(llm, cache_dir=out / ".llm-cache"), design_rounds=2)
    (domain,) = res.domains
    assert domain.blueprint is None and "after 2 round(s)" in str(domain.error)
    m = res.metrics["domains"]["Job Seeking"]
    assert m["design_rounds"] == 2 and m["design_problems"] == [PROBLEMS, PROBLEMS] and m["design_problems_left"] == check_lines()
    assert res.metrics["generation_success_rate"] == 0.0


def test_the_metrics_agree_and_a_rerun_hits_the_cache_for_every_request(tmp_path: Path) -> None:
    out = tmp_path / "c"
    llm = provider()
    first = build_llm_corpus(out, ["Job Seeking"], BuilderClient(llm, cache_dir=out / ".llm-cache"))
    client = first.metrics["client"]
    domain = first.metrics["domains"]["Job Seeking"]
    assert domain["design_rounds"] == 2 and domain["design_problems"] == [PROBLEMS, 0]
    assert client["total"]["calls"] == client["total"]["requests"] == len(llm.requests)
    assert client["roles"]["designer"]["calls"] == 2 and client["roles"]["designer"]["invalid_outputs"] == 0  # loader problems are rounds
    assert domain["roles"] == client["roles"] | {r: v for r, v in domain["roles"].items() if r not in client["roles"]}
    assert first.metrics["cumulative"]["total"] == client["total"]

    again = tmp_path / "again"
    offline = ScriptedProvider([], model="scripted-builder")  # any real call would fail
    rerun = build_llm_corpus(again, ["Job Seeking"], BuilderClient(offline, cache_dir=out / ".llm-cache"))
    total = rerun.metrics["client"]["total"]
    assert offline.requests == [] and total["calls"] == total["requests"] == total["total_tokens"] == 0
    assert total["cache_hits"] == len(llm.requests) + client["total"]["cache_hits"]
    assert total["invalid_outputs"] == 0  # nothing came from the endpoint in this run
    assert rerun.metrics["domains"]["Job Seeking"]["design_problems"] == [PROBLEMS, 0]


def test_a_replayed_invalid_reply_is_not_counted_again(tmp_path: Path) -> None:
    """The shipped scripted designer's first reply is cut off: invalid once, from the endpoint, and never again from the cache."""
    from envsynth.llmbuild.scripted import scripted_builder

    out = tmp_path / "c"
    first = build_llm_corpus(out, ["Job Seeking"], BuilderClient(scripted_builder(), cache_dir=out / ".llm-cache"))
    assert first.metrics["client"]["roles"]["designer"]["invalid_outputs"] == 1
    rerun = build_llm_corpus(
        tmp_path / "again", ["Job Seeking"], BuilderClient(ScriptedProvider([], model="scripted-builder"), cache_dir=out / ".llm-cache")
    )
    designer = rerun.metrics["client"]["roles"]["designer"]
    assert designer["calls"] == 0 and designer["cache_hits"] == 2 and designer["invalid_outputs"] == 0


def test_a_long_problem_list_is_bounded_and_says_what_it_leaves_out() -> None:
    from envsynth.llmbuild.design import problem_list

    problems = [f"design: actions[{i}].entity: unknown entity 'e{i}'" for i in range(500)]
    text = problem_list(problems, limit=2000)
    assert len(text) < 2100 and text.startswith("- design: actions[0].entity")
    shown = text.count("\n")
    assert text.endswith(f"- ... and {500 - shown} more problem(s), shown once these are fixed")
    assert problem_list(problems[:3]) == "\n".join(f"- {p}" for p in problems[:3])
