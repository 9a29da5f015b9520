"""SynthAPI's composition planner: a sweep of corpora to train on, a composition-aware scaling law fitted to
its results (with a task-count-only baseline), and the composition it recommends for a budget.

See docs/plan.md. Usage::

    from envsynth.plan import grid, read_results, fit_results, suggest
    specs = grid(budget=4000, catalogue=8)                # corpora to build and train on
    fit = fit_results(read_results("results.csv"))      # both laws, held-out MAEs, the optimum
    suggest(fit, budget=8000, catalogue=8)["best"]      # apps, tasks_per_app, states, distractors
"""

from envsynth.plan.fit import PlanError, fit_results, read_results, split_by_compute
from envsynth.plan.grid import grid, to_csv
from envsynth.plan.law import Baseline, Law, Point, fit_baseline, fit_law
from envsynth.plan.suggest import read_fit, suggest

__all__ = [
    "Baseline",
    "Law",
    "PlanError",
    "Point",
    "fit_baseline",
    "fit_law",
    "fit_results",
    "grid",
    "read_fit",
    "read_results",
    "split_by_compute",
    "suggest",
    "to_csv",
]
