"""``envsynth plan suggest``: the composition (A, T, S, D) the fitted law scores best for a budget."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from envsynth.errors import ConfigError
from envsynth.plan.fit import FORMAT, PlanError
from envsynth.plan.law import Law

MAX_DISTRACTORS = 4
"""The deepest distractor level envsynth builds."""


def read_fit(path: str | Path) -> dict[str, Any]:
    """The fit document of ``path`` (see :func:`envsynth.plan.fit.fit_results`).

    Raises:
        PlanError: a missing, unreadable or foreign file.
    """
    p = Path(path)
    if not p.is_file():
        raise PlanError(f"no fit file at {p} (write one with envsynth plan fit RESULTS.csv --out {p})")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise PlanError(f"{p}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise PlanError(f"{p}: not a fit file of envsynth plan fit")
    return doc


def suggest(fit: dict[str, Any], budget: int, catalogue: int, top: int = 5) -> dict[str, Any]:
    """Rank every whole composition the catalogue can supply for ``budget`` task records by the law's score.

    A runs from 1 to the catalogue's domains, S and D over the range the fit saw (D at most
    :data:`MAX_DISTRACTORS`), T = budget // (A * S) (at least 1), compute = the budget (the
    fit's compute unit is task records A*T*S unless its results said otherwise).

    Returns:
        ``best`` and ``alternatives`` (apps, tasks_per_app, states, distractors, records,
        predicted score, build command), ``budget``, ``extrapolated`` (the budget lies outside
        the compute the fit saw) and the bounds used.

    Raises:
        ConfigError: ``budget`` is too small for any composition (``option`` ``budget``).
    """
    law = Law(tuple(float(x) for x in fit["law"]["params"]))
    bounds = fit["bounds"]
    s_lo, s_hi = int(bounds["states"][0]), int(bounds["states"][1])
    d_lo, d_hi = int(bounds["distractors"][0]), min(int(bounds["distractors"][1]), MAX_DISTRACTORS)
    a_hi = min(catalogue, max(int(bounds["apps"][1]), 1))
    ranked = []
    for a in range(1, a_hi + 1):
        for s in range(s_lo, s_hi + 1):
            t = budget // (a * s)
            if t < 1:
                continue
            for d in range(d_lo, d_hi + 1):
                score = law.predict(a, s, d, float(budget))
                ranked.append(
                    {"apps": a, "tasks_per_app": t, "states": s, "distractors": d, "records": a * t * s, "predicted_score": round(score, 4)}
                )
    if not ranked:
        raise ConfigError(f"{budget} is too small: no composition has a task per app", "budget")
    ranked.sort(key=lambda r: (-r["predicted_score"], -r["records"], r["apps"], r["states"], r["distractors"]))
    for r in ranked[:top]:
        r["command"] = (
            f"envsynth build corpus/ --apps {r['apps']} --tasks-per-app {r['tasks_per_app']} --states {r['states']} --distractors {r['distractors']}"
        )
    lo, hi = bounds["compute"]
    return {
        "budget": budget,
        "best": ranked[0],
        "alternatives": ranked[1:top],
        "extrapolated": not lo <= budget <= hi,
        "searched": {"apps": [1, a_hi], "states": [s_lo, s_hi], "distractors": [d_lo, d_hi], "compositions": len(ranked)},
    }
