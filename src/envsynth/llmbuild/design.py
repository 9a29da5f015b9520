"""The domain designer: a keyword becomes a blueprint (archetype actions) and custom tool designs.

The designer's reply is validated twice: by its pydantic schema, and by the blueprint
loader (every reference, condition and generator), with the custom tools inserted as
actions whose body is a placeholder. A loader error goes back to the model with its path
(``custom_tools[1].pre[0]: ...``) through the client's bounded retry on invalid output.
The placeholder body is compiled for syntax only, never run.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import from_dict
from envsynth.blueprint.models import Blueprint
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.prompts import prompt

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

    def action(self, code: str) -> dict[str, Any]:
        """The blueprint action of this tool with ``code`` as its (untrusted) body."""
        return {"kind": "custom", **self.model_dump(), "code": code, "untrusted": True}


class DomainDesign(BaseModel):
    """The designer's reply: a blueprint of archetype actions and the custom tools to implement."""

    model_config = ConfigDict(extra="forbid")

    blueprint: dict[str, Any]
    custom_tools: list[CustomToolDesign] = Field(default_factory=list)

    @model_validator(mode="after")
    def _loads(self) -> DomainDesign:
        try:
            self.to_blueprint({})
        except BlueprintError as exc:
            raise ValueError(self._located(exc)) from None
        return self

    def _located(self, exc: BlueprintError) -> str:
        """The loader's message, with ``actions[i]`` of a custom tool renamed ``custom_tools[j]``."""
        text = str(exc)
        n = len(self.blueprint.get("actions") or [])
        for j in range(len(self.custom_tools)):
            text = text.replace(f"actions[{n + j}]", f"custom_tools[{j}]")
        return text

    def to_blueprint(self, code: dict[str, str], keep: set[str] | None = None) -> Blueprint:
        """The blueprint with the custom tools in ``keep`` (default: all), bodies from ``code``.

        Raises:
            BlueprintError: the design does not load (see the module docstring).
        """
        data = json.loads(json.dumps(self.blueprint))  # a deep copy
        data.setdefault("actions", [])
        for t in self.custom_tools:
            if keep is None or t.name in keep:
                data["actions"].append(t.action(code.get(t.name, PLACEHOLDER)))
        return from_dict(data, source="design")

    def tool(self, name: str) -> CustomToolDesign:
        return next(t for t in self.custom_tools if t.name == name)


async def design_domain(client: BuilderClient, keyword: str, description: str | None = None) -> DomainDesign:
    """Ask the designer for a domain (role ``designer``).

    Raises:
        envsynth.llmbuild.client.StructuredOutputError: no valid design within the retries.
    """
    ask = f"Domain keyword: {keyword}"
    if description:
        ask += f"\nDescription: {description}"
    messages = [{"role": "system", "content": prompt("designer")}, {"role": "user", "content": ask}]
    return await client.structured("designer", messages, DomainDesign)
