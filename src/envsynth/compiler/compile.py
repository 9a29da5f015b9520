"""Blueprint -> App (in memory) -> app folder. Same blueprint and seed, same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from envsynth import __version__
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.order import creation_order
from envsynth.compiler.codegen import write_tools_module
from envsynth.compiler.schema import schema_sql
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder, rows_to_bytes


def canonical_json(data: Any) -> str:
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def sha256(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def blueprint_data(bp: Blueprint) -> dict[str, Any]:
    return bp.model_dump(mode="json", by_alias=True, exclude_defaults=True)


def sample_state(bp: Blueprint, seed: int) -> bytes:
    """The app's sample state: ``rows`` rows per entity, drawn from ``seed``."""
    order = creation_order(bp)
    builder = StateBuilder(bp, seed, order)
    return rows_to_bytes(schema_sql(bp), order, builder.fill())


def compile_app(bp: Blueprint, seed: int = 0, builder: str = "procedural", extra_provenance: dict[str, Any] | None = None) -> App:
    """Compile a validated blueprint into an in-memory App (not yet tested)."""
    specs = expand(bp)
    source = write_tools_module(bp, specs, __version__)
    schema = schema_sql(bp)
    state = sample_state(bp, seed)
    bp_json = blueprint_data(bp)
    content_hash = sha256(canonical_json(bp_json) + schema + source + str(seed))
    manifest = {
        "name": bp.name,
        "title": bp.title,
        "category": bp.category,
        "description": bp.description,
        "blueprint": bp_json,
        "tools": [s.model_dump(mode="json", exclude_defaults=True) for s in specs],
        "tool_schemas": [s.openai_schema() for s in specs],
        "provenance": {
            "envsynth_version": __version__,
            "compiler_version": __version__,
            "builder": builder,
            "seed": seed,
            "blueprint_hash": sha256(canonical_json(bp_json)),
            "content_hash": content_hash,
            **(extra_provenance or {}),
        },
    }
    return App(blueprint=bp, specs=specs, module_source=source, schema=schema, sample_state=state, manifest=manifest)


def app_files(app: App) -> dict[str, bytes]:
    """The files of an app folder (without tests.json and graph.json, written by later stages)."""
    return {
        "app.json": canonical_json(app.manifest).encode(),
        "schema.sql": app.schema.encode(),
        "tools.py": app.module_source.encode(),
        "state.db": app.sample_state,
    }


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
