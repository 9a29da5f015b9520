"""A composition-aware scaling law for synthetic tool-use corpora, and a task-count-only baseline.

The composition-aware law (SynthAPI's idea: how a budget is split between apps A, tasks T,
states S and distractor depth D matters, not only how many tasks there are) predicts the
normalised score s in (0, 1) of a model trained on a corpus ``(A, T, S, D)`` with compute C::

    logit(s) = t0 + tC*ln C + tA*ln A + tAA*(ln A)^2 + tAC*ln A*ln C + tS*ln S + tSS*(ln S)^2 + tD*D + tDD*D^2

Why this form:

- ``logit`` keeps every prediction inside (0, 1) and saturates near 1 the way benchmark
  scores do; far below saturation ``logit(s) ~ ln s``, so ``tC*ln C`` is the usual power law
  ``s ~ C^tC`` in compute.
- T is not a separate term: at a fixed budget of task records ``A*T*S`` (what compute is
  spent on), ``ln T = ln(A*T*S) - ln A - ln S`` and the A and S terms carry it.
- Each composition axis gets a quadratic (in ``ln A``, ``ln S`` and ``D``): more apps give
  more diversity but fewer tasks per app, more states per task give robustness but fewer
  distinct tasks, deeper distractors make tasks harder but too deep ones only add noise. A
  concave quadratic has one optimum per axis, which is what a planner needs, and is the
  lowest-order form that can have one.
- ``tAC*ln A*ln C`` lets the best number of apps grow with compute (a small budget is better
  spent on few apps, a large one on many), so the suggestion depends on the budget.

The law is linear in its nine parameters, so it is fitted by (lightly ridge-regularised) least
squares on ``logit(s)``: no optimiser, no start values, the same answer on every machine.
The baseline is SynthAPI's task-count law, ``logit(s) = b0 + b1*ln(A*T*S)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

EPS = 1e-3
"""Scores are clipped to [EPS, 1 - EPS] before the logit."""
FEATURES = ("1", "lnC", "lnA", "lnA^2", "lnA*lnC", "lnS", "lnS^2", "D", "D^2")
"""The composition-aware law's terms, in parameter order."""
BASELINE_FEATURES = ("1", "ln(A*T*S)")


@dataclass(frozen=True)
class Point:
    """One training run: the corpus composition, the compute spent and the normalised score (0..1)."""

    apps: int
    tasks_per_app: int
    states: int
    distractors: int
    compute: float
    score: float

    @property
    def records(self) -> int:
        """Task records of the corpus: A * T * S."""
        return self.apps * self.tasks_per_app * self.states


def logit(p: float) -> float:
    """``ln(p / (1 - p))`` of ``p`` clipped to [EPS, 1 - EPS]."""
    p = min(max(p, EPS), 1 - EPS)
    return math.log(p / (1 - p))


def sigmoid(x: float) -> float:
    """The inverse of :func:`logit`."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def features(apps: float, states: float, distractors: float, compute: float) -> list[float]:
    """The law's terms (:data:`FEATURES`) of one composition at one compute."""
    la, ls, lc, d = math.log(apps), math.log(states), math.log(compute), float(distractors)
    return [1.0, lc, la, la * la, la * lc, ls, ls * ls, d, d * d]


def baseline_features(records: float) -> list[float]:
    """The count-only law's terms (:data:`BASELINE_FEATURES`)."""
    return [1.0, math.log(records)]


def solve_least_squares(rows: Sequence[Sequence[float]], targets: Sequence[float], ridge: float = 1e-6) -> list[float]:
    """The least-squares solution of ``rows @ x ~ targets`` (normal equations, Gauss-Jordan with partial pivoting).

    Raises:
        ValueError: fewer rows than unknowns, or a singular system (a term that never varies).
    """
    n = len(rows[0])
    if len(rows) < n:
        raise ValueError(f"{len(rows)} runs cannot fit {n} parameters: give at least {n} runs (envsynth plan grid)")
    m = [[sum(r[i] * r[j] for r in rows) + (ridge if i == j and i else 0.0) for j in range(n)] for i in range(n)]
    b = [sum(r[i] * t for r, t in zip(rows, targets)) for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda i: abs(m[i][col]))
        if abs(m[pivot][col]) < 1e-12:
            raise ValueError("the runs do not vary enough to fit the law (vary A, S, D and compute: envsynth plan grid)")
        m[col], m[pivot], b[col], b[pivot] = m[pivot], m[col], b[pivot], b[col]
        for i in range(n):
            if i != col and m[i][col]:
                f = m[i][col] / m[col][col]
                m[i] = [a - f * c for a, c in zip(m[i], m[col])]
                b[i] -= f * b[col]
    return [b[i] / m[i][i] for i in range(n)]


@dataclass(frozen=True)
class Law:
    """Fitted parameters of the composition-aware law (:data:`FEATURES` order)."""

    params: tuple[float, ...]

    def predict(self, apps: float, states: float, distractors: float, compute: float) -> float:
        """The predicted normalised score."""
        return sigmoid(sum(p * f for p, f in zip(self.params, features(apps, states, distractors, compute))))

    def optimum(self, compute: float, bounds: dict[str, tuple[float, float]]) -> dict[str, float]:
        """The continuous (A, S, D) that maximises the score at ``compute``, each clipped to ``bounds[axis]``.

        Each axis is a quadratic in its own variable (``ln A``, ``ln S``, ``D``), so its vertex is the
        optimum when the quadratic is concave; a convex or flat axis takes the better bound.
        """
        t = self.params
        lc = math.log(compute)
        axes = {
            "apps": (t[2] + t[4] * lc, t[3], math.log),
            "states": (t[5], t[6], math.log),
            "distractors": (t[7], t[8], float),
        }
        out: dict[str, float] = {}
        for name, (lin, quad, scale) in axes.items():
            lo, hi = (scale(v) for v in bounds[name])
            if quad < 0:
                x = min(max(-lin / (2 * quad), lo), hi)
            else:
                x = hi if lin * (hi - lo) + quad * (hi * hi - lo * lo) > 0 else lo
            out[name] = math.exp(x) if scale is math.log else x
        return out


@dataclass(frozen=True)
class Baseline:
    """Fitted parameters of the task-count-only law."""

    params: tuple[float, ...]

    def predict(self, records: float) -> float:
        return sigmoid(sum(p * f for p, f in zip(self.params, baseline_features(records))))


def fit_law(points: Sequence[Point]) -> Law:
    """Fit the composition-aware law to runs (least squares on ``logit(score)``)."""
    rows = [features(p.apps, p.states, p.distractors, p.compute) for p in points]
    return Law(tuple(solve_least_squares(rows, [logit(p.score) for p in points])))


def fit_baseline(points: Sequence[Point]) -> Baseline:
    """Fit the task-count-only law to runs."""
    rows = [baseline_features(p.records) for p in points]
    return Baseline(tuple(solve_least_squares(rows, [logit(p.score) for p in points], ridge=0.0)))
