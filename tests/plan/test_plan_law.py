"""The planner on synthetic results drawn from a known law plus noise (never from real models).

The generating law is not the fitted form: a saturating power law in effective compute,
``s = 0.9 * (1 - exp(-sqrt(C * eff / 400)))``, where the composition's efficiency
``eff = exp(-(ln A - ln 4)^2 / 1.5 - (ln S - ln 2)^2 / 0.8 - (D - 2)^2 / 6)`` is best at
A = 4 apps, S = 2 states, D = 2, at every compute.
"""

from __future__ import annotations

import math
import random

from envsynth.plan import Point, fit_results, grid, split_by_compute, suggest

OPTIMUM = {"apps": 4, "states": 2, "distractors": 2}


def true_score(a: int, s: int, d: int, compute: float) -> float:
    eff = math.exp(-((math.log(a) - math.log(4)) ** 2) / 1.5 - (math.log(s) - math.log(2)) ** 2 / 0.8 - (d - 2) ** 2 / 6)
    return 0.9 * (1 - math.exp(-math.sqrt(compute * eff / 400)))


def synthetic_runs(seed: int, noise: float = 0.01) -> list[Point]:
    rng = random.Random(seed)
    runs = []
    for spec in grid(budget=4000, catalogue=8, points=64, seed=seed):
        a, t, s, d = spec["apps"], spec["tasks_per_app"], spec["states"], spec["distractors"]
        score = true_score(a, s, d, a * t * s) + rng.gauss(0, noise)
        runs.append(Point(a, t, s, d, float(a * t * s), min(max(score, 0.0), 1.0)))
    return runs


def test_fit_recovers_the_generating_optimum() -> None:
    for seed in range(3):
        fit = fit_results(synthetic_runs(seed))
        best = fit["optimum"]
        assert round(math.log2(best["apps"])) == 2, (seed, best)
        assert round(best["states"]) == OPTIMUM["states"], (seed, best)
        assert round(best["distractors"]) == OPTIMUM["distractors"], (seed, best)


def test_law_beats_the_count_only_baseline_on_held_out_compute() -> None:
    for seed in range(3):
        runs = synthetic_runs(seed)
        fit = fit_results(runs)
        _, held = split_by_compute(runs)
        assert fit["held_out"] == len(held) == 16
        assert min(p.compute for p in held) >= max(p.compute for p in runs if p not in held)
        assert fit["law"]["mae_held_out"] < fit["baseline"]["mae_held_out"] / 2, fit


def test_suggest_picks_the_optimum_within_the_catalogue() -> None:
    fit = fit_results(synthetic_runs(0))
    out = suggest(fit, budget=4000, catalogue=8)
    best = out["best"]
    assert (best["states"], best["distractors"]) == (OPTIMUM["states"], OPTIMUM["distractors"]), out
    assert best["apps"] in (3, 4, 5), out
    assert best["tasks_per_app"] == 4000 // (best["apps"] * best["states"])
    assert true_score(best["apps"], best["states"], best["distractors"], 4000) >= 0.97 * true_score(4, 2, 2, 4000)
    small = suggest(fit, budget=4000, catalogue=2)  # a catalogue of two domains cannot supply four apps
    assert small["best"]["apps"] <= 2
    assert not out["extrapolated"] and suggest(fit, budget=40_000, catalogue=8)["extrapolated"]
