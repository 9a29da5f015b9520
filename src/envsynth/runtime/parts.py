"""The composite reward: separate parts (state, answer, policy, communication, clarification) and the rule that scores them.

Each part is a check of its own, shown in the reward's breakdown:

- ``state``: the agent's effects on s0 equal the oracle's (every write, none extra);
- ``answer``: an information task's answer matches the expected one (see :mod:`envsynth.runtime.answers`);
- ``policy``: a policy task's forbidden call was not made (the rule of ``Task.policy``);
- ``communication``: with a user simulator, the answer reached the user in the conversation;
- ``clarification``: a must-ask task's user was asked (``ask_user``, or a message to a simulated user)
  before the first write.

A part that does not apply to a task (no answer asked, no policy rule, no simulated user, nothing to ask) is left
out. The :class:`ScoreRule` turns the parts into the score: ``all`` (the default) gives 1.0 when every
part passes, ``weighted`` the weighted share of the parts that pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

PartName = Literal["state", "answer", "policy", "communication", "clarification"]
PART_NAMES: tuple[PartName, ...] = ("state", "answer", "policy", "communication", "clarification")


@dataclass(frozen=True)
class Part:
    """One part of a reward: whether it passed and why, in a sentence."""

    name: PartName
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class ScoreRule:
    """How the parts make the score.

    Attributes:
        mode: ``all`` (1.0 when every part passes, else 0.0) or ``weighted`` (the sum of the
            weights of the parts that pass over the sum of the weights of the parts that apply).
        weights: a weight per part name (a part not named weighs 1.0); only read by ``weighted``.
    """

    mode: Literal["all", "weighted"] = "all"
    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in ("all", "weighted"):
            raise ValueError(f"score rule {self.mode!r}: use 'all' or 'weighted'")
        unknown = sorted(set(self.weights) - set(PART_NAMES))
        if unknown:
            raise ValueError(f"weight for {unknown[0]!r}: the parts are {', '.join(PART_NAMES)}")
        bad = [k for k, w in self.weights.items() if not isinstance(w, int | float) or w < 0 or w != w]
        if bad:
            raise ValueError(f"weight of {bad[0]!r} must be a number >= 0 (got {self.weights[bad[0]]!r})")

    def score(self, parts: Iterable[Part]) -> float:
        """The score of ``parts`` under this rule (1.0 for no parts: nothing was asked)."""
        parts = list(parts)
        if self.mode == "all" or not parts:
            return 1.0 if all(p.passed for p in parts) else 0.0
        total = sum(self.weights.get(p.name, 1.0) for p in parts)
        if total <= 0:
            return 1.0 if all(p.passed for p in parts) else 0.0
        return round(sum(self.weights.get(p.name, 1.0) for p in parts if p.passed) / total, 6)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, **({"weights": dict(self.weights)} if self.weights else {})}

    @classmethod
    def parse(cls, mode: str = "all", weights: str | None = None) -> ScoreRule:
        """A rule from CLI text: ``mode`` and ``weights`` as ``state=0.5,answer=0.3,policy=0.2``.

        Raises:
            ValueError: an unknown mode or part, or a weight that is not a number >= 0.
        """
        parsed: dict[str, float] = {}
        for item in (weights or "").split(","):
            if not item.strip():
                continue
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"weight {item.strip()!r}: write PART=NUMBER, e.g. state=0.6,answer=0.4")
            try:
                parsed[name.strip()] = float(value)
            except ValueError:
                raise ValueError(f"weight of {name.strip()!r} must be a number (got {value.strip()!r})") from None
        return cls(mode=mode, weights=parsed)  # type: ignore[arg-type]


ALL = ScoreRule()
"""The default rule: every part must pass."""


def forbidden_made(forbidden: Iterable[Any], calls: Iterable[tuple[str, Any]]) -> Any | None:
    """The first forbidden call (a :class:`~envsynth.tasks.model.Call`) among the successful ``calls``
    (``(tool, arguments)`` pairs), or None: same tool, and every argument the forbidden call names given
    the same value (other arguments may differ)."""
    made = [(t, a) for t, a in calls if isinstance(a, dict)]
    for f in forbidden:
        for tool, args in made:
            if tool == f.tool and all(k in args and str(args[k]) == str(v) for k, v in f.args.items()):
                return f
    return None


def policy_part(rule: str, forbidden: Iterable[Any], calls: Iterable[tuple[str, Any]]) -> Part:
    """The policy part: passed when none of the ``forbidden`` calls was made successfully."""
    hit = forbidden_made(forbidden, calls)
    if hit is None:
        return Part("policy", True, f"no call the policy forbids was made ({rule})")
    args = ", ".join(f"{k}={v!r}" for k, v in hit.args.items())
    return Part("policy", False, f"made {hit.tool}({args}), which the policy forbids: {rule}")


def clarification_part(facts: Iterable[str], asked: bool) -> Part:
    """The clarification part of a must-ask task (``facts``: what the request leaves out): passed when the agent asked
    the user before its first write."""
    needed = "; ".join(facts)
    if asked:
        return Part("clarification", True, f"the agent asked the user before writing ({needed})")
    return Part("clarification", False, f"the agent wrote before asking the user for what the request leaves out ({needed})")
