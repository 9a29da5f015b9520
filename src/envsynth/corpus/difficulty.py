"""Steering a corpus's mix of difficulty tiers: ``envsynth build --difficulty``.

A mix is the share of each tier (easy, medium, hard) among an app's T admitted task indexes.
Each app's quota of a tier is its share of T, rounded so the quotas add up to T (largest
remainder). An admitted task index (rated by state 0) whose tier has filled its quota is recorded
as a ``difficulty_quota`` rejection and the app moves on; the attempt budget grows by
:data:`STEERED_BUDGET` so that a rare tier can fill. Without a mix (the default), tasks are kept in
the mix the synthesis gives.

Like the rest of a build, this depends only on the task indexes before: a resumed or spread build
gives the same files.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from envsynth.tasks.admission.difficulty import TIERS

STEERED_BUDGET = 3
"""How many times the usual attempt budget an app with a mix may try."""

NAMED: dict[str, dict[str, float]] = {
    "easy": {"easy": 1.0},
    "medium": {"medium": 1.0},
    "hard": {"hard": 1.0},
    "mix": {"easy": 1 / 3, "medium": 1 / 3, "hard": 1 / 3},
}
"""The mixes ``--difficulty`` names; any other is written as shares: ``easy=1,medium=2,hard=1``."""


def parse_mix(text: str | None) -> dict[str, float] | None:
    """The shares of a ``--difficulty`` value (summing to 1, tiers in order, zero shares left out); None for none.

    Raises:
        ValueError: an unknown name or tier, a share that is not a number or is negative, or shares that add up to 0.
    """
    if text is None or not text.strip() or text.strip() == "natural":
        return None
    key = text.strip().lower()
    if key in NAMED:
        return dict(NAMED[key])
    shares: dict[str, float] = {}
    for part in key.split(","):
        tier, eq, value = part.partition("=")
        tier = tier.strip()
        if not eq or tier not in TIERS:
            raise ValueError(
                f"difficulty {text!r}: give easy, medium, hard, mix or natural, or shares such as 'easy=1,medium=2,hard=1' "
                f"(tiers: {', '.join(TIERS)})"
            )
        try:
            share = float(value)
        except ValueError:
            raise ValueError(f"difficulty {text!r}: the share of {tier} is not a number: {value.strip()!r}") from None
        if share < 0 or not math.isfinite(share):
            raise ValueError(f"difficulty {text!r}: the share of {tier} must be a finite number of 0 or more, got {value.strip()}")
        shares[tier] = shares.get(tier, 0.0) + share
    total = sum(shares.values())
    if total <= 0:
        raise ValueError(f"difficulty {text!r}: the shares add up to 0")
    return {t: shares[t] / total for t in TIERS if shares.get(t, 0) > 0}


def quotas(mix: Mapping[str, float], tasks_per_app: int) -> dict[str, int]:
    """Each tier's quota of ``tasks_per_app`` (largest remainder, ties to the easier tier; they add up to it)."""
    exact = {t: mix.get(t, 0.0) * tasks_per_app for t in TIERS}
    out = {t: math.floor(v) for t, v in exact.items()}
    left = tasks_per_app - sum(out.values())
    for t in sorted(TIERS, key=lambda t: (-(exact[t] - out[t]), TIERS.index(t)))[:left]:
        out[t] += 1
    return out


def full_tier(mix: Mapping[str, float] | None, tasks_per_app: int, tier: str, admitted: Iterable[str | None]) -> str | None:
    """Why an admitted task index of ``tier`` is not kept (its quota is full), or None to keep it.

    ``admitted``: the tiers of the app's task indexes kept so far.
    """
    if mix is None:
        return None
    quota = quotas(mix, tasks_per_app)[tier]
    have = sum(t == tier for t in admitted)
    if have < quota:
        return None
    return f"{tier} tasks are full ({have} of {quota})"
