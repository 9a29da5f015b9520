"""The optional LLM judge: a model reads what the rule-based grader reads and gives its own verdict.

Off by default (grading is rule-only and offline). With a judge, each finished episode is shown
to a chat model over any OpenAI-compatible endpoint as a :class:`JudgeCase`: the user's request,
the expected answer and effects, the actual effects and their differences, the agent's answer and
its final message. The model replies with a JSON verdict and a one-paragraph explanation
(:func:`parse_verdict` reads it leniently: a fenced block, extra prose around it, ``"pass"`` or
``true``). A reply that cannot be read is asked for again; a model that keeps failing (5xx, timeouts,
unreadable replies) gives a :class:`JudgeError`, never a score of 0: the run labels the episode
``judge_error`` and leaves it out of pass@k and exports.

Verdicts are cached by the content hash of the case and the judge's model (:class:`JudgeCache`, a
JSONL file in the run folder), so a resumed run or a regrade asks the model only about new cases.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.errors import EnvsynthError
from envsynth.llm.types import LLMError, message_text

if TYPE_CHECKING:
    from envsynth.llm.types import ChatModel

JUDGE_CACHE = "judge_cache.jsonl"

JUDGE_SYSTEM_PROMPT = """You grade whether an assistant did what a user asked, in a tool-using customer-service task.
You are given the user's request, the ground truth (the expected answer, if the request asks a question, \
and the expected changes to the database), what the assistant actually changed, the differences \
between the two, the assistant's answer and its final message.

Pass the episode when the assistant achieved the user's goal: the database changes are the expected \
ones (harmless differences in wording are fine, a different record, value or an extra change is not) \
and, when a question was asked, the answer states the expected value in any wording a person would \
accept. Fail it when a required change is missing or wrong, an unrequested change was made, or the \
answer is wrong, hedged between values, or missing.

Reply with one JSON object and nothing else:
{"verdict": "pass" or "fail", "explanation": "one short paragraph saying why"}"""

_RETRY_NUDGE = 'Your reply could not be read. Reply with only a JSON object: {"verdict": "pass" or "fail", "explanation": "..."}'


class JudgeError(EnvsynthError, RuntimeError):
    """The judge could not give a verdict (its model failed or kept replying unreadably); the episode is not scored 0 for it."""


@dataclass(frozen=True)
class JudgeCase:
    """What the judge sees of one episode: exactly what the rule-based grader reads.

    Attributes:
        request: the user's request (the task's instruction).
        expected_answer: the answer the request needs (None: it asks no question).
        expected_effects: the oracle's effects on s0 (``Effects.to_dict()``).
        actual_effects: the agent's effects on s0.
        differences: the rule's mismatch messages between the two (and about the answer).
        answer: the agent's ``complete_task`` answer (None: none given).
        final_message: the agent's last plain message (None: none).
        policy: the policy rule the task involves (None: none).
    """

    request: str
    expected_answer: Any
    expected_effects: dict[str, Any]
    actual_effects: dict[str, Any]
    differences: list[str]
    answer: Any
    final_message: str | None
    policy: str | None = None

    def digest(self, model: str) -> str:
        """The content hash of this case as judged by ``model`` (the cache key)."""
        data = json.dumps({"model": model, **asdict(self)}, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(data.encode("utf-8")).hexdigest()

    def prompt(self) -> str:
        """The user message that shows the case to the judge."""
        lines = [
            f"User's request:\n{self.request}",
            f"Policy the assistant must follow: {self.policy}" if self.policy else "",
            f"Expected answer: {json.dumps(self.expected_answer, ensure_ascii=False, default=str)}"
            if self.expected_answer is not None
            else "The request asks no question (no answer is expected).",
            f"Expected database changes: {json.dumps(self.expected_effects, ensure_ascii=False, default=str)}",
            f"Actual database changes: {json.dumps(self.actual_effects, ensure_ascii=False, default=str)}",
            "Differences found by the rule-based grader:\n" + ("\n".join(f"- {d}" for d in self.differences) or "- none"),
            f"Assistant's answer: {json.dumps(self.answer, ensure_ascii=False, default=str)}",
            f"Assistant's final message: {self.final_message or '(none)'}",
        ]
        return "\n\n".join(line for line in lines if line)


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's verdict on one episode.

    Attributes:
        passed: the judge passed the episode.
        explanation: its one-paragraph reason.
        model: the judge's model.
        cached: read from the cache (no model call made now).
    """

    passed: bool
    explanation: str
    model: str
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_LEAD = re.compile(r"^\W*(pass|fail)(?:ed)?\b\W*", re.I)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_PASS = {"pass", "passed", "correct", "yes", "true", "success", "succeeded", "1"}
_FAIL = {"fail", "failed", "incorrect", "no", "false", "failure", "wrong", "0"}


def parse_verdict(text: str) -> tuple[bool, str] | None:
    """``(passed, explanation)`` from a judge's reply, or None when no verdict can be read.

    Reads a JSON object (also inside a fenced block or among prose) with ``verdict`` (``pass`` /
    ``fail`` and their synonyms), or ``passed`` / ``correct`` as a boolean; failing that, a reply
    whose first line is ``PASS`` or ``FAIL``.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    for candidate in (*_FENCE.findall(text), text):
        for obj in _objects(candidate):
            verdict = _verdict_of(obj)
            if verdict is not None:
                why = obj.get("explanation") or obj.get("reason") or obj.get("rationale") or ""
                return verdict, " ".join(str(why).split())
    first, _, rest = text.strip().partition("\n")
    lead = _LEAD.match(first)
    if lead is None:
        return None
    why = " ".join((first[lead.end() :] + " " + rest).split()).lstrip("*:.- ")
    return lead.group(1).lower() == "pass", why


def _objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text``: the whole text, else each ``{...}`` span that parses."""
    out: list[dict[str, Any]] = []
    try:
        whole = json.loads(text)
        if isinstance(whole, dict):
            return [whole]
    except ValueError:
        pass
    for start in (m.start() for m in re.finditer(r"\{", text)):
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                try:
                    obj = json.loads(text[start : end + 1])
                except ValueError:
                    break
                if isinstance(obj, dict):
                    out.append(obj)
                break
    return out


def _verdict_of(obj: dict[str, Any]) -> bool | None:
    lowered = {str(k).lower(): v for k, v in obj.items()}
    for key in ("verdict", "passed", "pass", "correct", "result", "grade", "score"):
        if key not in lowered:
            continue
        v = lowered[key]
        if isinstance(v, bool):
            return v
        if isinstance(v, int | float):
            return v >= 1 if key == "score" else bool(v)
        word = str(v).strip().lower().strip(".!")
        if word in _PASS:
            return True
        if word in _FAIL:
            return False
    return None


class JudgeCache:
    """Verdicts by case digest, kept in a JSONL file (appended as verdicts come; a torn last line is skipped)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._hits: dict[str, tuple[bool, str]] = {}
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self._hits[rec["key"]] = (bool(rec["passed"]), str(rec.get("explanation", "")))
                except (ValueError, KeyError, TypeError):
                    continue  # a torn write: that verdict is asked for again

    def get(self, key: str) -> tuple[bool, str] | None:
        return self._hits.get(key)

    def put(self, key: str, passed: bool, explanation: str) -> None:
        self._hits[key] = (passed, explanation)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "passed": passed, "explanation": explanation}, ensure_ascii=False) + "\n")


class Judge:
    """An LLM judge over a chat model (any :class:`~envsynth.llm.types.ChatModel`, e.g. ``OpenAIChat``).

    Args:
        llm: the judge's chat model (its client retries 429s, 5xx and dropped connections).
        cache: verdicts already given (default: none kept; a run sets its folder's cache).
        attempts: requests per case at most when replies cannot be read or the model fails.
        system_prompt: the judge's instructions.
        **params: chat-completions parameters (default ``temperature=0``).
    """

    def __init__(
        self, llm: ChatModel, *, cache: JudgeCache | None = None, attempts: int = 3, system_prompt: str = JUDGE_SYSTEM_PROMPT, **params: Any
    ) -> None:
        if attempts < 1:
            raise ValueError("the judge needs at least one attempt per case")
        self.llm = llm
        self.cache = cache or JudgeCache(None)
        self.attempts = attempts
        self.system_prompt = system_prompt
        self.params = {"temperature": 0, **params}

    @property
    def model(self) -> str:
        return str(getattr(self.llm, "model", ""))

    def with_cache(self, path: Path) -> Judge:
        """This judge keeping its verdicts in ``path`` (when it keeps none yet)."""
        if self.cache.path is None:
            self.cache = JudgeCache(path)
        return self

    async def judge(self, case: JudgeCase) -> JudgeVerdict:
        """The verdict on ``case`` (from the cache when it was judged before).

        Raises:
            JudgeError: the model failed, or replied unreadably, on every attempt.
        """
        key = case.digest(self.model)
        hit = self.cache.get(key)
        if hit is not None:
            return JudgeVerdict(hit[0], hit[1], self.model, cached=True)
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": case.prompt()}]
        last = "no reply"
        for _ in range(self.attempts):
            try:
                resp = await self.llm.complete(list(messages), None, **self.params)
            except LLMError as exc:
                last = f"the judge's model failed: {exc}"
                continue
            text = message_text(resp.message.get("content"))
            parsed = parse_verdict(text)
            if parsed is not None:
                self.cache.put(key, *parsed)
                return JudgeVerdict(parsed[0], parsed[1], self.model)
            last = f"the judge replied without a verdict: {' '.join(text.split())[:200]!r}"
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": _RETRY_NUDGE}]
        raise JudgeError(f"no verdict after {self.attempts} attempts; {last}")


def case_of(traj: dict[str, Any], task: Any, effects: dict[str, Any] | None) -> JudgeCase:
    """The :class:`JudgeCase` of a trajectory record (``Trajectory.to_dict()``) of ``task``, with its actual ``effects``."""
    final = None
    for m in reversed(traj.get("messages") or []):
        if m.get("role") == "assistant" and not m.get("tool_calls") and message_text(m.get("content")).strip():
            final = message_text(m.get("content"))
            break
    reward = traj.get("reward") or {}
    return JudgeCase(
        request=task.instruction,
        expected_answer=task.expected_answer,
        expected_effects=task.expected_effects,
        actual_effects=effects or {},
        differences=[str(m.get("message", "")) for m in reward.get("breakdown", [])],
        answer=traj.get("answer"),
        final_message=final,
        policy=task.policy.rule if task.policy is not None else None,
    )
