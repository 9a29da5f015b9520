"""The user simulator (tau2-style): an LLM plays the task's user, so the agent has to ask.

Off by default: without it the instruction is the conversation's first user message.
With it, the simulator opens the conversation in its own words, answers the agent's
questions from what the user knows (the profile and the request), and ends the
conversation by writing :data:`USER_STOP` once the agent has done what was asked.

The simulator sees only the agent's plain messages (text without tool calls) and its
own replies, never the tools, the tool results, the state or the verifier. The reward is
unchanged: the final state and the ``complete_task`` answer, if any.

Its conversation is kept from its own side: the agent's words are ``user`` messages and
its replies are ``assistant`` messages, after a system prompt describing the user and a
greeting from the agent (:data:`GREETING`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envsynth.llm.types import ChatModel, LLMError, Message, Usage, message_text
from envsynth.tasks.model import Task

USER_STOP = "###STOP###"
"""What the simulator writes to end the conversation (the agent has done what was asked)."""

GREETING = "Hi! How can I help you today?"
"""The agent's opening line, as the simulator sees it (not part of the agent's messages)."""

DEFAULT_USER_TURNS = 10

USER_SYSTEM_PROMPT = """You are playing a user talking to a customer-service assistant of {app}. \
You are not the assistant: never offer help, never mention tools or databases.

Who you are:
{profile}

What you want (your request, exactly what must get done or answered):
{request}

How to behave:
- Open with what you want in your own words, in one or two sentences, without giving every detail at once.
- When the assistant asks for something (a name, a date, an amount, your email...), give it \
if it is in your profile or your request; if it is not, say you don't know. Never invent details.
- Do not ask for anything beyond your request, and do not change it.
- Keep each reply short and natural, like a person chatting.
- When the assistant has done everything you asked (and told you what you wanted to know), \
thank them and end your message with {stop}. If the assistant says it cannot do it, you may \
also end with {stop}.
"""


@dataclass
class UserTurn:
    """One reply of the simulator.

    Attributes:
        text: what the user says (``USER_STOP`` removed), may be empty when it only stops.
        done: the user ended the conversation.
    """

    text: str
    done: bool


def profile_text(task: Task) -> str:
    """The user profile as lines for the simulator's prompt (name, role, contact, preferences, and the scenario's persona)."""
    u = task.user
    sc = task.scenario
    lines = [f"- Name: {u.name}", f"- You are: {sc.persona if sc else u.role}"]
    if u.email:
        lines.append(f"- Email: {u.email}")
    if u.phone:
        lines.append(f"- Phone: {u.phone}")
    for key, value in u.preferences.items():
        lines.append(f"- {key.replace('_', ' ')}: {value}")
    if sc is not None:
        lines.append(f"- How you talk: {sc.style}")
        if sc.reason:
            lines.append(f"- Why you are getting in touch: {sc.reason}")
    return "\n".join(lines)


def request_text(task: Task) -> str:
    """What the user wants, knows and does not know, for the simulator's prompt.

    For a policy task with a refusal, the user is told to insist on the part the policy forbids
    (once, as a person would), and to accept the refusal after that.
    """
    sc = task.scenario
    if sc is None:
        return "\n".join([*(task.user.knows or [task.instruction]), *_insist(task)])
    lines = [sc.request, "", "What you know (tell the assistant when asked):", *(f"- {k}" for k in sc.knows)]
    if sc.unknowns:
        lines += ["", "What you do not know (say so if asked; never make it up):", *(f"- {k}" for k in sc.unknowns)]
    return "\n".join([*lines, *_insist(task)])


def _insist(task: Task) -> list[str]:
    if task.policy is None or not task.policy.refusal or not task.policy.request:
        return []
    return [
        "",
        f"You really want this part done too: {task.policy.request}. If the assistant says it cannot, "
        "insist once that it matters to you and ask again; if it still refuses, accept that and carry on.",
    ]


class UserSimulator:
    """An LLM playing the user of one task, for one episode.

    Attributes:
        llm: the chat model playing the user (any :class:`~envsynth.llm.types.ChatModel`).
        max_turns: replies at most (the opening counts); after that the conversation ends.
        usage: the simulator's calls in this episode.
        history: its conversation, from its own side.
        params: extra chat-completions parameters (``temperature``...).
    """

    name = "user"

    def __init__(
        self,
        llm: ChatModel,
        task: Task,
        *,
        app_title: str | None = None,
        max_turns: int = DEFAULT_USER_TURNS,
        system_prompt: str = USER_SYSTEM_PROMPT,
        **params: Any,
    ) -> None:
        if max_turns < 1:
            raise ValueError("the user simulator needs at least one turn")
        request = request_text(task)
        app = app_title or task.app.replace("_", " ").title()
        system = system_prompt.format(app=app, profile=profile_text(task), request=request, stop=USER_STOP)
        self.llm = llm
        self.max_turns = max_turns
        self.params = params
        self.usage = Usage()
        self.turns = 0
        self.history: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": GREETING}]

    @property
    def model(self) -> str:
        return self.llm.model

    @property
    def exhausted(self) -> bool:
        """No replies left."""
        return self.turns >= self.max_turns

    async def opening(self) -> UserTurn:
        """The user's first message (their answer to :data:`GREETING`).

        Raises:
            envsynth.llm.LLMError: the model could not be reached.
        """
        return await self._reply()

    async def respond(self, agent_text: str) -> UserTurn:
        """The user's reply to the agent's message ``agent_text``.

        Raises:
            envsynth.llm.LLMError: the model could not be reached.
        """
        self.history.append({"role": "user", "content": agent_text})
        return await self._reply()

    async def _reply(self) -> UserTurn:
        try:
            resp = await self.llm.complete(list(self.history), None, **self.params)
        except LLMError as exc:
            self.usage.retries += max(0, exc.attempts - 1)
            raise
        self.usage.add(resp.usage)
        self.turns += 1
        text = message_text(resp.message.get("content"))
        self.history.append({"role": "assistant", "content": text})
        done = USER_STOP in text
        return UserTurn(text.replace(USER_STOP, "").strip(), done)
