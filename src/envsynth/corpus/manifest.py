"""``corpus.json``: what a corpus holds, how it was composed, and how admission went.

It carries no clock time, so the same build gives the same bytes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field

from envsynth.corpus.app_tasks import AppJob, AppOutcome
from envsynth.corpus.layout import APPS_DIR, FORMAT, FORMAT_VERSION, TASKS_DIR, shard_name


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Composition(_Model):
    """SynthAPI's corpus coordinates: apps A, tasks per app T, states per task S, distractor depth D."""

    apps: int
    tasks_per_app: int
    states: int
    distractors: int
    difficulty: dict[str, float] | None = Field(None, exclude_if=lambda v: v is None)
    """The tier shares ``--difficulty`` asked for (None: tiers as synthesized)."""


class AppRecord(_Model):
    """One app of the corpus and its admission numbers.

    Attributes:
        admitted: task indexes admitted (each gives ``states`` task records).
        records: task records in the shards.
        attempts: task indexes attempted.
        budget: the most task indexes the app may attempt.
        exhausted: the budget ran out before ``tasks_per_app`` were admitted.
        rejections: rejected attempts by reason.
        digest: SHA-256 of the app's task hashes, one a line, in shard order.
        error: why the app could not be built (it then has no tasks).
    """

    name: str
    index: int
    path: str
    tasks_path: str
    shards: list[str]
    admitted: int
    records: int
    attempts: int
    budget: int
    exhausted: bool
    rejections: dict[str, int]
    digest: str
    error: str | None = None


class Admission(_Model):
    """Admission over the whole corpus: attempts, admitted task indexes, their rate and rejection reasons."""

    attempts: int
    admitted: int
    rate: float
    rejections: dict[str, int]
    exhausted: list[str]
    failed_apps: list[str]


class CorpusManifest(_Model):
    """The manifest of a corpus folder (``corpus.json``)."""

    format: str = FORMAT
    version: int = FORMAT_VERSION
    envsynth_version: str
    seed: int
    composition: Composition
    shard_size: int
    apps: list[AppRecord]
    admission: Admission
    records: int
    digest: str


def digest(hashes: Iterable[str]) -> str:
    """SHA-256 of task hashes, one a line."""
    return hashlib.sha256("".join(f"{h}\n" for h in hashes).encode()).hexdigest()


def app_record(job: AppJob, outcome: AppOutcome) -> AppRecord:
    """The manifest entry of one app from its job and outcome."""
    shards = (outcome.records + job.shard_size - 1) // job.shard_size
    admitted = sum(a.admitted for a in outcome.attempts)
    reasons = Counter(a.reason for a in outcome.attempts if a.reason is not None)
    return AppRecord(
        name=job.name,
        index=job.index,
        path=f"{APPS_DIR}/{job.name}",
        tasks_path=f"{TASKS_DIR}/{job.name}",
        shards=[f"{TASKS_DIR}/{job.name}/{shard_name(n)}" for n in range(shards)],
        admitted=admitted,
        records=outcome.records,
        attempts=len(outcome.attempts),
        budget=job.budget,
        exhausted=outcome.error is None and admitted < job.tasks_per_app,
        rejections=dict(sorted(reasons.items())),
        digest=digest(h for a in outcome.attempts for h in a.hashes),
        error=outcome.error,
    )


def corpus_manifest(jobs: list[AppJob], outcomes: list[AppOutcome], composition: Composition, seed: int, shard_size: int) -> CorpusManifest:
    """The whole manifest, apps in job order."""
    from envsynth import __version__

    apps = [app_record(j, o) for j, o in zip(jobs, outcomes)]
    attempts = sum(a.attempts for a in apps)
    admitted = sum(a.admitted for a in apps)
    reasons: Counter[str] = Counter()
    for a in apps:
        reasons.update(a.rejections)
    return CorpusManifest(
        envsynth_version=__version__,
        seed=seed,
        composition=composition,
        shard_size=shard_size,
        apps=apps,
        admission=Admission(
            attempts=attempts,
            admitted=admitted,
            rate=round(admitted / attempts, 6) if attempts else 0.0,
            rejections=dict(sorted(reasons.items())),
            exhausted=[a.name for a in apps if a.exhausted],
            failed_apps=[a.name for a in apps if a.error],
        ),
        records=sum(a.records for a in apps),
        digest=digest(h for o in outcomes for a in o.attempts for h in a.hashes),
    )
