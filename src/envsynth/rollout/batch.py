"""Many episodes: k attempts per task, C at a time, written as JSONL, resumable."""

from __future__ import annotations

import asyncio
import json
import re
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict, Unpack

from envsynth.agents.base import Policy
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.errors import EnvsynthError
from envsynth.rollout.runner import run_episode
from envsynth.rollout.trajectory import RUN_CONFIG, TRAJECTORIES, Trajectory, TrajectoryWriter, read_trajectories, repair_tail
from envsynth.runtime.episode import short_repr
from envsynth.runtime.parts import ALL, ScoreRule
from envsynth.tasks.model import Task

if TYPE_CHECKING:
    from envsynth.agents.user import UserSimulator
    from envsynth.grading.judge import Judge
    from envsynth.sandbox import CodeSandbox
    from envsynth.scale.executor import Executor

PolicyFactory = Callable[[Task, int], Policy]
"""``(task, attempt) -> policy``: a fresh policy per episode (they may share a chat client)."""

UserFactory = Callable[[Task, int], "UserSimulator"]
"""``(task, attempt) -> user simulator``: a fresh simulator per episode."""

ProgressFn = Callable[[int, int, Trajectory], None]
"""``(done, total, trajectory)`` after each episode of this call (``total``: episodes to run)."""


class RunError(EnvsynthError, RuntimeError):
    """The run folder does not fit this run (another version of a task in it), or too many episodes failed."""


class BatchOptions(TypedDict, total=False):
    """The keyword options of :func:`run_batch` (and of :func:`arun_batch`, where their defaults are); ``out`` is required."""

    attempts: int
    concurrency: int
    out: Required[str | Path]
    progress: ProgressFn | None
    seed: int
    meta: dict[str, Any] | None
    rerun_errors: bool
    max_errors: int | None
    sandbox: CodeSandbox | None
    user_factory: UserFactory | None
    executor: Executor | None
    score_rule: ScoreRule
    judge: Judge | None


@dataclass
class BatchResult:
    """What one :func:`run_batch` call did.

    Attributes:
        run_dir: the run folder.
        written: episodes run and written now.
        skipped: (task, attempt) pairs already in the file.
        errors: episodes written now that ended in a model or agent failure.
    """

    run_dir: Path
    written: int
    skipped: int
    errors: int


def crashed_trajectory(task: Task, attempt: int, seed: int, exc: BaseException, seconds: float) -> Trajectory:
    """The record of an episode that raised (a factory, a malformed policy reply, a bug): score 0, ``error`` says what.

    ``stop_reason`` is ``episode_error``; ``error`` has ``kind`` ``crash``, ``source``
    ``episode`` and the last frames of the traceback in ``trace``.
    """
    trace = "".join(traceback.format_exception(exc)[-4:])[-4000:]
    return Trajectory(
        task_id=task.id,
        task_hash=task.hash,
        app=task.app,
        kind=task.kind,
        attempt=attempt,
        seed=seed,
        agent="",
        model="",
        messages=[],
        answer=None,
        stop_reason="episode_error",
        turns=0,
        tool_calls=[],
        reward={"score": 0.0, "passed": False, "breakdown": []},
        usage={},
        timings={"total": round(seconds, 6)},
        error={
            "type": type(exc).__name__,
            "kind": "crash",
            "status": None,
            "message": _short_text(exc),
            "source": "episode",
            "trace": trace,
        },
    )


def _short_text(exc: BaseException) -> str:
    """An exception's message, at most 2,000 characters (its type when it has none)."""
    return (str(exc) or type(exc).__name__)[:2000]


def write_trajectory(writer: TrajectoryWriter, traj: Trajectory) -> None:
    """Append ``traj``; what JSON in UTF-8 cannot carry is written in a form it can.

    A lone surrogate a model sent becomes U+FFFD and a value nested deeper than
    :data:`MAX_DEPTH` (an answer of nested lists) its shortened ``repr``.
    """
    try:
        writer.write(traj)
    except (UnicodeEncodeError, RecursionError):  # nothing was written: the line is made before the write
        writer.write(replace(traj, **{f.name: _scrub(getattr(traj, f.name), 0) for f in fields(traj)}))


MAX_DEPTH = 100
_SURROGATES = re.compile("[\ud800-\udfff]")


def _scrub(value: Any, depth: int) -> Any:
    """``value`` with lone surrogates replaced in every string and anything deeper than :data:`MAX_DEPTH` as its short repr."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if depth >= MAX_DEPTH and isinstance(value, dict | list | tuple):
        return short_repr(value)
    if isinstance(value, dict):
        return {_scrub(k, depth + 1): _scrub(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v, depth + 1) for v in value]
    return value


def _pending(path: Path, tasks: list[Task], attempts: int, rerun_errors: bool) -> tuple[list[tuple[Task, int]], int]:
    repair_tail(path)
    done: set[tuple[str, int]] = set()
    failed: set[tuple[str, int]] = set()
    hashes = {t.id: t.hash for t in tasks}
    for rec in read_trajectories(path):
        tid = rec.get("task_id")
        if tid in hashes and rec.get("task_hash") != hashes[tid]:
            raise RunError(
                f"{path}: task {tid} was run with another version of it (hash {str(rec.get('task_hash'))[:12]}); use a new run folder"
            )
        key = (tid, int(rec.get("attempt", -1)))
        done.add(key)
        if rec.get("error"):
            failed.add(key)
        else:
            failed.discard(key)
    if rerun_errors:
        done -= failed
    todo = [(t, a) for a in range(attempts) for t in tasks if (t.id, a) not in done]
    return todo, len(tasks) * attempts - len(todo)


async def arun_batch(
    corpus: Corpus | str | Path,
    policy_factory: PolicyFactory,
    tasks: Iterable[Task | str] | None = None,
    *,
    attempts: int = 1,
    concurrency: int = 8,
    out: str | Path,
    progress: ProgressFn | None = None,
    seed: int = 0,
    meta: dict[str, Any] | None = None,
    rerun_errors: bool = False,
    max_errors: int | None = None,
    sandbox: CodeSandbox | None = None,
    user_factory: UserFactory | None = None,
    executor: Executor | None = None,
    score_rule: ScoreRule = ALL,
    judge: Judge | None = None,
) -> BatchResult:
    """The async form of :func:`run_batch`."""
    if executor is not None and (sandbox is not None or user_factory is not None):
        raise ValueError("a spread run carries no sandbox or user simulator to its workers: run those in this process")
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    chosen = list(c.tasks) if tasks is None else [c.task(t) if isinstance(t, str) else t for t in tasks]  # each record read once
    run_dir = Path(out)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / TRAJECTORIES
    todo, skipped = _pending(path, chosen, attempts, rerun_errors)
    cfg = run_dir / RUN_CONFIG
    if not cfg.exists():
        info = {"corpus": str(c.path), "corpus_digest": c.manifest.digest, "attempts": attempts, "seed": seed, **(meta or {})}
        cfg.write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    if judge is not None:
        from envsynth.grading.judge import JUDGE_CACHE

        judge = judge.with_cache(run_dir / JUDGE_CACHE)
    writer = TrajectoryWriter(path)
    queue = iter(todo)
    counts = {"done": 0, "errors": 0}

    async def one(task: Task, attempt: int) -> Trajectory:
        t0 = time.perf_counter()
        try:
            if executor is not None:
                from envsynth.rollout.spread import spread_episode

                traj = await spread_episode(executor, c, task, attempt, seed + attempt, policy_factory, score_rule)
            else:
                user = user_factory(task, attempt) if user_factory is not None else None
                policy = policy_factory(task, attempt)
                traj = await run_episode(
                    c, task, policy, seed=seed + attempt, attempt=attempt, sandbox=sandbox, user=user, score_rule=score_rule
                )
        except Exception as exc:  # this episode only: recorded on its trajectory, the batch goes on
            return crashed_trajectory(task, attempt, seed + attempt, exc, time.perf_counter() - t0)
        if judge is not None:
            from envsynth.rollout.judging import judged

            traj = await judged(judge, task, traj)
        return traj

    async def worker() -> None:
        for task, attempt in queue:
            await asyncio.sleep(0)  # a point to be cancelled at, even for policies that never wait
            traj = await one(task, attempt)
            write_trajectory(writer, traj)
            counts["done"] += 1
            counts["errors"] += traj.error is not None
            if progress is not None:
                progress(counts["done"], len(todo), traj)
            if max_errors is not None and counts["errors"] >= max_errors and traj.error is not None:
                raise RunError(f"stopped after {counts['errors']} failed episodes; the last: {traj.error['message']}")

    try:
        async with asyncio.TaskGroup() as group:  # one failure cancels the other workers
            for _ in range(max(1, min(concurrency, len(todo)))):
                group.create_task(worker())
    except BaseExceptionGroup as eg:
        raise eg.exceptions[0] from None
    finally:
        writer.close()
    return BatchResult(run_dir, counts["done"], skipped, counts["errors"])


def run_batch(
    corpus: Corpus | str | Path,
    policy_factory: PolicyFactory,
    tasks: Iterable[Task | str] | None = None,
    **options: Unpack[BatchOptions],
) -> BatchResult:
    """Run ``attempts`` episodes of every task, ``concurrency`` at a time, into ``out/trajectories.jsonl``.

    Resumable: (task, attempt) pairs already in the file are skipped and a torn last line
    (an interrupted write) is cut first, so rerunning after a crash or Ctrl-C finishes the
    run with no duplicates. A model failure is recorded on its trajectory and the batch
    goes on; so is any exception of one episode (stop reason ``episode_error``, see
    :func:`crashed_trajectory`). Attempt ``a`` uses episode seed ``seed + a``.

    Args:
        corpus: a loaded corpus or its folder.
        policy_factory: ``(task, attempt) -> policy``, called once per episode.
        tasks: tasks or task ids (default: every task of the corpus).
        attempts: k, attempts per task.
        concurrency: episodes in flight at once (the chat client bounds requests separately).
        out: the run folder (created if missing); ``run.json`` records the first call's settings.
        progress: called after each episode.
        seed: the base episode seed.
        meta: extra settings to record in ``run.json`` (agent, model...).
        rerun_errors: also run again the pairs whose last record ended in a model or agent
            failure (the new record is appended; :func:`summarize` counts the last one).
        max_errors: stop (raise :class:`RunError`) once this many episodes of this call
            failed (a bad key or model name fails every episode); None: never stop.
        sandbox: code-acting mode (policies write Python blocks run on this sandbox's
            workers; the caller closes it); None: function calling.
        user_factory: ``(task, attempt) -> UserSimulator``, called once per episode: an LLM
            plays the user (see :mod:`envsynth.agents.user`); None: no user simulator.
        executor: run the episodes on it (a Ray cluster, see :mod:`envsynth.rollout.spread`;
            function calling, no user simulator, ``policy_factory`` picklable by it), still
            ``concurrency`` at a time; None: in this process.
        score_rule: how a reward's parts make its score (default: every part must pass).
        judge: an LLM judge (:class:`envsynth.grading.judge.Judge`) that grades every episode
            after the rule; its verdict is the reward, the rule's kept beside it. Verdicts are
            cached in ``out/judge_cache.jsonl``; an episode it gives no verdict on is labelled
            ``judge_error`` (left out of pass@k and exports, never scored 0). None: rule only.

    Raises:
        RunError: the folder holds trajectories of another version of a task, or
            ``max_errors`` episodes failed.
    """
    return asyncio.run(arun_batch(corpus, policy_factory, tasks, **options))
