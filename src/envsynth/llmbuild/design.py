"""The domain designer: a keyword becomes a blueprint (archetype actions) and custom tool designs.

The designer's reply is checked twice: by its pydantic schema (the client's bounded
retry on invalid output), then by what ``envsynth check`` runs on a blueprint file (every
reference, condition and generator, then compiling the app and running each
expression once; :func:`envsynth.check.check_data`), with the custom tools inserted as
actions whose body is a placeholder. Every problem found goes back to the model at
once, one line each as ``envsynth check`` prints it (``design: custom_tools[1].pre[0]:
...``), for up to ``max_rounds`` replies; a design still wrong after the last round fails
with the problems left (:class:`~envsynth.llmbuild.errors.DesignProblems`). The
placeholder body is compiled for syntax only, never run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envsynth.blueprint.load import from_dict
from envsynth.blueprint.models import Blueprint
from envsynth.llmbuild.client import BuilderClient, DesignProblems
from envsynth.llmbuild.prompts import prompt

DESIGN_ROUNDS = 4
"""``--max-rounds``: the designer's replies checked at most (the first and its corrections)."""

SOURCE = "design"
"""How the problems name the design (``envsynth check`` names the file)."""

PLACEHOLDER = "return {}"
"""The body custom tools carry until the code agent writes theirs (validation only, never run)."""


class CustomToolDesign(BaseModel):
    """A custom action as designed: everything but its code."""

    model_config = ConfigDict(extra="forbid")

    name: str
    entity: str
    mode: Literal["read", "write"]
    description: str
    params: list[dict[str, Any]] = Field(default_factory=list)
    bind: dict[str, str] = Field(default_factory=dict)
    pre: list[Any] = Field(default_factory=list)
    post: list[Any] = Field(default_factory=list)
    writes: dict[str, list[str]] = Field(default_factory=dict)
    creates: list[str] = Field(default_factory=list)
    deletes: list[str] = Field(default_factory=list)
    returns: str = ""
    say: str | None = None
    reasons: list[str] = Field(default_factory=list)
    asked_by: list[str] | None = None

    def action(self, code: str) -> dict[str, Any]:
        """The blueprint action of this tool with ``code`` as its (untrusted) body (language keys only when given)."""
        data = self.model_dump(exclude={"say", "reasons", "asked_by"})
        words = self.model_dump(include={"say", "reasons", "asked_by"}, exclude_none=True, exclude_defaults=True)
        return {"kind": "custom", **data, **words, "code": code, "untrusted": True}


class DomainDesign(BaseModel):
    """The designer's reply: a blueprint of archetype actions and the custom tools to implement."""

    model_config = ConfigDict(extra="forbid")

    blueprint: dict[str, Any]
    custom_tools: list[CustomToolDesign] = Field(default_factory=list)

    def _located(self, line: str) -> str:
        """A problem line with ``actions[i]`` of a custom tool renamed ``custom_tools[j]``."""
        n = len(self.blueprint.get("actions") or [])
        for j in range(len(self.custom_tools)):
            line = line.replace(f"actions[{n + j}]", f"custom_tools[{j}]")
        return line

    def data(self, code: dict[str, str], keep: set[str] | None = None) -> dict[str, Any]:
        """The blueprint as plain data, with the custom tools in ``keep`` (default: all), bodies from ``code``."""
        data = json.loads(json.dumps(self.blueprint))  # a deep copy
        data.setdefault("actions", [])
        if not isinstance(data["actions"], list):
            return data  # left as it is: the check reports it, and there is no list to add the custom tools to
        for t in self.custom_tools:
            if keep is None or t.name in keep:
                data["actions"].append(t.action(code.get(t.name, PLACEHOLDER)))
        return data

    def problems(self) -> list[str]:
        """Every problem of the design, one line each as ``envsynth check`` reports them (none: it builds)."""
        from envsynth.check import check_data, one_line

        data = self.data({})
        try:
            report = check_data(data, SOURCE)
        except Exception as exc:  # the checker itself failed on this data: that is the problem to report
            return [f"{SOURCE}: the blueprint cannot be checked: {type(exc).__name__}: {one_line(str(exc))[:300]}"]
        found = [one_line(p.line()) for p in report.problems] + convention_problems(data)
        found += [f"{one_line(w.line())}: write it" for w in report.warnings]
        return [self._located(line) for line in found]

    def to_blueprint(self, code: dict[str, str], keep: set[str] | None = None) -> Blueprint:
        """The blueprint with the custom tools in ``keep`` (default: all), bodies from ``code``.

        Raises:
            BlueprintError: the design does not load (see :meth:`problems`).
        """
        return from_dict(self.data(code, keep), source=SOURCE)

    def tool(self, name: str) -> CustomToolDesign:
        return next(t for t in self.custom_tools if t.name == name)


VERBS = frozenset(
    w
    for line in (resources.files("envsynth.llmbuild") / "prompts" / "verbs.txt").read_text(encoding="utf-8").splitlines()
    if not line.startswith("#")
    for w in line.split()
)
"""The words a tool name may start with (``snake_case`` verbs: ``assign_task``, ``search_orders``)."""


def _raw_list(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The mappings of the list ``data[key]`` (others left to the check)."""
    items = data.get(key)
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def convention_problems(data: dict[str, Any]) -> list[str]:
    """The naming conventions a design breaks: ids named ``id``, tool names that are no verbs; one line each."""
    out = []
    for i, ent in enumerate(_raw_list(data, "entities")):
        for j, f in enumerate(_raw_list(ent, "fields")):
            if f.get("name") == "id":
                out.append(f"{SOURCE}: entities[{i}].fields[{j}].name: an id named 'id'; name it '{ent.get('name')}_id'")
    for i, action in enumerate(_raw_list(data, "actions")):
        out += _action_naming(i, action)
    return out


def _action_naming(i: int, action: dict[str, Any]) -> list[str]:
    """The naming problems of ``actions[i]``: a name that does not start with a verb, parameters named ``id``."""
    name = str(action.get("name", ""))
    out = []
    if name and name.split("_")[0] not in VERBS:
        out.append(
            f"{SOURCE}: actions[{i}].name: {name!r} is not a verb phrase; name a tool by what it does, in snake_case "
            f"starting with a verb (get_, search_, create_, update_, cancel_, score_...), e.g. 'get_{name}'"
        )
    for j, p in enumerate(_raw_list(action, "params")):
        if p.get("name") == "id":
            table = p.get("ref") or action.get("entity") or "table"
            out.append(f"{SOURCE}: actions[{i}].params[{j}].name: {name}: a parameter named 'id'; name it '{table}_id'")
    return out


@dataclass
class Designed:
    """The designer's outcome: the design that checks, and the problems each round's reply had.

    Attributes:
        design: the last reply (it has no problem).
        rounds: per reply checked, its problems (the last is empty).
    """

    design: DomainDesign
    rounds: list[list[str]] = field(default_factory=list)


MAX_NOTE_CHARS = 6000
"""The problem list of a correction at most (a design with more shows the first ones and how many are left out)."""


def problem_list(problems: list[str], limit: int = MAX_NOTE_CHARS) -> str:
    """``problems`` one a line (``- ...``), as many as fit ``limit`` characters, then how many are not shown."""
    lines: list[str] = []
    size = 0
    for p in problems:
        if lines and size + len(p) + 3 > limit:
            lines.append(f"- ... and {len(problems) - len(lines)} more problem(s), shown once these are fixed")
            break
        lines.append(f"- {p}")
        size += len(p) + 3
    return "\n".join(lines)


def correction_note(problems: list[str], round_no: int, max_rounds: int) -> str:
    """The request to fix ``problems`` (all of them, one a line) after reply ``round_no`` of ``max_rounds``."""
    left = max_rounds - round_no
    return (
        f"Your design loads as JSON but its blueprint has {len(problems)} problem(s), as `envsynth check` reports them:\n"
        f"{problem_list(problems)}\n"
        f"Fix every one of them (you have {left} more {'reply' if left == 1 else 'replies'}) and reply with the WHOLE "
        'corrected design: ONE JSON object {"blueprint": ..., "custom_tools": [...]}, and nothing else.'
    )


NO_EXAMPLE = "(The worked example was in the first request; fix the problems listed after your design.)"
"""What stands for the worked example in a correction round's prompt (the problems to fix take its room)."""


def design_messages(keyword: str, description: str | None = None, *, example: bool = True) -> list[dict[str, str]]:
    """The designer's request: its prompt (with the worked example, unless ``example`` is False) and the keyword."""
    ask = f"Domain keyword: {keyword}"
    if description:
        ask += f"\nDescription: {description}"
    system = prompt("designer") if example else prompt("designer", example=NO_EXAMPLE)
    return [{"role": "system", "content": system}, {"role": "user", "content": ask}]


async def design_domain(
    client: BuilderClient, keyword: str, description: str | None = None, *, max_rounds: int = DESIGN_ROUNDS
) -> Designed:
    """Ask the designer for a domain (role ``designer``), with every problem sent back, for up to ``max_rounds`` replies.

    Raises:
        envsynth.llmbuild.client.StructuredOutputError: a reply that is no valid JSON design within the client's retries.
        DesignProblems: the last round's design still has problems (listed).
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, got {max_rounds}")
    messages = design_messages(keyword, description)
    shorter = design_messages(keyword, description, example=False)  # correction rounds: the problems instead of the example
    out: list[list[str]] = []
    convo = messages
    for round_no in range(1, max_rounds + 1):
        design = await client.structured("designer", convo, DomainDesign, retry_messages=shorter if convo is messages else None)
        problems = design.problems()
        out.append(problems)
        if not problems:
            return Designed(design, out)
        if round_no < max_rounds:
            reply = json.dumps(design.model_dump(), indent=1, ensure_ascii=False)
            convo = client.follow_up(shorter, reply, correction_note(problems, round_no, max_rounds), DomainDesign.model_json_schema())
    raise DesignProblems(out)
