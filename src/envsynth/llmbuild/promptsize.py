"""How large each role's prompt is for a big catalogue domain (the sizes docs/llm-builder.md lists).

:func:`prompt_sizes` renders every role's request (system and user messages, as sent in
prompt mode without the schema) for a shipped catalogue app, with its custom tools as the
designer would have designed them, and returns the characters of the largest request of
each role. The limit is :data:`MAX_PROMPT_CHARS`; a test holds every role to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envsynth.blueprint.load import read_yaml
from envsynth.llm.types import Message, message_text
from envsynth.llmbuild.design import CustomToolDesign, DomainDesign
from envsynth.llmbuild.prompts import MAX_PROMPT_CHARS

__all__ = ["MAX_PROMPT_CHARS", "catalogue_design", "prompt_sizes", "request_chars", "size_table"]

MEASURED_APP = "social"
"""The catalogue file measured: 47 tools, 11 tables and a custom tool (``get_home_feed``)."""


def request_chars(messages: list[Message]) -> int:
    """The characters of a request's messages."""
    return sum(len(message_text(m.get("content"))) for m in messages)


def catalogue_design(stem: str = MEASURED_APP) -> DomainDesign:
    """A shipped catalogue blueprint as a design: its custom actions become custom tools without their code."""
    from envsynth.catalog import CATALOG_DIR

    data = read_yaml((Path(CATALOG_DIR) / f"{stem}.yaml").read_text(encoding="utf-8"))
    keys = set(CustomToolDesign.model_fields)
    customs = [a for a in data["actions"] if a.get("kind") == "custom"]
    data["actions"] = [a for a in data["actions"] if a.get("kind") != "custom"]
    tools = [CustomToolDesign.model_validate({k: v for k, v in a.items() if k in keys}) for a in customs]
    return DomainDesign(blueprint=data, custom_tools=tools)


def prompt_sizes(stem: str = MEASURED_APP, context_tokens: int = 8192) -> dict[str, int]:
    """Characters of each role's largest request for the catalogue app ``stem`` (at ``context_tokens``)."""
    from envsynth.compiler.compile import compile_app
    from envsynth.graph import build_graph

    design = catalogue_design(stem)
    app = compile_app(design.to_blueprint({}), 0)
    graph = build_graph(app)
    sizes = {"designer": _designer_chars()}
    sizes |= _tool_roles_chars(design, context_tokens)
    sizes["dependency"] = _dependency_chars(app, graph, context_tokens)
    sizes |= _task_roles_chars(app, graph)
    return sizes


def _designer_chars() -> int:
    from envsynth.llmbuild.design import design_messages

    return request_chars(design_messages("Social Network", "A community app: profiles, posts, follows, comments and groups."))


def _tool_roles_chars(design: DomainDesign, context_tokens: int) -> dict[str, int]:
    """The code, test and debug agents' requests for each custom tool of ``design`` (the largest of each)."""
    from envsynth.llmbuild.tooldev import author_messages, debug_messages_for

    client = _measuring_client(context_tokens)
    sizes = {"coder": 0, "tester": 0, "debugger": 0}
    for t in design.custom_tools:
        for role in ("coder", "tester"):
            sizes[role] = max(sizes[role], request_chars(author_messages(client, design, t.name, role)))
        sizes["debugger"] = max(sizes["debugger"], request_chars(debug_messages_for(client, design, t.name)))
    return sizes


def _dependency_chars(app: Any, graph: Any, context_tokens: int) -> int:
    """The largest dependency request, over the tool groups the app is split into."""
    from envsynth.llmbuild.dependency import dependency_requests

    return max(request_chars(m) for m in dependency_requests(app, graph, _measuring_client(context_tokens)))


def _task_roles_chars(app: Any, graph: Any) -> dict[str, int]:
    """The task writer's and the gating policy's requests for the first task synthesized."""
    from envsynth.llmbuild import gating, writer
    from envsynth.tasks import synthesize

    made: Any = None
    for i in range(20):
        made = synthesize(app, graph, app_index=0, task_index=i, states=1, depth=1, seed=0)
        if isinstance(made, list):
            break
    task = made[0]
    required = writer.required_values(app, task)
    tools = [s.name for s in app.specs]
    visible = list(dict.fromkeys(c.tool for c in task.oracle))
    rest = [t for t in tools if t not in visible]
    g = gating.Feasibility(k=gating.K_SEARCHES, found=[rest[:3]])
    return {
        "task_writer": request_chars(writer._messages(app, task, required)),
        "gating": request_chars(gating._messages(app, task, visible, rest, gating.complexity(graph, visible), g, 1)),
    }


def _measuring_client(context_tokens: int) -> Any:
    """A client that only fits prompts (it is never asked anything)."""
    from envsynth.llm.mock import ScriptedProvider
    from envsynth.llmbuild.client import BuilderClient

    return BuilderClient(ScriptedProvider([]), context_tokens=context_tokens)


def size_table(sizes: dict[str, int]) -> str:
    """``sizes`` as the markdown table of docs/llm-builder.md."""
    lines = ["| role | characters | limit |", "|---|---|---|"]
    lines += [f"| {role} | {n:,} | {MAX_PROMPT_CHARS:,} |" for role, n in sizes.items()]
    return "\n".join(lines)
