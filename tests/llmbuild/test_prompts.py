"""Role prompts are files beside the builder; every role has one and fills its placeholders."""

from __future__ import annotations

import pytest

from envsynth.llmbuild.prompts import PromptError, prompt, roles

ROLES = {"designer", "coder", "tester", "debugger", "dependency", "task_writer", "gating"}


def test_every_role_has_a_prompt_file() -> None:
    assert set(roles()) >= ROLES


def test_static_prompts_name_their_role_and_the_json_they_want() -> None:
    for role in ("designer", "coder", "tester", "debugger"):
        text = prompt(role)
        assert text.startswith(f"# Role: {role}") and "JSON" in text


def test_a_missing_placeholder_is_a_clear_error() -> None:
    with pytest.raises(PromptError, match=r"needs a value for \$"):
        prompt("gating", app_title="x")
    with pytest.raises(PromptError, match="no prompt file for role 'poet'"):
        prompt("poet")


def test_the_worked_example_is_a_checked_blueprint_taken_from_the_catalogue() -> None:
    from envsynth.check import check_data
    from envsynth.llmbuild.example import catalogue_data, example_blueprint, example_spec

    bp = example_blueprint()
    report = check_data(bp, "example")
    assert report.problems == [] and report.warnings == []  # it loads, and every word is written (no inferred default)
    cat = catalogue_data(example_spec()["catalogue"])
    actions = {a["name"]: a for a in cat["actions"]}
    assert all(a == actions[a["name"]] for a in bp["actions"])  # verbatim
    tables = {e["name"]: e for e in cat["entities"]}
    for ent in bp["entities"]:
        fields = {f["name"]: f for f in tables[ent["name"]]["fields"]}
        assert all(
            {k: v for k, v in fields[f["name"]].items() if k != "gen"} == {k: v for k, v in f.items() if k != "gen"} for f in ent["fields"]
        )
    assert {"policy", "workflows", "users"} <= set(bp) and any(a.get("kind") == "custom" and a.get("say") for a in bp["actions"])


def test_each_role_shows_the_part_of_the_example_it_needs() -> None:
    from envsynth.blueprint.codecheck import check_tool_code
    from envsynth.blueprint.load import read_yaml
    from envsynth.llmbuild.example import custom_tool, designer_example

    design = read_yaml(designer_example())
    assert design["custom_tools"][0]["name"] == "reassign_open_tasks" and "code" not in design["custom_tools"][0]
    assert "days(30)" in prompt("designer") and "workflows" in prompt("designer") and "say:" in prompt("designer")
    assert check_tool_code(custom_tool()["code"]) == [] and custom_tool()["code"].strip()[:20] in prompt("coder")
    assert "ctx.now()" in prompt("coder") and "REFERENCE DATE" in prompt("coder") and "ctx.date_add(" in prompt("coder")
    assert "REFERENCE DATE" in prompt("tester") and '"expect_rows"' in prompt("tester")
    assert '"amend"' in prompt("debugger")


def test_the_date_helpers_the_coder_is_taught_exist_on_the_tools_context() -> None:
    import re

    from envsynth.runtime.toolkit import Context

    taught = set(re.findall(r"ctx\.(\w+)\(", prompt("coder")))
    assert {"now", "today", "days", "hours", "date_add", "date_sub", "every"} <= taught
    assert all(hasattr(Context, name) for name in taught), taught - {n for n in taught if hasattr(Context, n)}


def test_the_example_case_passes_and_the_example_amendment_is_accepted() -> None:
    from envsynth.compiler.compile import compile_app
    from envsynth.llmbuild.design import DomainDesign
    from envsynth.llmbuild.example import CUSTOM_TOOL, example_blueprint, example_spec
    from envsynth.llmbuild.promptsize import catalogue_design  # noqa: F401  (the measuring helpers import cleanly)
    from envsynth.llmbuild.tooldev import SpecAmendment, TestCase, amendment_problem, run_case

    app = compile_app(DomainDesign(blueprint=example_blueprint()).to_blueprint({}), 0)
    verdict = run_case(app, CUSTOM_TOOL, TestCase.model_validate(example_spec()["case"]))
    assert verdict.ok, verdict
    data = example_blueprint()
    custom = next(a for a in data["actions"] if a["name"] == CUSTOM_TOOL)
    data["actions"].remove(custom)
    keys = {"name", "entity", "mode", "description", "params", "pre", "post", "writes", "returns", "say", "reasons"}
    design = DomainDesign.model_validate({"blueprint": data, "custom_tools": [{k: v for k, v in custom.items() if k in keys}]})
    assert amendment_problem(design, CUSTOM_TOOL, SpecAmendment.model_validate(example_spec()["amend"])) == ""


def test_every_prompt_of_a_50_tool_domain_stays_under_12000_characters() -> None:
    from envsynth.llmbuild.promptsize import MAX_PROMPT_CHARS, prompt_sizes

    for context in (8192, 131072):  # a large context does not let a prompt grow past the limit
        sizes = prompt_sizes(context_tokens=context)
        assert set(sizes) == ROLES
        assert all(0 < n <= MAX_PROMPT_CHARS for n in sizes.values()), (context, sizes)
