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


FLOW_WIDTH = 170
"""A mapping in a list is written on one line (``- {name: ..., type: ...}``) when it fits this many characters."""


def _flow(data: Any) -> str:
    """``data`` as one line of flow-style YAML."""
    return yaml.safe_dump(data, default_flow_style=True, width=100_000, allow_unicode=True, sort_keys=False).strip()


def _yaml(data: Any, indent: str = "") -> str:
    """``data`` as compact YAML: mappings in blocks, short values on one line, list items at their key's indent."""
    if isinstance(data, dict):
        lines = []
        for key, value in data.items():
            short = len(indent) + len(_flow({key: value})) <= FLOW_WIDTH and not (isinstance(value, list) and not all(map(_scalar, value)))
            if isinstance(value, str) and "\n" in value:
                body = "\n".join(f"{indent} {line}" for line in value.rstrip("\n").splitlines())
                lines.append(f"{indent}{key}: |\n{body}")
            elif isinstance(value, dict | list) and value and not short:
                lines.append(f"{indent}{key}:\n{_yaml(value, indent if isinstance(value, list) else indent + ' ')}")
            else:
                lines.append(f"{indent}{_flow({key: value})[1:-1]}")
        return "\n".join(lines)
    out = []
    for item in data:
        flat = _flow(item)
        if _scalar(item) or len(indent) + len(flat) <= FLOW_WIDTH:
            out.append(f"{indent}- {flat}")
        else:
            out.append(f"{indent}- " + _yaml(item, indent + "  ").lstrip())
    return "\n".join(out)


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def custom_tool() -> dict[str, Any]:
    """The example's custom tool as the catalogue writes it (with its code)."""
    return next(a for a in example_blueprint()["actions"] if a["name"] == CUSTOM_TOOL)


def designer_example() -> str:
    """The designer's example: the blueprint and the custom tool as a design (no code), trimmed to stay short.

    Trimmed: the users' descriptions, the fields' descriptions, long sample generators,
    empty lists, the blueprint description past its first sentence, rows, and the custom
    tool's rules past the first one.
    """
    bp = example_blueprint()
    bp["description"] = bp["description"].split(". ")[0] + "."
    bp["users"] = [{k: v for k, v in u.items() if k != "description"} for u in bp["users"]]
    for ent in bp["entities"]:
        ent["rows"] = min(ent.get("rows", 20), 20)
        for key in [k for k, v in ent.items() if v == []]:
            ent.pop(key)
        for f in ent["fields"]:
            f.pop("description", None)
            if len(_flow(f.get("gen", {}))) > 40:
                f.pop("gen")
    tool = {k: v for k, v in custom_tool().items() if k not in ("kind", "code", "reasons")}
    tool["pre"], tool["post"] = tool["pre"][:1], tool["post"][:1]
    tool["params"] = [{k: v for k, v in p.items() if k != "description"} for p in tool["params"]]
    bp["actions"] = [a for a in bp["actions"] if a["name"] != CUSTOM_TOOL]
    return _yaml({"blueprint": bp, "custom_tools": [tool]})


def coder_example() -> str:
    """The code agent's example: the custom tool's signature and what it writes, then the body the catalogue ships."""
    tool = custom_tool()
    params = ", ".join(p["name"] for p in tool["params"])
    writes = ", ".join(f"{t}.{f}" for t, fields in tool["writes"].items() for f in fields)
    return f"`{tool['name']}({params})`, writes {writes}:\n{tool['code'].rstrip()}"


def tester_example() -> str:
    """The test agent's example: one case of the custom tool, as JSON."""
    return json.dumps(example_spec()["case"], ensure_ascii=False)


def debugger_example() -> str:
    """The debug agent's example of a spec amendment, as JSON."""
    return json.dumps({"diagnosis": "...", "amend": example_spec()["amend"]}, ensure_ascii=False, separators=(",", ":"))
