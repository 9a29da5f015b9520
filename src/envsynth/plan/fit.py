"""``envsynth plan fit``: read a sweep's results, fit both laws on the lower 75% of compute, score them on the top 25%."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envsynth.errors import EnvsynthError
from envsynth.plan.law import BASELINE_FEATURES, FEATURES, Point, fit_baseline, fit_law

COLUMNS = ("apps", "tasks_per_app", "states", "distractors", "score")
"""Columns a results file must have; ``compute`` is optional (default: the corpus's task records A*T*S)."""
HOLDOUT = 0.25
"""The share of runs, those of the largest compute, held out to score the fits."""
FORMAT = "envsynth-plan-fit"


class PlanError(EnvsynthError, ValueError):
    """A results file or fit file that cannot be used (the message names the file, row and column)."""


def _number(path: Path, line: int, row: dict[str, str], col: str, kind: type) -> Any:
    raw = (row.get(col) or "").strip()
    try:
        value = kind(float(raw)) if kind is int else float(raw)
    except ValueError:
        raise PlanError(f"{path}:{line}: {col}: {raw!r} is not a number") from None
    if kind is int and float(raw) != value:
        raise PlanError(f"{path}:{line}: {col}: {raw!r} is not a whole number")
    return value


def read_results(path: str | Path) -> list[Point]:
    """The runs of a results CSV (one row per trained model; ``score`` normalised to 0..1).

    Raises:
        PlanError: a missing file or column, a value that is not a number or out of range.
    """
    p = Path(path)
    if not p.is_file():
        raise PlanError(f"no results file at {p}")
    with p.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise PlanError(f"{p}: missing column(s) {', '.join(missing)} (need {', '.join(COLUMNS)}, optional compute)")
        points = []
        for line, row in enumerate(reader, start=2):
            a, t, s, d = (_number(p, line, row, c, int) for c in COLUMNS[:4])
            score = _number(p, line, row, "score", float)
            compute = _number(p, line, row, "compute", float) if (row.get("compute") or "").strip() else float(a * t * s)
            if min(a, t, s) < 1 or d < 0 or compute <= 0:
                raise PlanError(f"{p}:{line}: apps, tasks_per_app, states and compute must be positive, distractors >= 0")
            if not 0.0 <= score <= 1.0:
                raise PlanError(f"{p}:{line}: score: {score} is not normalised to 0..1")
            points.append(Point(a, t, s, d, compute, score))
    return points


def split_by_compute(points: Sequence[Point], holdout: float = HOLDOUT) -> tuple[list[Point], list[Point]]:
    """(fit runs, held-out runs): the ``holdout`` share of runs with the largest compute is held out."""
    ranked = sorted(points, key=lambda p: (p.compute, p.records, p.apps, p.states, p.distractors))
    n_out = max(1, math.ceil(len(ranked) * holdout))
    return ranked[:-n_out], ranked[-n_out:]


def _mae(pred: Sequence[float], points: Sequence[Point]) -> float:
    return sum(abs(a - p.score) for a, p in zip(pred, points)) / len(points)


def fit_results(points: Sequence[Point]) -> dict[str, Any]:
    """Fit both laws on the runs below the top 25% of compute and report their mean absolute errors.

    Returns:
        The fit document (``envsynth plan fit --out FIT.json``): ``law`` and ``baseline`` (terms,
        parameters, MAE on the fitted runs and on the held-out runs), ``runs``, ``held_out``,
        ``bounds`` (the range of A, S, D, compute seen) and ``optimum`` (the law's best A, S, D at
        the largest compute seen, within those bounds).

    Raises:
        PlanError: too few runs or runs that do not vary enough to fit.
    """
    train, test = split_by_compute(points)
    try:
        law, base = fit_law(train), fit_baseline(train)
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    bounds = {
        "apps": (min(p.apps for p in points), max(p.apps for p in points)),
        "states": (min(p.states for p in points), max(p.states for p in points)),
        "distractors": (min(p.distractors for p in points), max(p.distractors for p in points)),
        "compute": (min(p.compute for p in points), max(p.compute for p in points)),
    }
    law_mae = (_mae([law.predict(p.apps, p.states, p.distractors, p.compute) for p in s], s) for s in (train, test))
    base_mae = (_mae([base.predict(p.records) for p in s], s) for s in (train, test))
    best = law.optimum(bounds["compute"][1], bounds)
    return {
        "format": FORMAT,
        "version": 1,
        "runs": len(points),
        "held_out": len(test),
        "held_out_compute_from": test[0].compute,
        "law": {
            "form": "logit(score) = " + " + ".join(f"t[{i}]*{f}" for i, f in enumerate(FEATURES)),
            "terms": list(FEATURES),
            "params": list(law.params),
            "mae_fit": next(law_mae),
            "mae_held_out": next(law_mae),
        },
        "baseline": {
            "form": "logit(score) = b[0] + b[1]*ln(A*T*S)",
            "terms": list(BASELINE_FEATURES),
            "params": list(base.params),
            "mae_fit": next(base_mae),
            "mae_held_out": next(base_mae),
        },
        "bounds": {k: list(v) for k, v in bounds.items()},
        "optimum": {"compute": bounds["compute"][1], **best},
    }
