"""The data model of an app in a blueprint: field types, fields and entities (tables).

Part of the blueprint format (see :mod:`envsynth.blueprint.models`, ``docs/blueprints.md``):
the names a blueprint may use, the types a field may have, how its values are drawn, and
the checks one entity can make on its own fields.
"""

from __future__ import annotations

import keyword
from functools import cached_property
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from envsynth.memo import Indexed

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
FIELD_TYPES: tuple[str, ...] = get_args(FieldType)
NUMERIC_TYPES = ("money", "int", "quantity", "float")


class _Model(Indexed, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Words = Annotated[str, Field(min_length=1, max_length=80, pattern=r"^[^{}\n]+$")]
"""A few words of plain text (a noun, a label): no line breaks, no ``{slots}``."""


_KINDS = ("faker", "choice", "range", "template", "bothify", "dates", "after", "before", "compute")


class Generator(_Model):
    """How synthetic values for a field are drawn (one of the keys is set).

    - ``faker``: a Faker provider name (``company``, ``catch_phrase``, ``city``...),
      with optional ``args``;
    - ``choice``: a list of values, with optional ``weights``;
    - ``range``: ``[low, high]`` for numbers (money is rounded to cents);
    - ``template``: a ``str.format`` pattern whose ``{names}`` are drawn from ``parts``
      (each itself a generator), e.g. ``"{adjective} {item}"``;
    - ``bothify``: a Faker pattern such as ``"SKU-####-??"``;
    - ``dates``: ``[start, end]`` offsets from the reference day such as ``"-1y"``, ``"+30d"``;
    - ``compute``: an arithmetic expression of the row's other fields (``round(quantity * unit_price, 2)``).

    Modifiers (blueprint.correlate): ``when`` (+ ``otherwise``), ``differs_from``, ``not_before``
    (never before another date of the row, or of the row a ref points to), ``past_when`` / ``future_when`` (before
    or after the clock on rows in some states) and ``sum_of`` (the sum of
    a field over the rows that refer to this one).
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
    otherwise: Any = Field(None, description="with when: the value on rows that do not match (instead of NULL)")
    not_before: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)?$")]] | None = Field(
        None,
        description="date/datetime fields this value is never before: 'placed_at' (of the row), 'customer_id.joined_on' (of the row a ref points to)",
    )
    past_when: dict[Ident, Any] | None = Field(None, description="field -> value (or list): on such rows the date is before the clock")
    future_when: dict[Ident, Any] | None = Field(None, description="field -> value (or list): on such rows the date is after the clock")
    compute: str | None = Field(None, description="an arithmetic expression of the row's numeric fields: 'quantity * unit_price'")
    sum_of: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")] | None = Field(
        None, description="'<table>.<field>': the sum of that field over the rows of table that refer to this row"
    )

    @field_validator("not_before", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _one_kind(self) -> Generator:
        kinds = [k for k in _KINDS if getattr(self, k) is not None]
        modifiers = any(getattr(self, k) is not None for k in ("when", "differs_from", "not_before", "past_when", "future_when"))
        if len(kinds) > 1 or (not kinds and not modifiers):
            raise ValueError(
                f"a generator sets exactly one of faker/choice/range/template/bothify/dates/after/before/compute, got {kinds or 'none'}"
                " (modifiers alone draw the field type's own values)"
            )
        if "otherwise" in self.model_fields_set and self.when is None:
            raise ValueError("otherwise is the value on rows when does not match: it needs when")
        if (self.after is not None or self.before is not None) != (self.by is not None):
            raise ValueError("after/before and by go together: after: <field>, by: [least, most] (e.g. by: [1h, 14h])")
        if self.weights is not None and (self.choice is None or len(self.weights) != len(self.choice)):
            raise ValueError("weights need a choice list of the same length")
        return self

    @cached_property
    def kind(self) -> str | None:
        """Which key draws the value (``faker``... ``after``/``before``); None when only when/differs_from are set."""
        return next((k for k in _KINDS if getattr(self, k) is not None), None)


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
    say_true: Words | None = Field(
        None, description="a bool field: what a row does when it is true, as a verb phrase ('renews automatically')"
    )
    say_false: Words | None = Field(None, description="a bool field: what a row does when it is false ('does not renew automatically')")

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
            self._check_states()
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min is greater than max")
        if self.gen is not None and self.gen.choice is not None:
            self._check_gen_choice(self.gen.choice)
        if (self.min is not None or self.max is not None) and t not in NUMERIC_TYPES:
            raise ValueError(f"min/max only apply to numeric fields, not {t}")
        if (self.say_true is None) != (self.say_false is None) or (self.say_true is not None and t != "bool"):
            raise ValueError(
                "say_true and say_false go together, on a bool field ('renews automatically' / 'does not renew automatically')"
            )
        return self

    def _check_states(self) -> None:
        """A state field has states, transitions between them and an initial state among them."""
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

    def _check_gen_choice(self, choice: list[Any]) -> None:
        """The values ``gen.choice`` draws fit the field's type and its allowed values."""
        t = self.type
        want = (int, float) if t in NUMERIC_TYPES else (bool,) if t == "bool" else (str,)
        bad = [v for v in choice if not isinstance(v, want) or (isinstance(v, bool) and t != "bool")]
        if bad:
            raise ValueError(f"gen.choice values {bad[:3]} do not fit a {t} field (quote them in YAML: '1:1')")
        outside = [v for v in choice if self.choices and v not in self.choices]
        if outside:
            raise ValueError(f"gen.choice values {outside[:3]} are not among the allowed values {self.choices}")

    @property
    def choices(self) -> list[str] | None:
        """Allowed values of an enum or state field."""
        return self.values if self.type == "enum" else self.states if self.type == "state" else None

    @property
    def lower_bound(self) -> float | None:
        if self.min is not None:
            return self.min
        return 0 if self.type in ("quantity", "money") else None


class OneRule(_Model):
    """At most one generated row per owner (the values of ``per``) matches ``where`` (field -> value or list of
    values); a drawn row that would be a second one gets another value of the ``where`` fields."""

    per: list[Ident] = Field(min_length=1)
    where: dict[Ident, Any] = Field(min_length=1)

    @field_validator("per", mode="before")
    @classmethod
    def _listed(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


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
    at_most_one: list[OneRule] = Field(
        default_factory=list, description="rules of generated rows: at most one row per owner matches `where` (one active plan)"
    )

    def one_only(self, values: dict[str, Any]) -> bool:
        """Whether two rows both holding ``values`` would break an ``at_most_one`` rule (two active plans of one owner)."""
        for rule in self.at_most_one:
            if all(p in values for p in rule.per) and all(
                k in values and (values[k] in v if isinstance(v, list) else values[k] == v) for k, v in rule.where.items()
            ):
                return True
        return False

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
        self._check_naming(names)
        for key in self.unique:
            if len(set(key)) < 2 or len(set(key)) != len(key):
                raise ValueError(f"unique: {key} is not a composite key; list two or more different fields (one field: unique: true on it)")
            unknown = [n for n in key if n not in names]
            if unknown:
                raise ValueError(f"unique: {unknown[0]!r} is not a field of this entity; fields are {names}")
        return self

    def _check_naming(self, names: list[str]) -> None:
        """``label``, ``known_by`` and ``never_describe`` name fields of this entity, and do not contradict each other."""
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
