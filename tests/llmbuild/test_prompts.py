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
