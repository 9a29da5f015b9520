"""The gating policy: ScaleEnv's LLM-gated chain expansion of a task's visible tools H.

Per round, with D = G \\ H the tools not visible yet:

* c(H), the structural complexity (:func:`~envsynth.graph.structural_complexity`);
* g(D), the feasibility of D: the share of ``k`` randomized oracle searches that find an
  executable chain among D's tools (see :func:`feasibility`);
* |D|.

The model (role ``gating``) sees these numbers and the names in H and D, and answers a
compatibility score ``p``. While ``p >= tau`` and D is not empty, a chain C the search
found is drawn, H := H ∪ K(C) (dependency-aware BFS, :func:`~envsynth.graph.expand_subgraph`),
and the model is asked again (at most ``max_rounds`` times). The task itself (oracle, state,
instruction, ground truth) does not change: only the visible tools grow, and the oracle's
tools stay visible.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from envsynth.graph import expand_subgraph, structural_complexity
from envsynth.graph.model import ToolGraph
from envsynth.llmbuild.prompts import prompt
from envsynth.runtime.app import App
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.instantiate import ChainFailed, instantiate
from envsynth.tasks.model import Task, TaskKind
from envsynth.tasks.planning.chain import plan_chain
from envsynth.tasks.synth import MIN_VISIBLE, WORLD_ROWS, value_pool

__all__ = [
    "Feasibility",
    "GateDecision",
    "GatingResult",
    "complexity",
    "feasibility",
    "gate_visible_tools",
    "remaining",
    "restricted_app",
]

ROLE = "gating"
TAU = 0.5
K_SEARCHES = 4
MAX_ROUNDS = 3
_KINDS: tuple[TaskKind, ...] = ("action", "mixed")


class GateDecision(BaseModel):
    """The gating policy's reply."""

    model_config = ConfigDict(extra="ignore")

    p: float = Field(ge=0.0, le=1.0, description="compatibility score: how much expanding H with a chain from D is worth it")
    reason: str = ""


@dataclass
class Feasibility:
    """g(D): ``found`` chains (tool names) out of ``k`` searches."""

    k: int
    found: list[list[str]] = field(default_factory=list)

    @property
    def score(self) -> float:
        return len(self.found) / self.k if self.k else 0.0


@dataclass
class GatingResult:
    """The grown visible tools and one log entry per round (``c``, ``g``, ``d``, ``p``, ``reason``, ``chain``, ``added``)."""

    visible_tools: list[str]
    decisions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        """Model decisions taken."""
        return sum(1 for d in self.decisions if d.get("p") is not None)

    @property
    def added(self) -> list[str]:
        return [t for d in self.decisions for t in d.get("added", [])]


# --- the metrics -------------------------------------------------------------------------------


def complexity(graph: ToolGraph, tools: list[str]) -> float:
    """c(H) = |V_H| + 0.5 |E_H| / 50 (ScaleEnv's constants; dependency pairs of every edge kind)."""
    return structural_complexity(graph, tools)


def remaining(graph: ToolGraph, tools: list[str]) -> list[str]:
    """D = G \\ H, sorted."""
    have = set(tools)
    return [t for t in graph.nodes if t not in have]


def restricted_app(app: App, tools: list[str]) -> App:
    """A view of ``app`` with only ``tools`` (same blueprint and compiled module, fewer specs)."""
    keep = set(tools)
    view = dataclasses.replace(app, specs=[s for s in app.specs if s.name in keep])
    for name in ("module", "functions", "validators", "order", "bool_columns"):
        view.__dict__[name] = getattr(app, name)  # compiled once: share, never re-execute
    return view


def feasibility(app: App, graph: ToolGraph, tools: list[str], *, k: int = K_SEARCHES, seed: int = 0) -> Feasibility:
    """g(D): how many of ``k`` randomized oracle searches find an executable chain in ``tools``.

    Search ``i`` (``random.Random(seed * 7919 + i)``) plans one action or mixed chain
    (:func:`~envsynth.tasks.planning.chain.plan_chain`) on the app and graph restricted to
    ``tools``, so every step is a tool of D and at least the first is a write, then
    instantiates it on a fresh world (:func:`~envsynth.tasks.building.instantiate.instantiate`).
    The chain is *found* when the instantiation succeeds: every call of the chain ran
    with a Success on the state built for it. Deterministic in its arguments.
    """
    out = Feasibility(k)
    if not tools or k <= 0:
        return out
    sub = restricted_app(app, tools)
    if not any(s.mode == "write" for s in sub.specs):
        return out
    sub_graph = graph.subgraph(tools)
    for i in range(k):
        s = seed * 7919 + i
        rng = random.Random(s)
        steps = plan_chain(sub, sub_graph, rng, rng.choice(_KINDS))
        if not steps:
            continue
        world = (
            StateBuilder(app.blueprint, s, app.order).use_pool(value_pool(app)).fill({e.name: WORLD_ROWS for e in app.blueprint.entities})
        )
        try:
            instantiate(sub, steps, world, s)
        except ChainFailed:
            continue
        out.found.append([st.spec.name for st in steps])
    return out


# --- the policy --------------------------------------------------------------------------------


def _messages(app: App, task: Task, visible: list[str], rest: list[str], c: float, g: Feasibility, rounds: int) -> list[dict[str, Any]]:
    text = prompt(
        ROLE,
        app_title=app.blueprint.title,
        instruction=task.instruction,
        oracle_tools=", ".join(dict.fromkeys(call.tool for call in task.oracle)),
        h_size=len(visible),
        h_tools=", ".join(visible),
        d_size=len(rest),
        d_tools=", ".join(rest) or "(none)",
        c=f"{c:.3f}",
        g=f"{g.score:.2f}",
        found=len(g.found),
        k=g.k,
        chains="; ".join(" -> ".join(ch) for ch in g.found) or "(none)",
        rounds=rounds,
    )
    return [{"role": "user", "content": text}]


async def gate_visible_tools(
    client: Any,
    app: App,
    graph: ToolGraph,
    task: Task,
    *,
    tau: float = TAU,
    k: int = K_SEARCHES,
    max_rounds: int = MAX_ROUNDS,
    min_size: int = MIN_VISIBLE,
    seed: int | None = None,
) -> GatingResult:
    """Grow ``task.visible_tools`` by LLM-gated chain expansion.

    Args:
        client: a :class:`~envsynth.llmbuild.client.BuilderClient`.
        app: the task's app.
        graph: the app's tool graph G.
        task: the task (not changed).
        tau: expand while the model's ``p`` is at least this.
        k: feasibility searches per round.
        max_rounds: model decisions at most.
        min_size: K(C)'s target size, and the least |H| kept where the app allows it.
        seed: seeds the searches and expansions (default: the task's seed).

    Returns:
        The new visible tools (the old ones first, in order) and the decisions log.

    Raises:
        RoleError: no usable reply (the caller keeps the procedural visible tools).
        BuildStop: the token budget is spent, or the endpoint is down.
    """
    base = task.seed if seed is None else seed
    rng = random.Random(base * 104729 + 1)
    visible = list(dict.fromkeys(task.visible_tools))
    result = GatingResult(visible)
    if len(visible) < min_size:  # the procedural synthesis aims for it; top up where the app allows
        grown = expand_subgraph(graph, [t for t in visible if t in graph], min_size=min_size, rng=rng)
        added = [t for t in grown if t not in visible]
        visible += added
        if added:
            result.decisions.append({"round": 0, "p": None, "reason": f"top-up to |H| >= {min_size}", "added": added})
    for n in range(max_rounds):
        rest = remaining(graph, visible)
        c = complexity(graph, visible)
        if not rest:
            result.decisions.append({"round": n + 1, "c": c, "g": 0.0, "d": 0, "p": None, "reason": "D is empty", "added": []})
            break
        g = feasibility(app, graph, rest, k=k, seed=base * 31 + n)
        decision = await client.structured(ROLE, _messages(app, task, visible, rest, c, g, n), GateDecision, fallback=True)
        entry: dict[str, Any] = {
            "round": n + 1,
            "c": c,
            "g": g.score,
            "d": len(rest),
            "p": decision.p,
            "reason": decision.reason,
            "added": [],
        }
        result.decisions.append(entry)
        if decision.p < tau:
            break
        if not g.found:
            entry["stop"] = "no executable chain found in D"
            break
        chain = rng.choice(g.found)
        grown = expand_subgraph(graph, chain, min_size=min_size, rng=rng)
        added = [t for t in grown if t not in visible]
        entry["chain"] = chain
        entry["added"] = added
        if not added:
            break
        visible += added
    result.visible_tools = visible
    return result
