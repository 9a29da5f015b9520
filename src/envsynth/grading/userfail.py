"""Simulated-user failures: episodes in which the LLM playing the user broke its scenario.

With ``--user-sim`` a model plays the user, and it can fail the agent: by telling the agent what
the user cannot know (the very answer it asked for, an internal id), by ending the conversation
before saying what it wants, or by giving contact details other than its own. Such an episode
says nothing about the agent, so it is labelled ``user_failure`` with the reason and left out of
pass@k and of exports (see docs/grading.md). :func:`user_failure` reads it off the conversation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from envsynth.llm.types import message_text
from envsynth.runtime.answers import AnswerSpec, mentions

if TYPE_CHECKING:
    from envsynth.tasks.model import Task

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+\d[\d\s().-]{8,}\d|\(?\b\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b")
_ID_LIKE = re.compile(r"^(?=.*\d)[A-Za-z0-9_-]{4,}$")


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _turns(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The conversation as (speaker, text): ``user`` (the simulator) and ``agent`` (plain assistant text)."""
    out = []
    for m in messages:
        role = m.get("role")
        if role == "user":
            out.append(("user", message_text(m.get("content"))))
        elif role == "assistant":
            out.append(("agent", message_text(m.get("content"))))
    return out


def user_failure(
    task: Task, messages: list[dict[str, Any]], stop_reason: str, spec: AnswerSpec | None = None, state_ids: list[str] | None = None
) -> str | None:
    """Why the simulated user broke its scenario in this conversation, or None when it did not.

    Args:
        task: the task the user played (its request, profile and scenario).
        messages: the episode's messages (the simulator's turns are its ``user`` messages).
        stop_reason: how the conversation ended (``user_stop``: the user ended it).
        spec: the answer's spec, to read the answer in the user's words.
        state_ids: internal ids of the task's rows the user knows only as described.

    The checks, in order: the user stated the expected answer (or an internal id) before the
    agent did, when it is not in the request; the user ended the conversation in its opening
    message or without saying anything; the user gave an email or phone number that is neither
    its own nor in its request.
    """
    turns = _turns(messages)
    said = [text for who, text in turns if who == "user"]
    if not said:
        return None
    known = " ".join(
        [task.instruction, *(task.user.knows or [])] + ([task.scenario.request, *task.scenario.knows] if task.scenario else [])
    )
    revealed = _revealed(task, turns, known, spec, state_ids or [])
    if revealed:
        return revealed
    if stop_reason == "user_stop" and (
        (len(said) == 1 and not any(who == "agent" for who, _ in turns)) or not any(t.strip() for t in said)
    ):
        return "the simulated user ended the conversation before stating what it wants"
    return _contradicted(task, said, known)


def _revealed(task: Task, turns: list[tuple[str, str]], known: str, spec: AnswerSpec | None, ids: list[str]) -> str | None:
    """The user told the agent the answer (or an internal id) before the agent said it, and the request does not hold it."""
    want = task.expected_answer
    answer_known = want is not None and mentions(want, known, spec)
    hidden_ids = [i for i in ids if _ID_LIKE.match(i) and i not in known]
    agent_said = ""
    for who, text in turns:
        if who == "agent":
            agent_said += " " + text
            continue
        if want is not None and not answer_known and mentions(want, text, spec) and not mentions(want, agent_said, spec):
            return f"the simulated user stated the answer {want!r}, which it cannot know: {_quote(text)}"
        for i in hidden_ids:
            if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text) and i not in agent_said:
                return f"the simulated user gave the internal id {i!r}, which it knows only as described: {_quote(text)}"
    return None


def _contradicted(task: Task, said: list[str], known: str) -> str | None:
    """An email or phone number the user gave that is neither its own nor in its request."""
    own_emails = {e.lower() for e in _EMAIL.findall(known)} | ({task.user.email.lower()} if task.user.email else set())
    own_phones = {_digits(p) for p in _PHONE.findall(known)} | ({_digits(task.user.phone)} if task.user.phone else set())
    for text in said:
        for email in _EMAIL.findall(text):
            if email.lower() not in own_emails:
                return f"the simulated user gave the email {email}, not its own ({task.user.email or 'none on its profile'})"
        for phone in _PHONE.findall(text):
            digits = _digits(phone)
            if len(digits) >= 7 and not any(digits.endswith(p[-7:]) or p.endswith(digits) for p in own_phones if p):
                return f"the simulated user gave the phone number {phone.strip()}, not its own ({task.user.phone or 'none on its profile'})"
    return None


def _quote(text: str, size: int = 160) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= size else text[: size - 3] + "...")


def internal_ids(app: Any, task: Task) -> list[str]:
    """The primary-key values of the task's own rows (what its user knows only as described)."""
    from envsynth.runtime.state import id_fields

    keys = id_fields(app.blueprint)
    return sorted({str(row[keys[t]]) for t, rows in task.state.core.items() if t in keys for row in rows if row.get(keys[t]) is not None})
