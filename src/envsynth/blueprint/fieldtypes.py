"""Field types as tools see them: JSON-schema types, string patterns, the default of an unset column; names as words.

Shared by the expander (parameters and implied checks), the v2 effects and the code
generator.
"""

from __future__ import annotations

from envsynth.blueprint.models import FieldDef

_STRING_TYPES = {"id", "ref", "string", "text", "name", "email", "phone", "url", "address", "company", "enum", "state", "date", "datetime"}
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
DATETIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$"
GENERATED_LOCALS = {"where", "args", "clause", "total", "items", "value", "rows", "changes", "assignments", "limit", "offset", "key", "v"}
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


def human(name: str) -> str:
    return name.replace("_", " ")


def article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def json_type(ftype: str) -> str:
    if ftype in _STRING_TYPES:
        return "string"
    if ftype in ("int", "quantity", "integer"):
        return "integer"
    if ftype in ("money", "float", "number"):
        return "number"
    if ftype in ("bool", "boolean"):
        return "boolean"
    raise ValueError(ftype)


def default_value_expr(f: FieldDef) -> str | None:
    """Expression for a field a create leaves unset, or None when it must be given."""
    if f.nullable:
        return "None"
    if f.type == "state":
        return repr(f.initial or f.states[0])  # type: ignore[index]
    if f.type == "bool":
        return "False"
    if f.type in ("int", "quantity", "money", "float"):
        lb = f.lower_bound
        return repr(0 if lb is None or lb <= 0 else lb)
    if f.type == "datetime":
        return "now()"
    if f.type == "date":
        return "today()"
    return None
