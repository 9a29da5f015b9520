"""Tool names every episode adds itself cannot be used by a blueprint's actions."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from envsynth import catalog
from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.models import EPISODE_TOOLS
from envsynth.sandbox.codeblocks import META_TOOLS
from envsynth.tasks.episode import COMPLETE_TASK


def test_reserved_names_cover_every_tool_an_episode_adds() -> None:
    assert set(META_TOOLS) | {COMPLETE_TASK["function"]["name"]} == set(EPISODE_TOOLS)


@pytest.mark.parametrize("name", EPISODE_TOOLS)
def test_an_action_named_like_an_episode_tool_is_refused(bookshop_blueprint_path: Path, name: str) -> None:
    data = copy.deepcopy(yaml.safe_load(bookshop_blueprint_path.read_text()))
    data["actions"][3]["name"] = name
    with pytest.raises(BlueprintError) as info:
        from_dict(data, "shop.yaml")
    message = str(info.value)
    assert "shop.yaml" in message and "actions[3].name" in message and f"{name!r} is reserved" in message
    assert "\n" not in message


def test_no_catalogue_tool_shares_a_name_with_an_episode_tool() -> None:
    for name in catalog.names():
        actions = {a.name for a in catalog.load(name).actions}
        assert not actions & set(EPISODE_TOOLS), name
