"""The build pipeline, one for every builder and every caller.

::

    builder.blueprints -> compile -> test -> graph (+ builder's app stage) -> sealed app folder
                       -> tasks (+ builder's task stage) -> corpus (out/apps, out/tasks, out/corpus.json)

The CLI (``envsynth build``), the Python API (:func:`build`) and the LLM builder all run
it; an apps-only build (``tasks_per_app=0``) is the same corpus folder without tasks.

Example::

    from envsynth import catalog
    from envsynth.pipeline import BuildConfig, ProceduralBuilder, build

    blueprints = [catalog.load(name) for name in catalog.names()]
    summary = build(BuildConfig(out="out", tasks_per_app=5), ProceduralBuilder(blueprints))
"""

from __future__ import annotations

from envsynth.pipeline.builder import Builder, ProceduralBuilder
from envsynth.pipeline.config import BuildConfig, ConfigError, LLMOptions
from envsynth.pipeline.run import build

__all__ = ["BuildConfig", "Builder", "ConfigError", "LLMOptions", "ProceduralBuilder", "build"]
