"""The Blueprint: a domain as data (entities with typed fields, and actions).

These pydantic models are the format of a blueprint YAML file; ``docs/blueprints.md``
documents them for people writing their own domains. Entities and fields are defined in
:mod:`envsynth.blueprint.entities`, actions in :mod:`envsynth.blueprint.actions`; this
module holds the whole blueprint (users, policy, authorization, workflows) and re-exports
the rest, so ``envsynth.blueprint.models`` stays the one import path. Validation that needs the whole
blueprint (a reference to an unknown entity, a transition the state machine forbids)
lives in :mod:`envsynth.blueprint.expand`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from envsynth.blueprint.actions import (  # re-exported: the blueprint format is read from this module
    ARCHETYPES,
    Action,
    AggregateAction,
    BookAction,
    Condition,
    CreateAction,
    CustomAction,
    DeleteAction,
    Filter,
    ForEach,
    GetAction,
    Param,
    SearchAction,
    TransferAction,
    TransitionAction,
    UpdateAction,
)
from envsynth.blueprint.entities import (  # re-exported, as above
    EPISODE_TOOLS,
    FIELD_TYPES,
    NUMERIC_TYPES,
    RESERVED,
    Entity,
    FieldDef,
    FieldType,
    Generator,
    Ident,
    ToolName,
    Words,
    _Model,
)
from envsynth.memo import Index

__all__ = [
    "ARCHETYPES",
    "CATEGORIES",
    "EPISODE_TOOLS",
    "FIELD_TYPES",
    "NUMERIC_TYPES",
    "RESERVED",
    "Action",
    "AggregateAction",
    "Authorization",
    "Blueprint",
    "BlueprintIndex",
    "BookAction",
    "Condition",
    "CreateAction",
    "CustomAction",
    "DeleteAction",
    "Entity",
    "FieldDef",
    "FieldType",
    "Filter",
    "ForEach",
    "Generator",
    "GetAction",
    "Ident",
    "Param",
    "Policy",
    "PolicyRule",
    "SearchAction",
    "ToolName",
    "TransferAction",
    "TransitionAction",
    "UpdateAction",
    "UserRole",
    "Words",
    "Workflow",
]


CATEGORIES = ("shopping", "music", "productivity", "finance", "fitness", "messaging", "utilities", "social", "travel", "other")


class BlueprintIndex(Index):
    """Lookups derived from a blueprint (it is frozen), kept on it as ``Blueprint.index``."""

    def __init__(self, bp: Blueprint) -> None:
        super().__init__()
        self._entities = bp.entities
        self._actions = bp.actions

    @cached_property
    def entities(self) -> dict[str, Entity]:
        """Entity by name (the first of a name wins, as in ``entities``)."""
        return {e.name: e for e in reversed(self._entities)}

    @cached_property
    def actions(self) -> dict[str, Any]:
        """Action by name (names are unique in a loaded blueprint)."""
        return {a.name: a for a in self._actions}


class UserRole(_Model):
    """Who asks for things in an app: a role, and the entity whose rows are those users.

    ``entity`` is the table a user of this role is a row of (a customer, a member);
    ``identify_by`` are the fields the app finds them by besides their name (an email,
    an account number). A role without an entity is staff: they act for someone else.
    """

    role: Ident
    entity: Ident | None = None
    identify_by: list[Ident] = Field(default_factory=list)
    called: Words | None = Field(None, description="how the role is written in text ('member', 'account holder')")
    description: str = ""

    @model_validator(mode="after")
    def _identified(self) -> UserRole:
        if self.entity is None and self.identify_by:
            raise ValueError("identify_by names fields of the role's entity; set 'entity' too")
        return self


class PolicyRule(_Model):
    """One machine-readable rule of an app's policy (docs/blueprints.md, 11.8).

    Exactly one of ``check`` and ``forbid``: a ``check`` rule is enforced by the tools (a
    pre-condition of every action it names, check id ``policy:<rule>``); a ``forbid`` rule is
    left to the agent: the tools allow the call, and the policy forbids it when the condition holds.
    """

    rule: Ident
    text: str = Field("", description="the rule in a sentence, as the policy states it")
    actions: list[Ident] = Field(min_length=1)
    check: str | None = None
    forbid: str | None = None
    message: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> PolicyRule:
        if (self.check is None) == (self.forbid is None):
            raise ValueError("a rule sets exactly one of 'check' (enforced by the tools) and 'forbid' (left to the agent)")
        if self.forbid is not None and self.message is not None:
            raise ValueError("'message' is the rejection of an enforced rule; a 'forbid' rule is obeyed by the agent and has none")
        return self


class Policy(_Model):
    """What an agent working in the app must read and follow: markdown text plus rules."""

    text: str = Field(min_length=1, description="the policy as the agent reads it (markdown)")
    rules: list[PolicyRule] = Field(default_factory=list)


class Authorization(_Model):
    """Who acts, declared once per app (docs/blueprints.md, 11.9).

    ``role`` is a ``users`` role with an entity: the acting user is a row of it. ``owns`` maps
    each entity the user owns to the ref path from its row to the user (``user_id``, or
    ``reservation_id.user_id`` through one more row). ``param`` names the acting-user parameter
    (default: the id field of the role's entity).
    """

    role: Ident
    param: Ident | None = None
    owns: dict[Ident, Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$")]] = Field(min_length=1)


class Workflow(_Model):
    """A goal a person reaches in several steps, in order ("place an order": start it, add items, pay).

    ``name`` is the goal in the user's words (a verb phrase: "place an order"); ``steps`` are
    write actions, each following up on a row an earlier step made or touched.
    """

    name: Annotated[str, Field(min_length=3, max_length=80, pattern=r"^[a-z][^{}\n.!?]*$")]
    steps: list[Ident] = Field(min_length=2, max_length=8)
    reasons: list[Annotated[str, Field(min_length=3, max_length=200)]] = Field(
        default_factory=list, description="why a person sets out to do this, in their words"
    )


class Blueprint(_Model):
    """A whole domain: what the compiler turns into an app."""

    name: Ident
    title: str
    category: Literal["shopping", "music", "productivity", "finance", "fitness", "messaging", "utilities", "social", "travel", "other"]
    description: str = ""
    version: int = 1
    reference_date: str = Field("2026-03-15", pattern=r"^\d{4}-\d{2}-\d{2}$")
    entities: list[Entity] = Field(min_length=1)
    actions: list[Action] = Field(min_length=1)
    users: list[UserRole] = Field(default_factory=list, description="the roles of the people who ask (customer, staff...)")
    policy: Policy | None = Field(None, description="what the agent must read and follow (11.8)")
    authorization: Authorization | None = Field(None, description="who acts and which rows they own (11.9)")
    tables: dict[Ident, Any] = Field(default_factory=dict, description="lookup tables read with lookup('name', key, ...)")
    workflows: list[Workflow] = Field(default_factory=list, description="goals people reach in several steps, in order")

    @field_validator("tables")
    @classmethod
    def _tables(cls, v: dict[str, Any]) -> dict[str, Any]:
        from envsynth.blueprint.tables import normalise_table

        return {name: normalise_table(name, t) for name, t in v.items()}

    @cached_property
    def index(self) -> BlueprintIndex:
        """Lookups derived from this blueprint (built on first use, freed with it)."""
        return BlueprintIndex(self)

    def entity(self, name: str) -> Entity:
        hit = self.index.entities.get(name)
        if hit is None:
            raise KeyError(name)
        return hit

    def has_entity(self, name: str) -> bool:
        return any(e.name == name for e in self.entities)
