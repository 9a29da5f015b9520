"""The Blueprint: a domain as data (entities with typed fields, and actions).

These pydantic models are the format of a blueprint YAML file; ``docs/blueprints.md``
documents them for people writing their own domains. Validation that needs the whole
blueprint (a reference to an unknown entity, a transition the state machine forbids)
lives in :mod:`envsynth.blueprint.expand`.
"""

from __future__ import annotations

import keyword
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from envsynth.blueprint.v2keys import ItemType, effect_keys_allowed, list_param_problems, null_values
from envsynth.memo import Index, Indexed

RESERVED = {"db", "ctx", "result", "new", "old", "now", "today", "exists", "count", "len", "abs", "round", "lower", "none", "true", "false"}
RESERVED |= {"min", "max"}  # language v2: generated code calls the builtins, which a parameter of that name would hide


def _not_keyword(name: str) -> str:
    if keyword.iskeyword(name) or name in RESERVED:
        raise ValueError(f"{name!r} is reserved (a Python keyword or a name of the condition language); pick another name")
    return name


Ident = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=48), AfterValidator(_not_keyword)]

EPISODE_TOOLS = ("complete_task", "list_apps", "list_tools", "get_tool_documentation")
"""Tool names every episode adds itself (the end-of-task tool and the code-acting meta-tools)."""


def _not_episode_tool(name: str) -> str:
    if name in EPISODE_TOOLS:
        raise ValueError(f"{name!r} is reserved: every episode has a tool of that name ({', '.join(EPISODE_TOOLS)}); pick another name")
    return name


ToolName = Annotated[Ident, AfterValidator(_not_episode_tool)]

FIELD_TYPES = (
    "id",
    "ref",
    "string",
    "text",
    "name",
    "email",
    "phone",
    "url",
    "address",
    "company",
    "enum",
    "state",
    "money",
    "int",
    "quantity",
    "float",
    "bool",
    "date",
    "datetime",
)
FieldType = Literal[
    "id",
    "ref",
    "string",
    "text",
    "name",
    "email",
    "phone",
    "url",
    "address",
    "company",
    "enum",
    "state",
    "money",
    "int",
    "quantity",
    "float",
    "bool",
    "date",
    "datetime",
]
NUMERIC_TYPES = ("money", "int", "quantity", "float")


class _Model(Indexed, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Words = Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[^{}\n]+$")]
"""A few words of plain text (a noun, a label): no line breaks, no ``{slots}``."""


class Generator(_Model):
    """How synthetic values for a field are drawn (one of the keys is set).

    - ``faker``: a Faker provider name (``company``, ``catch_phrase``, ``city``...),
      with optional ``args``;
    - ``choice``: a list of values, with optional ``weights``;
    - ``range``: ``[low, high]`` for numbers (money is rounded to cents);
    - ``template``: a ``str.format`` pattern whose ``{names}`` are drawn from ``parts``
      (each itself a generator), e.g. ``"{adjective} {item}"``;
    - ``bothify``: a Faker pattern such as ``"SKU-####-??"``;
    - ``dates``: ``[start, end]`` offsets from the reference day such as ``"-1y"``, ``"+30d"``.
    """

    faker: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    choice: list[Any] | None = None
    weights: list[float] | None = None
    range: tuple[float, float] | None = None
    template: str | None = None
    parts: dict[str, Generator] = Field(default_factory=dict)
    bothify: str | None = None
    dates: tuple[str, str] | None = None
    after: Ident | None = Field(None, description="a date/datetime field of the row this value comes after, by `by`")
    before: Ident | None = Field(None, description="a date/datetime field of the row this value comes before, by `by`")
    by: tuple[str, str] | None = Field(None, description="[least, most] distance from `after`/`before`: 30min, 2h, 3d, 1w")
    when: dict[Ident, Any] | None = Field(None, description="field -> value (or list): a value only on such rows, NULL on others")
    differs_from: Ident | None = Field(None, description="a field of the row this value never equals")

    @model_validator(mode="after")
    def _one_kind(self) -> Generator:
        kinds = [k for k in ("faker", "choice", "range", "template", "bothify", "dates", "after", "before") if getattr(self, k) is not None]
        modifiers = self.when is not None or self.differs_from is not None
        if len(kinds) > 1 or (not kinds and not modifiers):
            raise ValueError(
                f"a generator sets exactly one of faker/choice/range/template/bothify/dates/after/before, got {kinds or 'none'}"
                " (only when/differs_from alone draw the field type's own values)"
            )
        if (self.after is not None or self.before is not None) != (self.by is not None):
            raise ValueError("after/before and by go together: after: <field>, by: [least, most] (e.g. by: [1h, 14h])")
        if self.weights is not None and (self.choice is None or len(self.weights) != len(self.choice)):
            raise ValueError("weights need a choice list of the same length")
        return self

    @cached_property
    def kind(self) -> str | None:
        """Which key draws the value (``faker``... ``after``/``before``); None when only when/differs_from are set."""
        kinds = ("faker", "choice", "range", "template", "bothify", "dates", "after", "before")
        return next((k for k in kinds if getattr(self, k) is not None), None)


def _value_phrase(text: str) -> str:
    if "\n" in text or text.count("{") != 1 or text.count("}") != 1 or "{value}" not in text:
        raise ValueError(f"{text!r}: a field's say has exactly one {{value}} slot and no other braces, e.g. 'from {{value}}'")
    return text


class FieldDef(_Model):
    """One column of an entity."""

    name: Ident
    type: FieldType
    description: str = ""
    ref: Ident | None = None
    values: list[str] | None = None
    states: list[str] | None = None
    transitions: dict[str, list[str]] | None = None
    initial: str | None = None
    min: float | None = None
    max: float | None = None
    nullable: bool = False
    unique: bool = False
    gen: Generator | None = None
    null_rate: float = Field(0.0, ge=0.0, le=1.0)
    label: Words | None = Field(None, description="what people call this field where the column name is not a word ('private')")
    say: Annotated[str, Field(min_length=7, max_length=80), AfterValidator(_value_phrase)] | None = Field(
        None, description="how a row is picked out by this field, with {value}: 'from {value}', 'that costs {value}'"
    )

    @model_validator(mode="after")
    def _type_options(self) -> FieldDef:
        t = self.type
        if t == "ref" and not self.ref:
            raise ValueError("a ref field needs 'ref: <entity>'")
        if t != "ref" and self.ref:
            raise ValueError("'ref' is only for fields of type ref")
        if t == "enum" and not self.values:
            raise ValueError("an enum field needs 'values'")
        if t == "state":
            if not self.states:
                raise ValueError("a state field needs 'states'")
            if self.transitions is None:
                raise ValueError("a state field needs 'transitions' (state -> allowed next states)")
            for src, dsts in self.transitions.items():
                for s in [src, *dsts]:
                    if s not in self.states:
                        raise ValueError(f"transition names unknown state {s!r}; states are {self.states}")
            if self.initial is not None and self.initial not in self.states:
                raise ValueError(f"initial state {self.initial!r} is not one of {self.states}")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is greater than max")
        if self.gen is not None and self.gen.choice is not None:
            want = (int, float) if t in NUMERIC_TYPES else (bool,) if t == "bool" else (str,)
            bad = [v for v in self.gen.choice if not isinstance(v, want) or (isinstance(v, bool) and t != "bool")]
            if bad:
                raise ValueError(f"gen.choice values {bad[:3]} do not fit a {t} field (quote them in YAML: '1:1')")
            outside = [v for v in self.gen.choice if self.choices and v not in self.choices]
            if outside:
                raise ValueError(f"gen.choice values {outside[:3]} are not among the allowed values {self.choices}")
        if (self.min is not None or self.max is not None) and t not in NUMERIC_TYPES:
            raise ValueError(f"min/max only apply to numeric fields, not {t}")
        return self

    @property
    def choices(self) -> list[str] | None:
        """Allowed values of an enum or state field."""
        return self.values if self.type == "enum" else self.states if self.type == "state" else None

    @property
    def lower_bound(self) -> float | None:
        if self.min is not None:
            return self.min
        return 0 if self.type in ("quantity", "money") else None


class Entity(_Model):
    """A table. The first field must be its ``id``."""

    name: Ident
    description: str = ""
    label: Ident | None = Field(None, description="field a person uses to name a row (title, name)")
    id_prefix: Annotated[str, Field(pattern=r"^[a-z]{2,5}$")] | None = None
    rows: int = Field(30, ge=1, le=100_000, description="rows of this entity in a sample state")
    fields: list[FieldDef] = Field(min_length=2)
    called: Words | None = Field(None, description="what people call a row ('order', not 'customer order')")
    known_by: list[Ident] = Field(default_factory=list, description="fields a person names a row by, best first")
    unique: list[list[Ident]] = Field(
        default_factory=list, description="composite unique keys: each a list of two or more fields no two rows share together"
    )
    never_describe: list[Ident] = Field(
        default_factory=list, description="fields that never describe a row: counters, running totals, free text"
    )

    @model_validator(mode="after")
    def _id_first(self) -> Entity:
        if self.fields[0].type != "id":
            raise ValueError("the first field of an entity must have type id")
        if sum(f.type == "id" for f in self.fields) != 1:
            raise ValueError("an entity has exactly one id field")
        names = [f.name for f in self.fields]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate field names {sorted(dup)}")
        if self.label is not None and self.label not in names:
            raise ValueError(f"label {self.label!r} is not a field of this entity")
        for key in ("known_by", "never_describe"):
            unknown = [n for n in getattr(self, key) if n not in names]
            if unknown:
                raise ValueError(f"{key}: {unknown[0]!r} is not a field of this entity; fields are {names}")
        both = set(self.known_by) & set(self.never_describe)
        if both:
            raise ValueError(f"{sorted(both)[0]!r} is both in known_by and in never_describe")
        if self.label is not None and self.label in self.never_describe:
            raise ValueError(f"the label {self.label!r} names the row, it cannot be in never_describe")
        if self.fields[0].name in self.known_by:
            raise ValueError(f"known_by: {self.fields[0].name!r} is the id; people never name a row by its id")
        for key in self.unique:
            if len(set(key)) < 2 or len(set(key)) != len(key):
                raise ValueError(f"unique: {key} is not a composite key; list two or more different fields (one field: unique: true on it)")
            unknown = [n for n in key if n not in names]
            if unknown:
                raise ValueError(f"unique: {unknown[0]!r} is not a field of this entity; fields are {names}")
        return self

    @property
    def id_field(self) -> str:
        return self.fields[0].name

    @property
    def prefix(self) -> str:
        return self.id_prefix or self.name.replace("_", "")[:3]

    def field(self, name: str) -> FieldDef:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def has(self, name: str) -> bool:
        return any(f.name == name for f in self.fields)


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
