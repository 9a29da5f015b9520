"""Task records: frozen, hashed data (behaviour lives in the synthesis and corpus modules).

A task is one instruction over one initial state s0 of one app, with its oracle
solution (a tool-call program), the ground truth it produces (expected effects on s0 and
the expected answer) and the tools visible to the agent (the expanded sub-graph H).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

TaskKind = Literal["action", "info", "mixed"]
Tier = Literal["easy", "medium", "hard"]
"""A task's difficulty tier (:mod:`envsynth.tasks.admission.difficulty` cuts the score into tiers)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def __copy__(self) -> Self:
        """A shallow copy (``model_copy`` makes one): ``BaseModel.__copy__`` for a model without extra or private
        values (none of these has any), without its generic copies."""
        if self.__pydantic_extra__ is not None or getattr(self, "__pydantic_private__", None) is not None:
            return super().__copy__()
        m = self.__class__.__new__(self.__class__)
        _set(m, "__dict__", self.__dict__.copy())
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_fields_set__", set(self.__pydantic_fields_set__))
        _set(m, "__pydantic_private__", None)
        return m


_set = object.__setattr__


class Ref(_Frozen):
    """An argument taken from the result of an earlier oracle call: ``result[step][field]``.

    With ``item``, a field of one item of a search's result: ``result[step]["items"][item][field]``
    (the row a lookup listed; left out of the JSON when None). :mod:`envsynth.tasks.planning.refs` resolves refs.
    """

    step: int
    field: str
    item: int | None = Field(None, exclude_if=lambda v: v is None)


class Call(_Frozen):
    """One oracle tool call. Argument values are literals or :class:`Ref` to earlier results."""

    tool: str
    args: dict[str, Any]
    refs: dict[str, Ref] = Field(default_factory=dict)


class UserProfile(_Frozen):
    """Who asks: a person of the app's world (a customer, a member) or a staff member."""

    name: str
    role: str
    email: str | None = None
    phone: str | None = None
    preferences: dict[str, Any] = Field(default_factory=dict)
    knows: list[str] = Field(default_factory=list)


class Scenario(_Frozen):
    """The task as a person brings it (tau2-style): who they are, why they ask, what they know and don't.

    Attributes:
        persona: who the user is, in a few words ("Dana Whitfield, a customer of Harbor Market").
        identity: what the app finds them by besides their name (an email, an account number).
        style: how they talk ("brief", "chatty"...), for a user simulator.
        reason: why they are asking, in their words, when the blueprint gives one.
        knows: what they can tell the agent: the rows they mean, as they describe them, and the values they give.
        unknowns: what they do not know and cannot tell (internal ids, the answer they want).
        request: the request in their own words (the task's instruction).
    """

    persona: str
    identity: list[str] = Field(default_factory=list)
    style: str = "brief"
    reason: str | None = None
    knows: list[str] = Field(default_factory=list)
    unknowns: list[str] = Field(default_factory=list)
    request: str


class Coordinates(_Frozen):
    """Where the task sits in the corpus composition (SynthAPI's A, T, S, D)."""

    app: int
    task: int
    state: int
    distractors: int


class TaskState(_Frozen):
    """The initial state s0 as rows: the core rows the chain needs, then distractors by depth."""

    core: dict[str, list[dict[str, Any]]]
    distractors: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    distractor_depth: dict[str, int] = Field(default_factory=dict, description="table -> rows added per depth level, as 'd1', 'd2'...")


class TaskPolicy(_Frozen):
    """How a task involves a rule of the app's policy that the agent must obey (docs/tasks.md, policy tasks).

    Attributes:
        rule: the rule (``policy.rules[].rule``).
        refusal: the user also asks for something the rule forbids; the correct outcome refuses it.
        forbidden: the calls the rule forbids (not in the oracle): an agent that makes them scores 0.
        request: the forbidden request in the user's words, as the instruction states it.
    """

    rule: str
    refusal: bool = False
    forbidden: list[Call] = Field(default_factory=list)
    request: str | None = None


class Task(_Frozen):
    """One verified task (admitted: the oracle scores 1, doing nothing scores 0)."""

    id: str
    app: str
    kind: TaskKind
    instruction: str
    user: UserProfile
    scenario: Scenario | None = None
    state: TaskState
    oracle: list[Call]
    oracle_program: str
    answer_step: int | None = None
    answer_field: str | None = None
    expected_answer: Any = None
    expected_effects: dict[str, Any]
    visible_tools: list[str]
    coordinates: Coordinates
    seed: int
    stats: dict[str, Any] = Field(default_factory=dict)
    policy: TaskPolicy | None = Field(None, exclude_if=lambda v: v is None, description="the policy rule the task involves, if any")
    clarify: list[str] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="the facts the request leaves out that the agent must ask the user for before writing (a must-ask task)",
    )
    difficulty: float = Field(0.0, description="the difficulty score (tasks/admission/difficulty.py): what makes the task hard, added up")
    tier: Tier = Field("easy", description="the score's tier: easy, medium or hard")
    constructs: list[str] = Field(default_factory=list, description="the constructs the task uses (lookup, computed, policy...)")
    hash: str = ""

    def content_hash(self) -> str:
        """SHA-256 of the record's JSON (fields in declaration order, row dicts in their order), hash left out.

        The bytes of ``model_dump_json(exclude={"hash"})``, taken from the serializer before they are decoded.
        """
        return hashlib.sha256(self.__pydantic_serializer__.to_json(self, exclude={"hash"})).hexdigest()

    def sealed(self) -> Task:
        """A copy carrying its content hash."""
        return self.model_copy(update={"hash": self.content_hash()})


RejectionReason = Literal[
    "no_chain",
    "not_instantiable",
    "tool_not_visible",
    "empty_answer",
    "no_effect",
    "id_in_instruction",
    "answer_in_question",
    "question_without_filter",
    "not_solvable",
    "target_not_describable",
    "description_ambiguous_in_state",
    "chain_broken_by_distractors",
    "oracle_fails",
    "verifier_passes_on_s0",
    "oracle_not_rewarded",
    "policy_forbids_oracle",
    "guessable",
    "requester_not_findable",
    "incoherent_state",
    "difficulty_quota",
    "synthesis_error",
]
"""Why a candidate task was not admitted: a closed set, checked when a :class:`Rejection` is made
(the stages of :mod:`envsynth.tasks` and ``synthesis_error``, a synthesis that raised)."""


class Rejection(_Frozen):
    """A candidate task that was not admitted, and why (``reason``: one of :data:`RejectionReason`)."""

    app: str
    coordinates: Coordinates
    reason: RejectionReason
    detail: str = ""
