"""A scripted model that plays every LLM-builder role, for tests and offline demos.

Whatever the keyword, it designs the same domain (``job_seeking.yaml``: a job board with
28 archetype tools and 3 custom tools) and replies to each role the way a capable but
imperfect model would:

* designer: the first reply is cut-off JSON; the correction is the design;
* code agent: ``withdraw_application`` comes back with a bug (a wrong column) that the
  debug agent repairs; ``schedule_interview`` is right at once; ``score_candidate_match``
  has a bug the debug agent never manages to fix, so the tool is dropped;
* test agent: realistic cases with partial fixtures;
* dependency agent: one real missed edge (``save_job`` makes ``remove_saved_job``
  possible), one that does not execute and one to a made-up tool (each in the prompt
  about its target's group of tools);
* task writer: a friendlier wording of the procedural instruction; when it holds a
  quoted value, the first draft drops it (and is sent back by the rule checks);
* gating policy: expand while H has fewer than 25 tools and D is not empty (p = 0.75), then stop (p = 0.3).

Use :func:`scripted_builder` for a :class:`~envsynth.llm.ScriptedProvider` (a real
:class:`~envsynth.llm.types.ChatModel`), or :class:`ScriptedBuilder` as the reply
function of a local OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

from envsynth.blueprint.load import read_yaml
from envsynth.blueprint.nouns import row_noun, words
from envsynth.llm.mock import ScriptedProvider
from envsynth.llm.types import Message, message_text

_ROLE = re.compile(r"^# Role: (\w+)", re.MULTILINE)
_PHRASES = {"You are the dependency agent": "dependency", "You are the task writer": "task_writer", "You are the gating policy": "gating"}
_HERE = resources.files("envsynth.llmbuild.scripted")


@cache
def _design() -> dict[str, Any]:
    data = read_yaml((_HERE / "job_seeking.yaml").read_text(encoding="utf-8"))
    customs = data.pop("custom_tools")
    for ent in data["entities"]:
        _with_words(ent)
    for action in [*data["actions"], *customs]:
        action.setdefault("say", words(action["name"]))
    return {"blueprint": data, "custom_tools": customs}


def _with_words(ent: dict[str, Any]) -> None:
    """Give a table of the design the words the designer must write: ``called`` and a ``label`` per field of several words.

    The scripted designer writes the words envsynth would infer from the names, so its
    tasks read as they did before the words were required.
    """
    ent.setdefault("called", row_noun(ent["name"]))
    for f in ent["fields"]:
        if f["type"] not in ("id", "ref") and "_" in f["name"]:
            f.setdefault("label", words(f["name"]))


def _code(name: str) -> str:
    return (_HERE / "code" / f"{name}.txt").read_text(encoding="utf-8")


def role_of(messages: list[Message]) -> str:
    """The builder role a request is for (its prompt's ``# Role:`` line, or how the prompt introduces the role)."""
    for m in messages:
        text = message_text(m.get("content"))
        found = _ROLE.search(text)
        if found:
            return found.group(1)
        for phrase, role in _PHRASES.items():
            if text.startswith(phrase):
                return role
    return "unknown"


def _section(text: str, title: str) -> str:
    """The body of a ``## title`` section of a prompt."""
    found = re.search(rf"## {re.escape(title)}\n\n(.*?)(?:\n\n## |\Z)", text, re.DOTALL)
    return found.group(1).strip() if found else ""


def _tool_name(messages: list[Message]) -> str:
    text = next((message_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    found = re.search(r'TOOL:\s*\{\s*"tool":\s*\{\s*"name":\s*"(\w+)"', text)
    return found.group(1) if found else ""


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=1)


CASES: dict[str, list[dict[str, Any]]] = {
    "withdraw_application": [
        {
            "name": "withdraw an application in screening",
            "fixture": {
                "job_posting": [{"job_id": "job_100001", "status": "open", "applicant_count": 3}],
                "application": [{"application_id": "app_100001", "job_id": "job_100001", "status": "screening"}],
            },
            "arguments": {"application_id": "app_100001"},
            "expect": "success",
            "expect_result": {"status": "withdrawn", "applicant_count": 2},
            "expect_rows": {
                "application": [{"application_id": "app_100001", "status": "withdrawn"}],
                "job_posting": [{"job_id": "job_100001", "applicant_count": 2}],
            },
        },
        {
            "name": "the applicant count never goes below zero",
            "fixture": {
                "job_posting": [{"job_id": "job_100002", "applicant_count": 0}],
                "application": [{"application_id": "app_100002", "job_id": "job_100002", "status": "submitted"}],
            },
            "arguments": {"application_id": "app_100002"},
            "expect": "success",
            "expect_result": {"applicant_count": 0},
        },
        {
            "name": "a hired application cannot be withdrawn",
            "fixture": {"application": [{"application_id": "app_100003", "status": "hired"}]},
            "arguments": {"application_id": "app_100003"},
            "expect": "rejection",
        },
    ],
    "schedule_interview": [
        {
            "name": "schedule a video interview",
            "fixture": {"application": [{"application_id": "app_200001", "status": "screening"}]},
            "arguments": {"application_id": "app_200001", "scheduled_at": "2026-06-10T10:00:00", "mode": "video"},
            "expect": "success",
            "expect_result": {"application_id": "app_200001", "mode": "video", "status": "scheduled"},
            "expect_rows": {
                "application": [{"application_id": "app_200001", "status": "interviewing"}],
                "interview": [{"application_id": "app_200001", "mode": "video", "status": "scheduled"}],
            },
        },
        {
            "name": "an interview in the past is refused",
            "fixture": {"application": [{"application_id": "app_200002", "status": "interviewing"}]},
            "arguments": {"application_id": "app_200002", "scheduled_at": "2026-05-01T10:00:00", "mode": "phone"},
            "expect": "rejection",
        },
        {
            "name": "a submitted application is not screened yet",
            "fixture": {"application": [{"application_id": "app_200003", "status": "submitted"}]},
            "arguments": {"application_id": "app_200003", "scheduled_at": "2026-06-12T09:30:00", "mode": "onsite"},
            "expect": "rejection",
        },
    ],
    "score_candidate_match": [
        {
            "name": "six years for a mid-level role is a full match",
            "fixture": {
                "candidate": [{"candidate_id": "cand_300001", "years_experience": 6}],
                "job_posting": [{"job_id": "job_300001", "level": "mid"}],
            },
            "arguments": {"candidate_id": "cand_300001", "job_id": "job_300001"},
            "expect": "success",
            "expect_result": {"score": 100},
        }
    ],
}
"""The test agent's cases per tool."""


class ScriptedBuilder:
    """The reply function: ``(messages, tools, request_index) -> reply text`` for every role."""

    def __call__(self, messages: list[Message], tools: Any = None, index: int = 0) -> str:
        role = role_of(messages)
        handler = getattr(self, f"_{role}", None)
        if handler is None:
            return _dump({"error": f"the scripted builder plays no role {role!r}"})
        return str(handler(messages))

    @staticmethod
    def _designer(messages: list[Message]) -> str:
        text = _dump(_design())
        if not any(m.get("role") == "assistant" for m in messages):
            return "Here is the design:\n```json\n" + text[: len(text) // 3] + "\n```"  # cut off: invalid
        return "```json\n" + text + "\n```"

    @staticmethod
    def _coder(messages: list[Message]) -> str:
        name = _tool_name(messages)
        code = _code(f"{name}.buggy") if name in ("withdraw_application", "score_candidate_match") else _code(name)
        return _dump({"code": code, "notes": f"Implements {name}."})

    @staticmethod
    def _tester(messages: list[Message]) -> str:
        return _dump({"cases": CASES.get(_tool_name(messages), [])})

    @staticmethod
    def _debugger(messages: list[Message]) -> str:
        name = _tool_name(messages)
        if name == "withdraw_application":
            return _dump({"diagnosis": "job_posting has no column 'applicants'; the counter is applicant_count.", "code": _code(name)})
        return _dump({"diagnosis": "The posting lookup failed; query the posting table again.", "code": _code(f"{name}.still_buggy")})

    @staticmethod
    def _dependency(messages: list[Message]) -> str:
        edges = [
            {
                "source": "save_job",
                "target": "remove_saved_job",
                "kind": "logic",
                "reason": "A posting can only be removed from a candidate's saved jobs after it was saved.",
            },
            {
                "source": "get_company",
                "target": "hire_candidate",
                "kind": "data",
                "param": "application_id",
                "field": "company_id",
                "reason": "Hiring happens at a company.",
            },
            {"source": "post_job", "target": "send_offer_letter", "kind": "logic", "reason": "Offers follow postings."},
        ]
        text = message_text(messages[0].get("content"))
        detailed = set(re.findall(r"^- (\w+)\(", _section(text, "Tools"), re.MULTILINE))
        listed = set(re.findall(r"^- (\w+)\(", _section(text, "Every tool of the app"), re.MULTILINE)) or detailed
        # a prompt about one group of tools gets the edges into that group (an edge to a made-up tool: with its source)
        mine = [e for e in edges if e["target"] in detailed or (e["target"] not in listed and e["source"] in detailed)]
        return _dump({"edges": mine})

    @staticmethod
    def _task_writer(messages: list[Message]) -> str:
        prompt_text = message_text(messages[0].get("content"))
        instruction = _section(prompt_text, "The procedural instruction")
        try:
            user = json.loads(_section(prompt_text, "The user"))
        except ValueError:
            user = {}
        text = instruction.replace("I need you to ", "Could you please ").replace("Please ", "Could you please ")
        if not re.match(r"(Hi|Hello)\b", text):
            text = "Hello! " + text
        first_draft = not any(m.get("role") == "assistant" for m in messages)
        if first_draft and '"' in text:
            text = re.sub(r'"[^"]*"', "the new value", text, count=1)  # a careless draft: the rule checks send it back
        reply = {"instruction": text, "name": user.get("name", ""), "role": user.get("role", "customer")}
        for key in ("email", "phone"):
            if user.get(key):
                reply[key] = user[key]
        return _dump(reply)

    @staticmethod
    def _gating(messages: list[Message]) -> str:
        text = message_text(messages[0].get("content"))
        h = re.search(r"Visible tools H \((\d+)\)", text)
        d = re.search(r"Remaining tools D = G \\ H \((\d+)\)", text)
        if h is not None and int(h.group(1)) < 25 and (d is None or int(d.group(1)) > 0):
            return _dump({"p": 0.75, "reason": "D still holds executable chains that fit the domain; H can grow."})
        return _dump({"p": 0.3, "reason": "H is rich enough for this task."})


def scripted_builder(model: str = "scripted-builder") -> ScriptedProvider:
    """A :class:`~envsynth.llm.ScriptedProvider` playing every builder role (see the module docstring)."""
    builder = ScriptedBuilder()
    return ScriptedProvider(lambda messages, tools, i: builder(messages, tools, i), model=model)
