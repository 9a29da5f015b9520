"""The intermediate representation: blueprints, the condition language and ToolSpecs."""

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expand import expand
from envsynth.blueprint.load import from_dict, load_blueprint
from envsynth.blueprint.models import Blueprint, Entity, FieldDef
from envsynth.blueprint.spec import Binding, Check, Effect, ParamSpec, Query, ToolSpec

__all__ = [
    "Binding",
    "Blueprint",
    "BlueprintError",
    "Check",
    "Effect",
    "Entity",
    "FieldDef",
    "ParamSpec",
    "Query",
    "ToolSpec",
    "expand",
    "from_dict",
    "load_blueprint",
]
