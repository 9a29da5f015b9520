"""``envsynth plan grid``: the corpora of a sweep over budgets and compositions, to train on and score."""

from __future__ import annotations

import csv
import io
import random
from typing import Any

from envsynth.errors import ConfigError

STATES = (1, 2, 4)
"""States per task S in a sweep."""
DISTRACTORS = (0, 2, 4)
"""Distractor depths D in a sweep (three levels: the law is quadratic in D)."""
BUDGET_SHARES = (0.125, 0.25, 0.5, 1.0)
"""Budgets of a sweep, as shares of ``--budget``: the fit needs a range of compute, and holds out the top."""
SPEC_COLUMNS = ("run", "apps", "tasks_per_app", "states", "distractors", "seed", "records", "command")


def app_levels(catalogue: int) -> list[int]:
    """Numbers of apps A in a sweep: 1, 2, 4, ... up to the catalogue's size (which is always included)."""
    out, a = [], 1
    while a < catalogue:
        out.append(a)
        a *= 2
    return [*out, catalogue]


def grid(budget: int, catalogue: int, points: int = 48, seed: int = 0) -> list[dict[str, Any]]:
    """The corpora of a sweep: ``points`` (A, T, S, D) compositions spread over four budgets up to ``budget``.

    Each budget (task records ``A*T*S``: 1/8, 1/4, 1/2 and all of ``budget``) gets an equal share of
    the points, drawn without repetition (seeded) from every (A, S, D) whose T is at least 1.

    Raises:
        ConfigError: a budget too small for a sweep, or too few points to fit the law (a ValueError).
        ValueError: a catalogue without domains.
    """
    if points < 12:
        raise ConfigError(
            f"{points} points are too few: the law has 9 parameters and a quarter of the runs is held out; give at least 12", "points"
        )
    if catalogue < 1:
        raise ValueError("the catalogue has no domain")
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    per_budget = [points // len(BUDGET_SHARES) + (i < points % len(BUDGET_SHARES)) for i in range(len(BUDGET_SHARES))]
    for share, n in zip(BUDGET_SHARES, per_budget):
        b = max(1, round(budget * share))
        combos = [(a, s, d) for a in app_levels(catalogue) for s in STATES for d in DISTRACTORS if b // (a * s) >= 1]
        if not combos:
            raise ConfigError(f"{budget} is too small for a sweep: give at least {round(1 / BUDGET_SHARES[0])}", "budget")
        for a, s, d in sorted(rng.sample(combos, min(n, len(combos)))):
            t = b // (a * s)
            name = f"run-{len(out):03d}"
            out.append(
                {
                    "run": name,
                    "apps": a,
                    "tasks_per_app": t,
                    "states": s,
                    "distractors": d,
                    "seed": seed,
                    "records": a * t * s,
                    "command": f"envsynth build corpora/{name} --apps {a} --tasks-per-app {t} --states {s} --distractors {d} --seed {seed}",
                }
            )
    return out


def to_csv(rows: list[dict[str, Any]]) -> str:
    """The sweep as CSV text (:data:`SPEC_COLUMNS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SPEC_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
