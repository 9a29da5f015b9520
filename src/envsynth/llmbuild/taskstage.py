"""The LLM task stage: natural instructions and gated tool expansion for admitted tasks.

The corpus build applies one :class:`TaskStage` to the S states of each admitted task
index::

    stage = TaskStage(client, asyncio.run)
    tasks = stage(app, graph, synthesize(app, graph, app_index=0, task_index=7, states=3))
    stage.metrics()

The S states share one instruction and one set of visible tools, so the model is asked
once per task index (on state 0) and the result applied to every state. Ids,
coordinates, oracle, state and ground truth are unchanged; each task is resealed. A
:class:`~envsynth.llmbuild.client.BuildStop` (a spent budget, an endpoint down)
propagates (the build stops and resumes later from the reply cache); a
:class:`~envsynth.llmbuild.client.RoleError` (invalid replies, a prompt over the
context, a failed call) keeps the procedural instruction or the procedural visible
tools, with the reason recorded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Coroutine
from typing import Any

from envsynth.graph.model import ToolGraph
from envsynth.llmbuild.client import PromptTooLong, RoleError, StructuredOutputError
from envsynth.llmbuild.gating import K_SEARCHES, MAX_ROUNDS, TAU, GatingResult, gate_visible_tools
from envsynth.llmbuild.writer import write_instruction
from envsynth.runtime.app import App
from envsynth.tasks.model import Task
from envsynth.tasks.state import merged
from envsynth.tasks.synth import admit

__all__ = ["TaskStage"]

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def _why(exc: RoleError) -> str:
    """A short reason for a role's failure (a metrics key)."""
    if isinstance(exc, StructuredOutputError):
        return "no valid reply"
    if isinstance(exc, PromptTooLong):
        return "prompt too long"
    return "model call failed"


class TaskStage:
    """Rewrite the instruction and grow the visible tools of one task index's states.

    Attributes:
        client: the builder client.
        run: runs a coroutine to completion (``asyncio.run``, or a loop's runner).
        tau: the gating threshold.
        k: feasibility searches per gating round.
        rewrite: whether to rewrite instructions.
        gate: whether to expand visible tools.
        max_rounds: gating decisions per task index at most.
    """

    def __init__(
        self,
        client: Any,
        run: Runner,
        *,
        tau: float = TAU,
        k: int = K_SEARCHES,
        rewrite: bool = True,
        gate: bool = True,
        max_rounds: int = MAX_ROUNDS,
    ) -> None:
        self.client = client
        self.run = run
        self.tau = tau
        self.k = k
        self.rewrite = rewrite
        self.gate = gate
        self.max_rounds = max_rounds
        self._counts: Counter[str] = Counter()
        self._fallback_reasons: Counter[str] = Counter()
        self._p_values: list[float] = []

    def __call__(self, app: App, graph: ToolGraph, tasks: list[Task]) -> list[Task]:
        """The same tasks with the rewritten instruction and user and the expanded visible tools, resealed.

        Raises:
            BuildStop: the token budget is spent or the endpoint is down (nothing of this task index is changed).
        """
        if not tasks:
            return []
        first = tasks[0]
        self._counts["task_indices"] += 1
        update: dict[str, Any] = {}
        llm: dict[str, Any] = {}
        if self.rewrite:
            instruction, user, info = self._rewrite(app, first)
            if info["status"] == "rewritten":
                update["instruction"], update["user"] = instruction, user
            llm["instruction"] = info
        if self.gate:
            gating = self._gate(app, graph, first)
            if gating is not None and gating.visible_tools != first.visible_tools:
                update["visible_tools"] = gating.visible_tools
            llm["gating"] = gating.decisions if gating is not None else "failed"
        out = []
        for task in tasks:
            stats = {**task.stats, "llm": llm}
            if "visible_tools" in update:
                stats["visible_tools"] = len(update["visible_tools"])
            new = task.model_copy(update={**update, "stats": stats}).sealed()
            problem = admit(app, new, merged(new.state.core, new.state.distractors)) if "visible_tools" in update else None
            if problem:  # cannot happen when H only grows; a safety net all the same
                self._counts["not_admitted"] += 1
                self._fallback_reasons[f"admission: {problem}"] += 1
                new = task
            out.append(new)
        return out

    def _rewrite(self, app: App, task: Task) -> tuple[str, Any, dict[str, Any]]:
        try:
            instruction, user, info = self.run(write_instruction(self.client, app, task))
        except RoleError as exc:
            attempts = exc.attempts if isinstance(exc, StructuredOutputError) else 1
            info = {"status": "fallback", "attempts": attempts, "reasons": [[f"{_why(exc)}: {exc}"]]}
            instruction, user = task.instruction, task.user
        if info["status"] == "rewritten":
            self._counts["instructions_rewritten"] += 1
        else:
            self._counts["instructions_fallback"] += 1
            for problems in info["reasons"][-1:]:
                for p in problems:
                    self._fallback_reasons[p.split(":")[0].split(" '")[0]] += 1
        return instruction, user, info

    def _gate(self, app: App, graph: ToolGraph, task: Task) -> GatingResult | None:
        try:
            result: GatingResult = self.run(
                gate_visible_tools(self.client, app, graph, task, tau=self.tau, k=self.k, max_rounds=self.max_rounds)
            )
        except RoleError as exc:
            self._counts["gating_failed"] += 1
            self._fallback_reasons[f"gating: {_why(exc)} ({exc.role})"] += 1
            return None
        self._counts["gating_rounds"] += result.rounds
        self._counts["expansions"] += sum(1 for d in result.decisions if d.get("p") is not None and d.get("added"))
        self._counts["tools_added"] += len(result.added)
        self._p_values += [d["p"] for d in result.decisions if d.get("p") is not None]
        return result

    def metrics(self) -> dict[str, Any]:
        """Counts so far: task indices, instructions rewritten / fallen back (and why), gating rounds, p values, tools added."""
        keys = (
            "task_indices",
            "instructions_rewritten",
            "instructions_fallback",
            "gating_rounds",
            "expansions",
            "tools_added",
            "gating_failed",
            "not_admitted",
        )
        return {
            **{k: self._counts[k] for k in keys},
            "fallback_reasons": dict(sorted(self._fallback_reasons.items())),
            "p_values": list(self._p_values),
        }
