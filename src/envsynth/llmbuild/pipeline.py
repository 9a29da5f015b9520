"""The LLM builder's pipeline: keywords -> designed, coded, tested apps -> verified tasks.

Per domain keyword:

1. the designer drafts a blueprint (:mod:`envsynth.llmbuild.design`);
2. each custom tool is coded, tested and debugged (:mod:`envsynth.llmbuild.tooldev`);
   tools that never pass are dropped with the reason;
3. the app is compiled and every tool passes the procedural tests (the same build stage
   as the catalogue's apps: :func:`envsynth.compiler.build.build_app`);
4. the dependency agent proposes graph edges; each is kept only if a chain through it
   executes (:mod:`envsynth.llmbuild.dependency`);
5. the operational metrics (calls and tokens per role, debug rounds per tool, tools
   dropped and why, success rate, cache hits, wall time) go into the app's provenance.

Then the corpus is built like any other (A x T x S x D, resumable), with the task writer
and the gating policy applied to every admitted task index
(:class:`envsynth.llmbuild.taskstage.TaskStage`). Every reply is cached on disk, so a
rerun costs no tokens and reproduces the same artifacts; a spent token budget stops the
build with :class:`~envsynth.llmbuild.client.BudgetExceeded`, and a rerun with a larger
budget continues.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.models import Blueprint
from envsynth.corpus.layout import APPS_DIR
from envsynth.errors import ConfigError
from envsynth.llm.types import ChatModel
from envsynth.llmbuild.client import BuilderClient
from envsynth.llmbuild.design import DESIGN_ROUNDS, DomainDesign, design_domain
from envsynth.llmbuild.runner import LoopRunner
from envsynth.llmbuild.tooldev import DEFAULT_ROUNDS, ToolOutcome, develop_tool

if TYPE_CHECKING:
    from envsynth.corpus.build import CorpusSummary
    from envsynth.graph.model import ToolGraph
    from envsynth.llmbuild.taskstage import TaskStage
    from envsynth.runtime.app import App

T = TypeVar("T")
log = logging.getLogger(__name__)

METRICS_FILE = "llm_build.json"
"""The corpus-level metrics of an LLM build (per domain and totals), beside ``corpus.json``."""

CACHE_DIR = ".llm-cache"
"""The default response cache folder, inside the output folder."""

ProgressFn = Callable[[str, str], None]
"""``(domain keyword, stage)`` as the build moves on (``design``, ``tools``, ``app``, ``dependencies``, ``done``, ``failed``)."""


@dataclass
class DomainResult:
    """One keyword's outcome.

    Attributes:
        keyword: the domain keyword.
        blueprint: the final blueprint (shipped custom tools only), None if the domain failed.
        design: the designer's reply.
        tools: each custom tool's outcome.
        error: why the domain produced no app (None if it did).
        design_rounds: per designer reply checked, its problems (``envsynth check`` lines; the last is empty when it loaded).
        metrics: the operational metrics (see the module docstring).
    """

    keyword: str
    blueprint: Blueprint | None = None
    design: DomainDesign | None = None
    tools: list[ToolOutcome] = field(default_factory=list)
    error: str | None = None
    design_rounds: list[list[str]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


def _role_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for role, now in after["roles"].items():
        was = before["roles"].get(role, {})
        diff = {k: v - int(was.get(k, 0)) for k, v in now.items()}
        if any(diff.values()):
            out[role] = diff
    return out


def _role_sum(a: dict[str, dict[str, int]], b: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Two role deltas added up, role by role."""
    out = {role: dict(counts) for role, counts in a.items()}
    for role, counts in b.items():
        mine = out.setdefault(role, {})
        for k, v in counts.items():
            mine[k] = mine.get(k, 0) + v
    return out


def _totals(roles: dict[str, dict[str, int]]) -> dict[str, int]:
    keys = sorted({k for r in roles.values() for k in r})
    return {k: sum(r.get(k, 0) for r in roles.values()) for k in keys}


async def synthesize_domain(
    client: BuilderClient,
    keyword: str,
    description: str | None = None,
    *,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
    design_rounds: int = DESIGN_ROUNDS,
) -> DomainResult:
    """Design a domain (up to ``design_rounds`` checked replies) and develop its custom tools concurrently (stages 1 and 2)."""
    from envsynth.llmbuild.client import DesignProblems, RoleError, StructuredOutputError

    result = DomainResult(keyword)
    try:
        designed = await design_domain(client, keyword, description, max_rounds=design_rounds)
    except DesignProblems as exc:
        result.design_rounds = exc.history
        result.error = str(exc)
        return result
    except StructuredOutputError as exc:
        result.error = f"the designer gave no valid blueprint: {exc.errors[-1] if exc.errors else exc}"
        return result
    except RoleError as exc:
        result.error = f"the designer gave no blueprint: {exc}"
        return result
    result.design, result.design_rounds = designed.design, designed.rounds
    design = result.design
    result.tools = await _gather_all([develop_tool(client, design, t.name, rounds=rounds, seed=seed) for t in design.custom_tools])
    shipped = {o.name: o.code for o in result.tools if o.passed and o.code is not None}
    try:
        result.blueprint = design.to_blueprint(shipped, keep=set(shipped))  # type: ignore[arg-type]
    except BlueprintError as exc:  # what the shipped tools leave does not load (a dropped tool was needed)
        result.error = f"the blueprint with the custom tools that passed does not load: {exc}"
    return result


async def _gather_all(coros: list[Coroutine[Any, Any, T]]) -> list[T]:
    """Await every coroutine to its end, then raise the first failure (a stop first): no request outlives a stop.

    With a plain ``gather``, the siblings of a coroutine that raised would go on sending
    requests after the build stopped and its metrics were written.
    """
    from envsynth.llmbuild.client import BuildStop

    results = await asyncio.gather(*coros, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        raise next((f for f in failures if isinstance(f, BuildStop)), failures[0])
    return results  # type: ignore[return-value]


def domain_metrics(result: DomainResult, roles: dict[str, dict[str, int]], seconds: float) -> dict[str, Any]:
    """The operational metrics of one domain, as stored in its app's provenance."""
    designed = len(result.tools)
    shipped = sum(o.passed for o in result.tools)
    total = _totals(roles)
    return {
        "keyword": result.keyword,
        "wall_seconds": round(seconds, 3),
        "roles": roles,
        "calls": total.get("calls", 0),
        "cache_hits": total.get("cache_hits", 0),
        "tokens": total.get("total_tokens", 0),
        "custom_tools": {"designed": designed, "shipped": shipped, "success_rate": round(shipped / designed, 4) if designed else 1.0},
        "design_rounds": len(result.design_rounds),
        "design_problems": [len(p) for p in result.design_rounds],
        "design_problems_left": result.design_rounds[-1] if result.design_rounds else [],
        "debug_rounds": {o.name: o.debug_rounds for o in result.tools},
        "tools_dropped": {o.name: o.dropped for o in result.tools if o.dropped},
        "spec_amendments": {o.name: o.amendments for o in result.tools if o.amendments},
        "tools": {o.name: o.metrics() for o in result.tools},
        "error": result.error,
    }


@dataclass
class LLMBuildResult:
    """What :func:`build_llm_corpus` did: per-domain results, the corpus summary and the metrics written."""

    domains: list[DomainResult]
    corpus: Any = None
    metrics: dict[str, Any] = field(default_factory=dict)


def make_client(
    chat: ChatModel,
    out: Path,
    *,
    cache_dir: str | Path | None = None,
    max_tokens_total: int | None = None,
    structured: str = "auto",
    **options: Any,
) -> BuilderClient:
    """A builder client over ``chat`` with its cache in ``cache_dir`` (default ``out/.llm-cache``).

    ``options`` go to :class:`BuilderClient` (``context_tokens``, ``max_output_tokens``,
    ``temperature``, ``seed``...).
    """
    return BuilderClient(
        chat,
        cache_dir=Path(cache_dir) if cache_dir is not None else out / CACHE_DIR,
        max_tokens_total=max_tokens_total,
        structured=structured,  # type: ignore[arg-type]
        **options,
    )


class LLMBuilder:
    """Runs the pipeline (see the module docstring) over one client, one event loop and one output folder.

    It is a :class:`~envsynth.pipeline.Builder`: :meth:`design` makes the blueprints, then
    :meth:`build` runs the one pipeline with this builder's stages (:meth:`seal` before each
    app folder is written, :meth:`task_stage` over each admitted task index). Use as a context
    manager; :meth:`design` then :meth:`build`, then
    :meth:`write_metrics` (or :func:`build_llm_corpus` for all three).
    """

    def __init__(
        self,
        client: BuilderClient,
        out: str | Path,
        *,
        seed: int = 0,
        rounds: int = DEFAULT_ROUNDS,
        tau: float = 0.5,
        rewrite: bool = True,
        gate: bool = True,
        design_rounds: int = DESIGN_ROUNDS,
    ) -> None:
        """``rounds``: debug rounds per custom tool; ``design_rounds``: the designer's replies checked at most (``--max-rounds``)."""
        if design_rounds < 1:
            raise ConfigError(f"must be at least 1, got {design_rounds}", "max_rounds")
        self.client = client
        self.design_rounds = design_rounds
        self.out = Path(out)
        self.seed = seed
        self.rounds = rounds
        self.tau = tau
        self.rewrite = rewrite
        self.gate = gate
        self.runner = LoopRunner()
        self.results: list[DomainResult] = []
        self.stage: Any = None
        self._progress: ProgressFn = lambda _k, _s: None
        self.run_id = uuid.uuid4().hex[:12]
        self.started = _now()

    def __enter__(self) -> LLMBuilder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.runner.close()

    name = "llm"
    builder = "llm"
    """The provenance ``builder`` of the apps it seals."""

    def design(
        self, domains: list[str], descriptions: dict[str, str] | None = None, progress: ProgressFn | None = None
    ) -> list[DomainResult]:
        """Stages 1 and 2 for each keyword: a blueprint with its debugged custom tools; a failed domain is recorded, the others go on.

        Raises:
            envsynth.llmbuild.client.BudgetExceeded: the token budget is spent.
            ValueError: no domains, or two domains designed with one app name.
        """
        if not domains:
            raise ConfigError("no domains to build: give at least one domain keyword")
        self.out.mkdir(parents=True, exist_ok=True)
        self._progress = progress or (lambda _k, _s: None)
        for keyword in domains:
            started = time.perf_counter()
            before = self.client.metrics()
            self._progress(keyword, "design")
            result = self.runner.run(
                synthesize_domain(
                    self.client,
                    keyword,
                    (descriptions or {}).get(keyword),
                    rounds=self.rounds,
                    seed=self.seed,
                    design_rounds=self.design_rounds,
                )
            )
            result.metrics = domain_metrics(result, _role_delta(before, self.client.metrics()), time.perf_counter() - started)
            result.metrics["dependencies"] = {"kept": [], "rejected": []}
            if result.error:
                self._progress(keyword, "failed")
            self.results.append(result)
        names = [b.name for b in self.blueprints]
        if len(set(names)) != len(names):
            raise ValueError(f"two domains were designed with one app name: {sorted({n for n in names if names.count(n) > 1})}")
        return self.results

    @property
    def blueprints(self) -> list[Blueprint]:
        """The blueprints of the domains that produced an app (or, before the build, a design)."""
        return [r.blueprint for r in self.results if r.blueprint is not None and r.error is None]

    @property
    def app_stage(self) -> LLMBuilder:
        """This builder: :meth:`seal` proposes dependencies and records the metrics in each app."""
        return self

    def seal(self, app: App, graph: ToolGraph) -> tuple[ToolGraph, dict[str, Any]]:
        """Stages 4 and 5 for a tested app: the dependency edges that execute, and the metrics as provenance.

        A rebuild from cached replies keeps the metrics of the run that paid for them.
        """
        from envsynth.llmbuild.dependency import propose_dependencies

        result = next(r for r in self.results if r.blueprint is not None and r.blueprint.name == app.name)
        first = _recorded_metrics(self.out / APPS_DIR / app.name, result.blueprint)  # type: ignore[arg-type]
        started = time.perf_counter()
        before = self.client.metrics()
        self._progress(result.keyword, "dependencies")
        deps = self.runner.run(propose_dependencies(self.client, app, graph, seed=self.seed))
        roles = _role_delta(before, self.client.metrics())
        result.metrics = domain_metrics(
            result, _role_sum(result.metrics["roles"], roles), result.metrics["wall_seconds"] + time.perf_counter() - started
        )
        result.metrics["dependencies"] = {"kept": deps.kept, "rejected": deps.rejected, "groups": deps.groups, "failures": deps.failures}
        return deps.graph, {"llm_builder": first or result.metrics}

    def task_stage(self) -> TaskStage:
        """The task writer and gating, applied to every admitted task index."""
        from envsynth.llmbuild.taskstage import TaskStage

        self.stage = TaskStage(self.client, self.runner.run, tau=self.tau, rewrite=self.rewrite, gate=self.gate)
        return self.stage

    def build(
        self,
        *,
        apps: int | None = None,
        tasks_per_app: int = 0,
        states: int = 1,
        distractors: int = 0,
        progress: Any = None,
        difficulty: str | None = None,
    ) -> CorpusSummary:
        """Stage 3 and on, through the one pipeline: the designed apps, sealed, and (``tasks_per_app`` > 0) their corpus.

        Returns:
            The :class:`~envsynth.corpus.CorpusSummary`.

        Raises:
            ValueError: no domain was designed.
            envsynth.llmbuild.client.BudgetExceeded: the token budget is spent (rerun to resume).
        """
        from envsynth.pipeline import BuildConfig, build

        if not self.blueprints:
            raise ValueError("no domain was designed, so there is no app to build")
        config = BuildConfig(
            out=self.out,
            seed=self.seed,
            apps=apps,
            tasks_per_app=tasks_per_app,
            states=states,
            distractors=distractors,
            difficulty=difficulty,
        )
        summary = build(config, self, progress=progress)
        for record in summary.manifest.apps:
            result = next(r for r in self.results if r.blueprint is not None and r.blueprint.name == record.name)
            if record.error:
                result.error = f"the app failed its procedural tests: {record.error}"
                result.metrics["error"] = result.error
            elif not result.metrics["dependencies"]["kept"] and not result.metrics["dependencies"]["rejected"]:
                recorded = _recorded_metrics(self.out / APPS_DIR / record.name, result.blueprint)  # type: ignore[arg-type]
                if recorded is not None:  # the app was reused as it was built: its dependencies stand
                    result.metrics["dependencies"] = recorded.get("dependencies", result.metrics["dependencies"])
            self._progress(result.keyword, "failed" if result.error else "done")
        return summary

    def write_metrics(self, status: str | None = None) -> dict[str, Any]:
        """Write ``out/llm_build.json`` and return it.

        It holds this run's metrics (per domain, per role, the task stage; ``client`` has
        ``scope: "this run"``: cached replies are ``cache_hits`` and move no other counter)
        and every run's record: ``runs`` (each run's calls, requests and tokens per role, and how it ended,
        the earlier runs read back from the file) and ``cumulative`` (their sums: what the
        endpoint was sent over every run). Writing again in the same run replaces its record.

        Args:
            status: how the run ended (default: ``stopped: <why>`` when the client stopped, else ``done``).
        """
        from envsynth.files import write_atomic

        client = self.client.metrics()
        if status is None:
            status = f"stopped: {client['stopped']}" if client["stopped"] else "done"
        run = {
            "run": self.run_id,
            "started": self.started,
            "ended": _now(),
            "status": status,
            "model": self.client.chat.model,
            "roles": client["roles"],
            "total": client["total"],
        }
        runs = [r for r in _earlier_runs(self.out / METRICS_FILE) if r.get("run") != self.run_id] + [run]
        metrics = {
            "model": self.client.chat.model,
            "domains": {r.keyword: r.metrics for r in self.results},
            "app_names": {r.keyword: r.blueprint.name for r in self.results if r.blueprint is not None and r.error is None},
            "generation_success_rate": round(sum(r.error is None for r in self.results) / len(self.results), 4) if self.results else None,
            "client": {**client, "scope": "this run"},
            "task_stage": self.stage.metrics() if self.stage is not None else None,
            "runs": runs,
            "cumulative": _cumulative(runs),
        }
        write_atomic(self.out / METRICS_FILE, (json.dumps(metrics, indent=2, sort_keys=True, default=str) + "\n").encode())
        return metrics


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _earlier_runs(path: Path) -> list[dict[str, Any]]:
    """The run records of an existing ``llm_build.json`` (a file from before run records: one run)."""
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s): the totals start again from this run", path, exc)
        return []
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("runs"), list):
        return [r for r in data["runs"] if isinstance(r, dict)]
    client = data.get("client")
    if isinstance(client, dict) and isinstance(client.get("roles"), dict):
        return [{"run": "earlier", "status": "recorded before run records", "roles": client["roles"], "total": client.get("total", {})}]
    return []


def _cumulative(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per role and in total, every counter summed over ``runs``."""
    roles: dict[str, dict[str, int]] = {}
    for run in runs:
        for role, stats in (run.get("roles") or {}).items():
            mine = roles.setdefault(role, {})
            for k, v in stats.items():
                if isinstance(v, int):
                    mine[k] = mine.get(k, 0) + v
    return {"scope": "every run", "runs": len(runs), "roles": dict(sorted(roles.items())), "total": _totals(roles)}


def build_llm_corpus(
    out: str | Path,
    domains: list[str],
    client: BuilderClient,
    *,
    descriptions: dict[str, str] | None = None,
    tasks_per_app: int = 0,
    states: int = 1,
    distractors: int = 0,
    seed: int = 0,
    rounds: int = DEFAULT_ROUNDS,
    tau: float = 0.5,
    rewrite: bool = True,
    gate: bool = True,
    design_rounds: int = DESIGN_ROUNDS,
) -> LLMBuildResult:
    """Apps for ``domains``, then (``tasks_per_app`` > 0) a corpus over them, then the metrics file.

    ``llm_build.json`` is written however the build ends (with how it ended).

    Raises:
        envsynth.llmbuild.client.BuildStop: the token budget is spent, or the endpoint is
            down (rerun: the replies so far are cached).
        ValueError: no domains, two domains with one app name, or tasks asked and no app built.
    """
    with LLMBuilder(client, out, seed=seed, rounds=rounds, tau=tau, rewrite=rewrite, gate=gate, design_rounds=design_rounds) as builder:
        status = None
        try:
            results = builder.design(domains, descriptions)
            summary = None
            if builder.blueprints or tasks_per_app:
                summary = builder.build(tasks_per_app=tasks_per_app, states=states, distractors=distractors)
            if not tasks_per_app:
                summary = None  # apps only: the caller asked for no corpus summary
        except BaseException as exc:
            status = ended(exc, client)
            raise
        finally:
            metrics = builder.write_metrics(status)
    return LLMBuildResult(results, summary, metrics)


def ended(exc: BaseException, client: BuilderClient) -> str:
    """How a run that raised ``exc`` ended, for its record in ``llm_build.json``."""
    if client.stopped is not None:
        return f"stopped: {client.stopped}"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"failed: {type(exc).__name__}: {exc}"


def _recorded_metrics(app_dir: Path, bp: Blueprint) -> dict[str, Any] | None:
    """The LLM metrics already in ``app_dir/app.json`` when it holds an app of the same blueprint."""
    from envsynth.compiler.compile import blueprint_data, canonical_json, sha256

    path = app_dir / "app.json"
    if not path.is_file():
        return None
    try:
        prov = json.loads(path.read_text(encoding="utf-8")).get("provenance", {})
    except ValueError:
        return None
    same = prov.get("blueprint_hash") == sha256(canonical_json(blueprint_data(bp)))
    return prov.get("llm_builder") if same else None
