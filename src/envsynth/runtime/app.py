"""Apps at run time: the compiled tools, their argument validators and a sample state."""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from envsynth.blueprint.models import Blueprint, Entity
from envsynth.blueprint.order import creation_order
from envsynth.blueprint.spec import ParamSpec, ToolSpec
from envsynth.errors import EnvsynthError
from envsynth.memo import Index
from envsynth.runtime.episode import Episode
from envsynth.runtime.guard import guarded_tools
from envsynth.runtime.lists import list_annotation
from envsynth.runtime.toolkit import BoolColumns


class AppLoadError(EnvsynthError, RuntimeError):
    """An app folder that is missing, incomplete or not produced by envsynth."""


_PY = {"string": str, "integer": int, "number": float, "boolean": bool}

MAX_STRING = 10_000
"""Characters of a string argument at most (also each item of an array): SQLite refuses LIKE
patterns over 50,000 bytes, and no tool needs more."""
MAX_ITEMS = 1_000
"""Items of an array argument at most (each becomes an SQL parameter; SQLite allows 32,766)."""
MAX_INT = 2**53 - 1
"""Integer arguments lie within +-MAX_INT unless the tool declares tighter bounds: the integers a
JSON number carries exactly, far from SQLite's 64-bit limit also when a tool adds a few of them."""


def _annotation(p: ParamSpec) -> Any:
    """The type of a parameter, with its declared constraints and the runtime's own bounds.

    The bounds make bad input a validation error instead of a failure deeper down: strings
    and arrays are capped (:data:`MAX_STRING`, :data:`MAX_ITEMS`), a string must be valid
    Unicode (a lone surrogate cannot be stored), integers stay within :data:`MAX_INT`,
    numbers are finite and a ``date`` or ``datetime`` string exists on the calendar.
    """
    bounds: dict[str, Any] = {}
    if p.type == "array" and (p.item_fields is not None or p.unique_items or p.min_items is not None or p.max_items is not None):
        return list_annotation(p, _annotation)
    if p.type == "array":
        item: Any = Literal[tuple(p.items_enum)] if p.items_enum else Annotated[str, Field(max_length=MAX_STRING)]  # type: ignore[misc]
        base: Any = list[item]
        bounds["max_length"] = MAX_ITEMS
    elif p.enum:
        base = Literal[tuple(p.enum)]  # type: ignore[misc]
    else:
        base = _PY[p.type]
        bounds = _scalar_bounds(p)
    declared = {"ge": p.minimum, "le": p.maximum, "gt": p.exclusive_minimum, "pattern": p.pattern, "description": p.description}
    ann: Any = Annotated[base, Field(**(declared | bounds))]
    if p.type == "string" and not p.enum and p.semantic in _CALENDAR:
        ann = Annotated[ann, AfterValidator(_CALENDAR[p.semantic])]
    return ann if p.required else ann | None


def _on_the_calendar(parse: Callable[[str], Any], what: str) -> Callable[[str], str]:
    """A validator keeping a value that ``parse`` accepts (the pattern only checks the digits: 2024-02-30 passes it)."""

    def check(value: str) -> str:
        try:
            parse(value)
        except ValueError:
            raise ValueError(f"{value!r} is not {what}") from None
        return value

    return check


_CALENDAR = {
    "date": _on_the_calendar(date.fromisoformat, "a date of the calendar (YYYY-MM-DD)"),
    "datetime": _on_the_calendar(datetime.fromisoformat, "a date and time of the calendar (YYYY-MM-DDTHH:MM[:SS])"),
}


def _scalar_bounds(p: ParamSpec) -> dict[str, Any]:
    """The runtime's bounds of a string, integer or number parameter (declared ones kept)."""
    if p.type == "string":
        return {"max_length": MAX_STRING}  # checking the length also makes pydantic refuse invalid Unicode
    if p.type == "number":
        return {"allow_inf_nan": False}
    if p.type == "integer":
        bounds: dict[str, Any] = {}
        if p.minimum is None or p.minimum < -MAX_INT:
            bounds["ge"] = -MAX_INT
        if p.maximum is None or p.maximum > MAX_INT:
            bounds["le"] = MAX_INT
        return bounds
    return {}


def argument_model(spec: ToolSpec) -> type[BaseModel]:
    """A strict pydantic model of a tool's arguments (unknown keys rejected, see :func:`_annotation` for the bounds)."""
    fields: dict[str, Any] = {p.name: (_annotation(p), ... if p.required else None) for p in spec.params}
    return create_model(f"{spec.name}_arguments", __config__=ConfigDict(extra="forbid", strict=True), **fields)


@dataclass
class App:
    """A compiled app: blueprint, tool specs, tool functions and the sample state."""

    blueprint: Blueprint
    specs: list[ToolSpec]
    module_source: str
    schema: str
    sample_state: bytes
    manifest: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    keep_log: bool = False

    @classmethod
    def load(cls, path: str | Path) -> App:
        """Load an app folder written by ``envsynth build``.

        Raises:
            AppLoadError: if the folder is missing or incomplete.
        """
        p = Path(path)
        need = ["app.json", "tools.py", "schema.sql", "state.db"]
        if not p.is_dir():
            raise AppLoadError(f"no app folder at {p}")
        missing = [n for n in need if not (p / n).is_file()]
        if missing:
            raise AppLoadError(f"{p} is not an envsynth app (missing {', '.join(missing)})")
        manifest = json.loads((p / "app.json").read_text(encoding="utf-8"))
        bp = Blueprint.model_validate(manifest["blueprint"])
        specs = [ToolSpec.model_validate(s) for s in manifest["tools"]]
        return cls(
            blueprint=bp,
            specs=specs,
            module_source=(p / "tools.py").read_text(encoding="utf-8"),
            schema=(p / "schema.sql").read_text(encoding="utf-8"),
            sample_state=(p / "state.db").read_bytes(),
            manifest=manifest,
            path=p,
        )

    @property
    def name(self) -> str:
        return self.blueprint.name

    @cached_property
    def index(self) -> Index:
        """Lookups derived from this app (task synthesis memoises on it), built on first use and freed with it."""
        return Index()

    @cached_property
    def spec_by_name(self) -> dict[str, ToolSpec]:
        return {s.name: s for s in self.specs}

    @cached_property
    def module(self) -> types.ModuleType:
        """The tools module, executed from its source (procedurally generated, trusted code)."""
        mod = types.ModuleType(f"envsynth_app_{self.name}")
        mod.__file__ = str(self.path / "tools.py") if self.path else f"<{self.name}/tools.py>"
        exec(compile(self.module_source, mod.__file__, "exec"), mod.__dict__)
        return mod

    @cached_property
    def state_writers(self) -> dict[str, tuple[str, ...]]:
        """The tools whose calls run with the state machines armed in the database, with the triggers they need
        (see :mod:`envsynth.runtime.guard`)."""
        return guarded_tools(self.specs, self.blueprint)

    @cached_property
    def functions(self) -> dict[str, Callable[..., Any]]:
        return {s.name: getattr(self.module, s.name) for s in self.specs}

    @cached_property
    def validators(self) -> dict[str, type[BaseModel]]:
        return {s.name: argument_model(s) for s in self.specs}

    @cached_property
    def validate(self) -> dict[str, Callable[[Any], BaseModel]]:
        """Each tool's argument validation (``validators[name].model_validate`` without its per-call overhead)."""
        return {name: model.__pydantic_validator__.validate_python for name, model in self.validators.items()}

    @cached_property
    def order(self) -> list[Entity]:
        """Entities in table-creation order."""
        return creation_order(self.blueprint)

    @cached_property
    def bool_columns(self) -> BoolColumns:
        """Bool columns by table; also holds the app's cache of query column names (see :class:`BoolColumns`)."""
        return BoolColumns(self.module.BOOL_COLUMNS)

    @property
    def now(self) -> str:
        """The clock of every episode: noon on the blueprint's reference date."""
        return f"{self.blueprint.reference_date}T12:00:00"

    def tool_schemas(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI function schemas of all tools, or of ``names`` in that order."""
        schemas = self._schemas  # built once; callers get their own top-level dicts
        return [dict(schemas[n]) for n in (names if names is not None else [s.name for s in self.specs])]

    @cached_property
    def _schemas(self) -> dict[str, dict[str, Any]]:
        return {s.name: s.openai_schema() for s in self.specs}

    def episode(self, state: bytes | None = None, seed: int = 0) -> Episode:
        """Start an episode on its own in-memory copy of ``state`` (default: the sample state)."""
        return Episode.start(self, self.sample_state if state is None else state, seed)
