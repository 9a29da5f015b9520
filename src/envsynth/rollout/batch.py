"""Many episodes: k attempts per task, C at a time, written as JSONL, resumable."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.agents.base import Policy
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.rollout.episode import run_episode
from envsynth.rollout.trajectory import RUN_CONFIG, TRAJECTORIES, Trajectory, TrajectoryWriter, read_trajectories, repair_tail
from envsynth.tasks.model import Task

if TYPE_CHECKING:
    from envsynth.agents.user import UserSimulator
    from envsynth.sandbox import CodeSandbox

PolicyFactory = Callable[[Task, int], Policy]
"""``(task, attempt) -> policy``: a fresh policy per episode (they may share a chat client)."""

UserFactory = Callable[[Task, int], "UserSimulator"]
"""``(task, attempt) -> user simulator``: a fresh simulator per episode."""

ProgressFn = Callable[[int, int, Trajectory], None]
"""``(done, total, trajectory)`` after each episode of this call (``total``: episodes to run)."""


class RunError(RuntimeError):
    """The run folder does not fit this run (another version of a task in it), or too many episodes failed."""


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
) -> BatchResult:
    """The async form of :func:`run_batch`."""
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    chosen = c.tasks if tasks is None else [c.task(t) if isinstance(t, str) else t for t in tasks]
    run_dir = Path(out)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / TRAJECTORIES
    todo, skipped = _pending(path, chosen, attempts, rerun_errors)
    cfg = run_dir / RUN_CONFIG
    if not cfg.exists():
        info = {"corpus": str(c.path), "corpus_digest": c.manifest.digest, "attempts": attempts, "seed": seed, **(meta or {})}
        cfg.write_text(json.dumps(info, indent=2, default=str) + "\n", encoding="utf-8")
    writer = TrajectoryWriter(path)
    queue = iter(todo)
    counts = {"done": 0, "errors": 0}

    async def worker() -> None:
        for task, attempt in queue:
            await asyncio.sleep(0)  # a point to be cancelled at, even for policies that never wait
            user = user_factory(task, attempt) if user_factory is not None else None
            policy = policy_factory(task, attempt)
            traj = await run_episode(c, task, policy, seed=seed + attempt, attempt=attempt, sandbox=sandbox, user=user)
            writer.write(traj)
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
) -> BatchResult:
    """Run ``attempts`` episodes of every task, ``concurrency`` at a time, into ``out/trajectories.jsonl``.

    Resumable: (task, attempt) pairs already in the file are skipped and a torn last line
    (an interrupted write) is cut first, so rerunning after a crash or Ctrl-C finishes the
    run with no duplicates. A model failure is recorded on its trajectory and the batch
    goes on. Attempt ``a`` uses episode seed ``seed + a``.

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

    Raises:
        RunError: the folder holds trajectories of another version of a task, or
            ``max_errors`` episodes failed.
    """
    return asyncio.run(
        arun_batch(
            corpus,
            policy_factory,
            tasks,
            attempts=attempts,
            concurrency=concurrency,
            out=out,
            progress=progress,
            seed=seed,
            meta=meta,
            rerun_errors=rerun_errors,
            max_errors=max_errors,
            sandbox=sandbox,
            user_factory=user_factory,
        )
    )
