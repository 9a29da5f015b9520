"""The actions of a blueprint: one pydantic model per archetype, with their parameters and conditions.

Part of the blueprint format (see :mod:`envsynth.blueprint.models`, ``docs/blueprints.md``);
what each archetype means as a tool is in :mod:`envsynth.blueprint.archetypes`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from envsynth.blueprint.entities import FieldType, Ident, ToolName, _Model
from envsynth.blueprint.v2keys import ItemType, effect_keys_allowed, list_param_problems, null_values


class Condition(_Model):
    """A check in the condition language with the message shown when it fails.

    The message may use ``{alias.field}`` and ``{param}`` placeholders.
    """

    check: str
    message: str | None = None


def _conditions(v: Any) -> Any:
    if isinstance(v, list):
        return [{"check": c} if isinstance(c, str) else c for c in v]
    return v


class Param(_Model):
    """An action parameter. ``field: entity.field`` copies that field's type and limits."""

    name: Ident
    type: FieldType | Literal["integer", "number", "boolean", "list"] | None = None
    field: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")] | None = None
    ref: Ident | None = None
    alias: Ident | None = None
    description: str = ""
    required: bool = True
    values: list[str] | None = None
    min: float | None = None
    max: float | None = None
    default: Any = None
    items: dict[Ident, ItemType] | None = Field(None, description="with type: list, the fields of each item: name -> type")
    min_items: int | None = Field(None, ge=0, le=1000)
    max_items: int | None = Field(None, ge=1, le=1000)

    @model_validator(mode="before")
    @classmethod
    def _plain_list_errors(cls, data: Any) -> Any:
        return list_param_problems(data)

    @model_validator(mode="after")
    def _typed(self) -> Param:
        if self.type is None and self.field is None:
            raise ValueError("a parameter needs a type or a field to copy it from")
        if self.type == "ref" and not self.ref:
            raise ValueError("a ref parameter needs 'ref: <entity>'")
        return self


class ForEach(_Model):
    """An effect repeated over many rows: over the items of a list parameter, or over the rows a match selects.

    With ``insert``, one row of that entity is inserted per item (``set`` gives its values);
    without, ``set`` updates the item's row (a row of ``rows``, or the row an id of a list
    of ids loads).
    """

    param: Ident | None = Field(None, description="list parameter whose items are iterated")
    rows: Ident | None = Field(None, description="entity whose rows are iterated (those matching 'match' and 'where')")
    match: dict[Ident, str] = Field(default_factory=dict, description="with rows: field -> expression the field must equal")
    where: str | None = Field(None, description="a condition each item must meet")
    as_: Ident = Field(alias="as", description="name of the item in expressions")
    insert: Ident | None = Field(None, description="entity to insert one row into per item")
    set: dict[Ident, str] = Field(min_length=1)
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    _nulls = field_validator("set", mode="before")(null_values)

    @model_validator(mode="after")
    def _one_source(self) -> ForEach:
        if (self.param is None) == (self.rows is None):
            raise ValueError("a for_each item iterates either a list parameter ('param: <name>') or rows ('rows: <entity>'), exactly one")
        if self.match and self.rows is None:
            raise ValueError("'match' selects rows; it needs 'rows: <entity>'")
        return self


class Filter(_Model):
    """A search/aggregate filter: an optional parameter compared with a field."""

    field: Ident
    op: Literal["eq", "contains", "gte", "lte", "in"] = "eq"
    param: Ident | None = None
    description: str = ""

    @property
    def param_name(self) -> str:
        if self.param:
            return self.param
        return {"gte": f"min_{self.field}", "lte": f"max_{self.field}"}.get(self.op, self.field)


class _Action(_Model):
    name: ToolName
    description: str = Field(min_length=8)
    entity: Ident
    params: list[Param] = Field(default_factory=list)
    pre: list[Condition] = Field(default_factory=list)
    post: list[Condition] = Field(default_factory=list)
    bind: dict[Ident, str] = Field(default_factory=dict, description="extra row aliases: alias -> 'other.ref_field'")
    say: Annotated[str, Field(min_length=3, max_length=200, pattern=r"^[^\n]+$")] | None = Field(
        None, description="the request in the user's voice, with {slots} for parameters and bound rows"
    )
    reasons: list[Annotated[str, Field(min_length=3, max_length=200)]] = Field(
        default_factory=list, description="why a person asks for this, in their words"
    )
    reasons_for: dict[Ident, list[Annotated[str, Field(min_length=3, max_length=200)]]] = Field(
        default_factory=dict, description="parameter -> why a person asks for this when they give that parameter"
    )
    asked_by: list[Ident] = Field(default_factory=list, description="the roles of `users` whose users ask for this (default: any)")

    _norm_pre = field_validator("pre", "post", mode="before")(_conditions)

    @model_validator(mode="before")
    @classmethod
    def _effect_keys(cls, data: Any) -> Any:
        return effect_keys_allowed(data)


class GetAction(_Action):
    """Fetch one row by its id (or by another unique field)."""

    kind: Literal["get"]
    by: Ident | None = None


class SearchAction(_Action):
    """List rows matching optional filters, with sorting and paging."""

    kind: Literal["search"]
    filters: list[Filter] = Field(default_factory=list)
    sort: Ident | None = None
    descending: bool = False
    limit: int = Field(20, ge=1, le=200)


class CreateAction(_Action):
    """Insert a row: ``fields`` come from parameters, ``set`` are fixed expressions."""

    kind: Literal["create"]
    fields: list[Ident] = Field(default_factory=list)
    optional: list[Ident] = Field(default_factory=list)
    set: dict[Ident, str] = Field(default_factory=dict)
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")


class UpdateAction(_Action):
    """Change some fields of a row; each listed field is an optional parameter."""

    kind: Literal["update"]
    fields: list[Ident] = Field(default_factory=list)
    set: dict[Ident, str] = Field(default_factory=dict)
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")

    @model_validator(mode="after")
    def _changes_something(self) -> UpdateAction:
        if not self.fields and not self.set:
            raise ValueError("an update needs 'fields' (the fields the caller may change) or 'set' (values written on every call)")
        return self


class DeleteAction(_Action):
    """Delete a row. Rows that reference it block the delete unless ``cascade``."""

    kind: Literal["delete"]
    cascade: bool = False
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")


class TransitionAction(_Action):
    """Move a state field along its state machine (ship, cancel, approve...)."""

    kind: Literal["transition"]
    field: Ident | None = None
    to: str
    from_: list[str] | None = Field(None, alias="from")
    set: dict[Ident, str] = Field(default_factory=dict)
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TransferAction(_Action):
    """Move an amount of a numeric field from one row to another of the same entity."""

    kind: Literal["transfer"]
    field: Ident
    amount: Ident = "amount"
    source: Ident = "source"
    target: Ident = "target"
    log: Ident | None = Field(None, description="entity to insert a record of the transfer into")
    log_set: dict[Ident, str] = Field(default_factory=dict)
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")


class BookAction(_Action):
    """Create a booking row against a resource with a capacity counter."""

    kind: Literal["book"]
    resource: Ident = Field(description="ref field of the booking entity pointing at the resource")
    capacity: Ident
    used: Ident
    quantity: Ident | None = Field(None, description="booking field holding how many units are taken")
    fields: list[Ident] = Field(default_factory=list)
    set: dict[Ident, str] = Field(default_factory=dict)
    also: dict[Ident, dict[Ident, str]] = Field(default_factory=dict, description="updates of other bound rows: alias -> {field: expr}")
    for_each: list[ForEach] = Field(default_factory=list, description="effects repeated over many rows")


class AggregateAction(_Action):
    """Count rows or sum/average/min/max a field, with filters and an optional group-by."""

    kind: Literal["aggregate"]
    op: Literal["count", "sum", "avg", "min", "max"] = "count"
    field: Ident | None = None
    filters: list[Filter] = Field(default_factory=list)
    group_by: Ident | None = None


class CustomAction(_Action):
    """Hand-written Python: the body of ``def name(ctx, <params>)``.

    The body uses ``db`` (sqlite3 connection), ``ctx`` (clock, ids, randomness), the
    bound row dicts, and raises ``ToolError`` to reject. ``writes`` declares what it may
    change (entity -> fields), ``creates``/``deletes`` which entities gain or lose rows.

    ``untrusted: true`` (LLM-written code) checks the code statically when the blueprint
    is loaded and runs it only in a sandboxed worker, never in the main process (see
    docs/sandbox.md, "LLM-written tool code").
    """

    kind: Literal["custom"]
    mode: Literal["read", "write"]
    code: str = Field(min_length=1)
    untrusted: bool = False
    writes: dict[Ident, list[Ident]] = Field(default_factory=dict)
    creates: list[Ident] = Field(default_factory=list)
    deletes: list[Ident] = Field(default_factory=list)
    returns: str = ""


Action = Annotated[
    GetAction
    | SearchAction
    | CreateAction
    | UpdateAction
    | DeleteAction
    | TransitionAction
    | TransferAction
    | BookAction
    | AggregateAction
    | CustomAction,
    Field(discriminator="kind"),
]

ARCHETYPES = ("get", "search", "aggregate", "create", "update", "delete", "transition", "transfer", "book", "custom")
"""The ``kind`` values of actions (the tags of the Action union)."""
