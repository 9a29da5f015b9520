"""ToolSpec: the normalised form of an action, shared by the compiler, tester and graph.

Every archetype expands (see :mod:`envsynth.blueprint.expand`) into the same shape:
parameters, row bindings (aliases), pre-conditions, effects (update / insert /
delete), post-conditions and, for reads, a query. Downstream stages only ever see
ToolSpecs, never archetype-specific fields.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from envsynth.memo import Indexed

JsonType = Literal["string", "integer", "number", "boolean", "array"]


class _Spec(Indexed, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ParamSpec(_Spec):
    """One tool parameter, with the entity field it stands for (if any)."""

    name: str
    type: JsonType
    description: str
    required: bool = True
    enum: list[str] | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    pattern: str | None = None
    default: Any = None
    items_enum: list[str] | None = None
    item_fields: list[ParamSpec] | None = Field(None, description="a list of objects: the fields of each item")
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    ref: str | None = Field(None, description="entity whose id this parameter carries")
    field: str | None = Field(None, description="'entity.field' the value stands for")
    semantic: str = Field("string", description="blueprint field type (name, email, money, date...)")

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of this parameter (OpenAI function-calling dialect)."""
        s: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.type == "array":
            s["items"] = {"type": "string"}
            if self.items_enum:
                s["items"]["enum"] = self.items_enum
            if self.item_fields is not None:
                s["items"] = {
                    "type": "object",
                    "properties": {f.name: f.json_schema() for f in self.item_fields},
                    "required": [f.name for f in self.item_fields if f.required],
                    "additionalProperties": False,
                }
            for key, val in (("minItems", self.min_items), ("maxItems", self.max_items), ("uniqueItems", self.unique_items or None)):
                if val is not None:
                    s[key] = val
        if self.enum is not None:
            s["enum"] = self.enum
        for key, val in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("exclusiveMinimum", self.exclusive_minimum),
            ("pattern", self.pattern),
            ("default", self.default),
        ):
            if val is not None:
                s[key] = val
        return s

    @property
    def constrained(self) -> bool:
        return any(v is not None for v in (self.enum, self.minimum, self.maximum, self.exclusive_minimum, self.pattern, self.items_enum))


class Binding(_Spec):
    """A row the tool loads before acting: ``alias`` names it in conditions and effects.

    Either ``param`` holds the key (looked up in column ``key``), or ``via`` names
    ``other_alias.ref_field`` to follow a reference from an already bound row.
    """

    alias: str
    entity: str
    key: str
    param: str | None = None
    via: str | None = None
    optional: bool = False
    many: bool = Field(False, description="param is a list of keys: the alias is the list of their rows")
    item: str | None = Field(None, description="with many: the keys are this field of each item of the list param")


class Check(_Spec):
    """A condition with its failure message and where it came from (for verdicts)."""

    id: str
    check: str
    message: str
    origin: Literal["implicit", "declared"] = "declared"


class Effect(_Spec):
    """A state change. ``values`` map field -> expression evaluated before any write.

    For updates, ``when_given`` maps a field to the optional parameter that must be
    non-null for that field to be written.
    """

    op: Literal["update", "insert", "delete"]
    alias: str
    entity: str
    values: dict[str, str] = Field(default_factory=dict)
    when_given: dict[str, str] = Field(default_factory=dict)
    cascade: list[tuple[str, str]] = Field(default_factory=list, description="(child entity, ref field) deleted first")


class EachEffect(_Spec):
    """An effect repeated over many rows (``for_each``): ``values`` are evaluated per item, named ``alias``.

    Items are those of the list parameter ``param``, or the rows of ``source`` whose fields
    equal the ``match`` expressions; ``where`` (a condition on the item) filters them. ``op``
    is ``insert`` (one ``entity`` row per item) or ``update`` (the item's own row, of ``entity``).
    """

    alias: str
    op: Literal["update", "insert"]
    entity: str
    param: str | None = None
    source: str | None = None
    match: dict[str, str] = Field(default_factory=dict)
    where: str | None = None
    values: dict[str, str] = Field(default_factory=dict)


class FilterSpec(_Spec):
    field: str
    op: Literal["eq", "contains", "gte", "lte", "in"]
    param: str


class Query(_Spec):
    """What a read tool computes from the state."""

    op: Literal["get", "search", "aggregate"]
    entity: str
    alias: str | None = None
    filters: list[FilterSpec] = Field(default_factory=list)
    sort: str | None = None
    descending: bool = False
    agg: Literal["count", "sum", "avg", "min", "max"] | None = None
    field: str | None = None
    group_by: str | None = None


class ToolSpec(_Spec):
    """One tool of an app, fully explicit."""

    name: str
    kind: str
    description: str
    entity: str
    mode: Literal["read", "write"]
    params: list[ParamSpec]
    bindings: list[Binding] = Field(default_factory=list)
    pre: list[Check] = Field(default_factory=list)
    effects: list[Effect] = Field(default_factory=list)
    each: list[EachEffect] = Field(default_factory=list, description="effects repeated over many rows (for_each)")
    post: list[Check] = Field(default_factory=list)
    query: Query | None = None
    returns: str = Field(description="alias of the returned row, 'new', 'query', 'custom' or 'none'")
    returns_doc: str = ""
    code: str | None = None
    untrusted: bool = Field(False, description="code is untrusted: it runs only in a sandboxed worker")
    reads: list[str] = Field(default_factory=list)
    writes: dict[str, list[str]] = Field(default_factory=dict)
    creates: list[str] = Field(default_factory=list)
    deletes: list[str] = Field(default_factory=list)

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def binding(self, alias: str) -> Binding:
        for b in self.bindings:
            if b.alias == alias:
                return b
        raise KeyError(alias)

    def openai_schema(self) -> dict[str, Any]:
        """The tool as an OpenAI function-calling schema."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.json_schema() for p in self.params},
                    "required": [p.name for p in self.params if p.required],
                    "additionalProperties": False,
                },
            },
        }
