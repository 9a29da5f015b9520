"""The worked example of the builder's prompts: a few tables and actions of a catalogue app.

``prompts/example.yaml`` names the catalogue file and the tables (with the fields kept) and
actions taken from it verbatim, and adds what the prompts teach beyond them (a workflow, a policy rule, a test
case and a spec amendment). Each role's prompt gets the part it needs
(:func:`designer_example`, :func:`coder_example`, :func:`tester_example`,
:func:`debugger_example`); :func:`example_blueprint` is the assembled blueprint a test
checks as ``envsynth check`` does.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from envsynth.blueprint.load import read_yaml

CUSTOM_TOOL = "reassign_open_tasks"
"""The example's custom tool (the one the code, test and debug agents' examples are about)."""


@cache
def example_spec() -> dict[str, Any]:
    """``prompts/example.yaml`` as data."""
    text = (resources.files("envsynth.llmbuild") / "prompts" / "example.yaml").read_text(encoding="utf-8")
    return read_yaml(text)


@cache
def catalogue_data(stem: str) -> dict[str, Any]:
    """The catalogue blueprint ``stem`` (``shopping``) as data."""
    from envsynth.catalog import CATALOG_DIR

    return read_yaml((Path(CATALOG_DIR) / f"{stem}.yaml").read_text(encoding="utf-8"))


def _picked(items: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """The items of ``items`` named in ``names``, in that order (copies)."""
    by_name = {i["name"]: i for i in items}
    return [json.loads(json.dumps(by_name[n])) for n in names]


def _table(ent: dict[str, Any], keep: list[str], no_gen: set[str]) -> dict[str, Any]:
    """A catalogue table with only the fields ``keep`` (its ``known_by``/``never_describe`` cut to them)."""
    out = {**ent, "fields": [f for f in ent["fields"] if f["name"] in keep]}
    for f in out["fields"]:
        if f"{ent['name']}.{f['name']}" in no_gen:
            f.pop("gen", None)
    for key in ("known_by", "never_describe"):
        if key in out:
            out[key] = [n for n in out[key] if n in keep]
    return out


def example_blueprint() -> dict[str, Any]:
    """The example as one blueprint (the catalogue's tables and actions, the example's workflow and policy)."""
    spec = example_spec()
    cat = catalogue_data(spec["catalogue"])
    return {
        "name": f"{cat['name']}_example",
        "title": cat["title"],
        "category": cat["category"],
        "description": cat["description"],
        "reference_date": cat["reference_date"],
        "users": cat["users"],
        "workflows": spec["workflows"],
        "policy": spec["policy"],
        "entities": [
            _table(e, spec["entities"][e["name"]], set(spec.get("no_gen", []))) for e in _picked(cat["entities"], list(spec["entities"]))
        ],
        "actions": _picked(cat["actions"], spec["actions"]),
    }


def _yaml(data: Any) -> str:
    """``data`` as compact block YAML (flow style for short lists and rows)."""
    return yaml.safe_dump(data, sort_keys=False, width=170, allow_unicode=True, default_flow_style=None).strip()


def custom_tool() -> dict[str, Any]:
    """The example's custom tool as the catalogue writes it (with its code)."""
    return next(a for a in example_blueprint()["actions"] if a["name"] == CUSTOM_TOOL)


def designer_example() -> str:
    """The designer's example: the blueprint (rows trimmed) and the custom tool as a design (no code)."""
    bp = example_blueprint()
    bp["description"] = bp["description"].split(". ")[0] + "."
    for ent in bp["entities"]:
        ent["rows"] = min(ent.get("rows", 20), 20)
    tool = {k: v for k, v in custom_tool().items() if k not in ("kind", "code")}
    bp["actions"] = [a for a in bp["actions"] if a["name"] != CUSTOM_TOOL]
    return _yaml({"blueprint": bp, "custom_tools": [tool]})


def coder_example() -> str:
    """The code agent's example: the custom tool's specification and the body the catalogue ships."""
    tool = custom_tool()
    spec = {k: v for k, v in tool.items() if k in ("name", "entity", "params", "pre", "post", "writes", "returns")}
    return f"{_yaml(spec)}\nbody:\n{tool['code'].rstrip()}"


def tester_example() -> str:
    """The test agent's example: one case of the custom tool, as JSON."""
    return json.dumps(example_spec()["case"], ensure_ascii=False)


def debugger_example() -> str:
    """The debug agent's example of a spec amendment, as JSON."""
    return json.dumps({"diagnosis": "...", "amend": example_spec()["amend"]}, ensure_ascii=False)
