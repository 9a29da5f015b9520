"""OracleAgent: replays a task's oracle solution as tool calls, then completes with its answer."""

from __future__ import annotations

import json
from typing import Any

from envsynth.errors import EnvsynthError
from envsynth.grading.grade import ASK_USER
from envsynth.llm.types import Message, Usage
from envsynth.runtime.answerpath import answer_in, has_answer
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import MISSING, resolve, where


class OracleError(EnvsynthError, RuntimeError):
    """The oracle could not go on: a result it needs is missing or was not a success."""


class OracleAgent:
    """A policy that knows the answer: one oracle call per turn, refs filled from earlier results.

    It reads earlier results from the ``role: tool`` messages of the conversation, so it
    runs through exactly the same loop as a model. An admitted task scores 1.0 with it.

    With ``tell`` (a run with a user simulator), it tells the user the answer in a plain
    message before completing, as the reward's communication part asks. For a must-ask task
    (``task.clarify``) it first asks the user with ``ask_user``, as the clarification part asks.
    """

    name = "oracle"
    model = "oracle"
    system_prompt = ""
    max_tokens = None

    def __init__(self, task: Task, tell: bool = False) -> None:
        self.task = task
        self.tell = tell and task.expected_answer is not None
        self.max_turns = len(task.oracle) + 1 + self.tell + bool(task.clarify)
        self.usage = Usage()

    def _results(self, messages: list[Message]) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for m in messages:
            cid = str(m.get("tool_call_id", ""))
            if m.get("role") == "tool" and cid.startswith("oracle-"):
                try:
                    out[int(cid.removeprefix("oracle-"))] = json.loads(m.get("content") or "null")
                except (ValueError, json.JSONDecodeError):
                    out[int(cid.removeprefix("oracle-"))] = None
        return out

    @staticmethod
    def _field(results: dict[int, Any], step: int, field: str) -> Any:
        value = results.get(step)
        if not has_answer(value, field):
            raise OracleError(f"oracle step {step} gave no {field!r} (result: {str(value)[:200]})")
        return answer_in(value, field)

    def reply(self, messages: list[Message]) -> Message:
        """The next oracle call, or ``complete_task`` with the answer once every call is made.

        The step is the number of oracle calls already in the conversation (ids
        ``oracle-N``), so other messages may come in between (a scripted model making
        mistakes and then following the oracle).

        Raises:
            OracleError: a result a later step needs is missing.
        """
        if self.task.clarify and not _asked(messages):
            question = json.dumps({"question": "Could you tell me what your request leaves out?"})
            call = {"id": ASK_ID, "type": "function", "function": {"name": ASK_USER, "arguments": question}}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        step = sum(
            1
            for m in messages
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
            if str(c.get("id", "")).startswith("oracle-")
        )
        results = self._results(messages)
        calls = self.task.oracle
        if step < len(calls):
            c = calls[step]
            args = dict(c.args)
            for name, ref in c.refs.items():
                args[name] = resolve(ref, results)
                if args[name] is MISSING:
                    raise OracleError(f"oracle step {step}: {where(ref)} (result: {str(results.get(ref.step))[:200]})")
            name, args_json, cid = c.tool, json.dumps(args, ensure_ascii=False), f"oracle-{step}"
        else:
            t = self.task
            answer = self._field(results, t.answer_step, t.answer_field) if t.answer_step is not None and t.answer_field else None
            if self.tell and answer is not None and not _told(messages):
                return {"role": "assistant", "content": f"Here is what I found: {_said(answer)}."}
            name, args_json, cid = "complete_task", json.dumps({} if answer is None else {"answer": answer}), f"oracle-{step}"
        call = {"id": cid, "type": "function", "function": {"name": name, "arguments": args_json}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    async def next_message(self, messages: list[Message], tools: list[Message]) -> Message:
        """See :meth:`reply`."""
        return self.reply(messages)


ASK_ID = "ask-0"
"""The id of the oracle's ``ask_user`` call (not an ``oracle-N`` step)."""


def _asked(messages: list[Message]) -> bool:
    """Whether the conversation holds the oracle's ``ask_user`` call."""
    return any(str(c.get("id", "")) == ASK_ID for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or [])


def _told(messages: list[Message]) -> bool:
    """Whether the agent already wrote to the user after its last tool call."""
    last_call = max((i for i, m in enumerate(messages) if m.get("role") == "assistant" and m.get("tool_calls")), default=-1)
    return any(m.get("role") == "assistant" and not m.get("tool_calls") and m.get("content") for m in messages[last_call + 1 :])


def _said(answer: Any) -> str:
    """An answer as words in a message: a list joined with commas and "and", anything else as it is."""
    if isinstance(answer, list) and answer:
        items = [str(a) for a in answer]
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return str(answer)
