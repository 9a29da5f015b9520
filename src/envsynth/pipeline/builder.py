"""The Builder protocol: where a build's blueprints (and their custom code) come from.

A builder hands the pipeline its blueprints, with any custom tool code inside them, before
any app exists; it may add a stage before each app folder is sealed (its graph and
provenance) and a stage over each admitted task index. Everything else (compile, test,
graph, tasks, corpus) is the one pipeline of :func:`envsynth.pipeline.build`.

Two builders ship: :class:`ProceduralBuilder` (the catalogue and the user's YAML, offline)
and :class:`envsynth.llmbuild.pipeline.LLMBuilder` (a model designs, codes and debugs each
domain).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from envsynth.blueprint.models import Blueprint
    from envsynth.compiler.build import AppStage
    from envsynth.corpus.app_tasks import TaskStage

__all__ = ["Builder", "ProceduralBuilder"]


@runtime_checkable
class Builder(Protocol):
    """A source of blueprints, with optional stages of its own in the pipeline."""

    @property
    def name(self) -> str:
        """``procedural`` or ``llm`` (recorded in each app's provenance)."""
        ...

    @property
    def blueprints(self) -> list[Blueprint]:
        """The designs to build, in app-index order, custom tool code inside."""
        ...

    @property
    def app_stage(self) -> AppStage | None:
        """The stage before each app folder is sealed (None: nothing to add)."""
        ...

    def task_stage(self) -> TaskStage | None:
        """The stage over each admitted task index (None: tasks are written as synthesized)."""
        ...


class ProceduralBuilder:
    """The offline builder: blueprints from the shipped catalogue or the user's YAML, as they are.

    Args:
        blueprints: the loaded blueprints, in app-index order.
    """

    name = "procedural"
    app_stage: AppStage | None = None

    def __init__(self, blueprints: Sequence[Blueprint]) -> None:
        self._blueprints = list(blueprints)

    @property
    def blueprints(self) -> list[Blueprint]:
        """The blueprints given, in order."""
        return list(self._blueprints)

    def task_stage(self) -> TaskStage | None:
        """None: procedural tasks are written as synthesized."""
        return None
