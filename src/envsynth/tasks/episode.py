"""The episode of a task: one attempt, visible tools only, reward at the end.

:class:`TaskEpisode` is the one episode type that rollouts, the HTTP server and the MCP
server run. It has two views of the same attempt: the agent's (``tools``, ``call``,
``finish``) and the trainer's (``reset``, ``step``, ``state``; see
:mod:`envsynth.tasks.trainer`). Nothing here exposes the oracle, the expected effects or
the verifier.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from envsynth.blueprint.policy import policy_text
from envsynth.grading.grade import ASK_USER, grade_task
from envsynth.runtime.app import App
from envsynth.runtime.episode import REJECTION, SUCCESS, CallResult, Episode, parse_arguments, short_repr
from envsynth.runtime.parts import ALL, ScoreRule
from envsynth.runtime.reward import Effects, Reward, effects_of
from envsynth.runtime.snapshot import S0Tables
from envsynth.runtime.state import Rows, id_fields, open_state, read_rows
from envsynth.runtime.toolkit import Context
from envsynth.tasks.admission.clarify import user_answer
from envsynth.tasks.model import Task
from envsynth.tasks.trainer import Action, EpisodeState, StepResult
from envsynth.tasks.trainer import step as _step

COMPLETE_TASK = {
    "type": "function",
    "function": {
        "name": "complete_task",
        "description": (
            "Call this once the request is done. If the user asked a question, pass the answer itself in `answer`: "
            "the value they asked for (a number, a date, a name, a status, yes or no), or a short sentence that states it. "
            "Leave `answer` out when the user asked for no information."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "description": "The answer to the user's question, e.g. '3', '$2,157.70', 'March 5, 2026' or 'The project is archived.'",
                }
            },
            "required": [],
            "additionalProperties": False,
        },
    },
}

ASK_USER_TOOL = {
    "type": "function",
    "function": {
        "name": ASK_USER,
        "description": (
            "Ask the user for something the request does not say and you need before you act "
            "(a new value, a reason, a date). Returns the user's reply."
        ),
        "parameters": {
            "type": "object",
            "properties": {"question": {"type": "string", "description": "What you ask the user, e.g. 'What is the new phone number?'"}},
            "required": ["question"],
            "additionalProperties": False,
        },
    },
}
"""The meta-tool of a must-ask task (``Task.clarify``): the user answers from the scenario."""


def episode_tools(app: App, task: Task) -> list[dict[str, Any]]:
    """OpenAI function schemas of an episode of ``task``: its visible tools, ``ask_user`` for a must-ask task, then
    ``complete_task``."""
    asks = [ASK_USER_TOOL] if task.clarify else []
    return [*app.tool_schemas(task.visible_tools), *asks, COMPLETE_TASK]


class TaskEpisode:
    """One attempt at one task.

    The agent's view: :attr:`tools`, :meth:`call`, :meth:`finish`. The trainer's view:
    :meth:`reset`, :meth:`step`, :meth:`state`. Start one with ``corpus.start(task, seed)``
    (pooled state) or ``TaskEpisode(app, task, state_bytes)``.

    Attributes:
        tools: OpenAI function schemas of the task's visible tools, plus ``complete_task`` (and ``ask_user`` for a
            must-ask task, see :meth:`call`).
        instruction: the user's request.
        app_policy: the app's policy (markdown) the agent must follow, '' when it has none.
        seed: the episode seed (ids and the clock inside tools).
    """

    __slots__ = (
        "_app",
        "_asked",
        "_calls",
        "_effects",
        "_episode",
        "_expected",
        "_expected_answer",
        "_forbidden_tools",
        "_made",
        "_release",
        "_restart",
        "_reward",
        "_s0",
        "_s0_tables",
        "_state",
        "_task",
        "_tools",
        "_visible",
        "_wrote",
        "answer",
        "app_policy",
        "finished",
        "instruction",
        "score_rule",
        "seed",
    )

    def __init__(
        self,
        app: App,
        task: Task,
        state: bytes,
        seed: int = 0,
        initial_rows: Rows | None = None,
        connection: sqlite3.Connection | None = None,
        release: Callable[[sqlite3.Connection], None] | None = None,
        tracked: bool = False,
        restart: Callable[[int], TaskEpisode] | None = None,
        score_rule: ScoreRule = ALL,
    ) -> None:
        """Start on ``state`` (s0 bytes); ``initial_rows`` (s0 as rows) saves re-reading s0 at the end.

        ``connection`` (with ``release``) is an open connection already holding s0 inside a
        transaction, as handed out by :class:`EpisodePool`; ``release`` takes it back.
        Without one, the episode opens its own copy of ``state``, also inside a transaction.

        Only the tables the episode's successful calls may write can differ from s0: each is
        read once before the first call that may write it (its rows in s0, see
        :mod:`envsynth.runtime.snapshot`) and again at the end, and only the rows that differ
        are compared (no change log, no per-connection setup). ``tracked`` is accepted for
        compatibility and changes nothing. ``restart``: ``seed -> a fresh episode of the same
        task`` for :meth:`reset` (default: a new episode on ``state``). ``score_rule``: how the
        reward's parts make its score (default: every part must pass).
        """
        self._app = app
        self._task = task
        self._s0 = initial_rows
        self._s0_tables = S0Tables(app)
        self._state = state
        if connection is not None:
            self._episode = Episode(app=app, db=connection, ctx=Context(connection, app.now, seed, app.bool_columns))
        else:
            self._episode = Episode.start(app, state, seed)
            self._episode.db.execute("BEGIN")
        self._release = release
        self._expected = Effects.from_dict(task.expected_effects)
        self._expected_answer = task.expected_answer
        self._visible = set(task.visible_tools)
        self._forbidden_tools = frozenset(c.tool for c in task.policy.forbidden) if task.policy is not None else frozenset()
        self._made: list[tuple[str, Any]] = []  # successful calls of the tools a policy rule forbids (the policy part)
        self._asked = self._wrote = False  # the user asked before the first write (the clarification part); a write made
        self.score_rule = score_rule
        self._tools: list[dict[str, Any]] | None = None
        self.instruction = task.instruction
        self.app_policy = app.blueprint.index.of(policy_text, app.blueprint)  # the app's policy for the agent ('' for none)
        self.finished = False
        self.answer: Any = None
        self._reward: Reward | None = None
        self._effects: Effects | None = None
        self.seed = seed
        self._calls = 0
        self._restart = restart or (lambda s: TaskEpisode(app, task, state, s, initial_rows, score_rule=score_rule))

    @property
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of the task's visible tools, plus ``complete_task`` (and ``ask_user`` for a must-ask
        task; made on first use)."""
        if self._tools is None:
            self._tools = episode_tools(self._app, self._task)
        return self._tools

    @property
    def task_id(self) -> str:
        return self._task.id

    def call(self, name: str, arguments: dict[str, Any] | str | None = None) -> CallResult:
        """Call a visible tool; tools outside the task's set are unknown to the agent.

        After :meth:`finish` every call is an Anticipated Rejection (code
        ``episode_finished``) that touches no state. A must-ask task's ``ask_user`` answers
        with what the request leaves out (:meth:`ask_user`).
        """
        if self.finished:
            return CallResult(REJECTION, "The episode is finished; no more tool calls can be made in it.", code="episode_finished")
        self._calls += 1
        if name == ASK_USER and self._task.clarify:
            return self.ask_user(arguments)
        if not isinstance(name, str) or name not in self._visible:
            return CallResult(REJECTION, f"Unknown tool {short_repr(name)}.", code="unknown_tool")
        if self._s0 is None:
            self._s0_tables.before_call(self._episode.db, name)
        res = self._episode.call(name, arguments)
        if name in self._forbidden_tools and res.ok:
            self._made.append((name, parse_arguments(arguments)[0] if isinstance(arguments, str) else arguments))
        if res.ok and not self._wrote and self._app.spec_by_name[name].mode == "write":
            self._wrote = True
        return res

    def ask_user(self, arguments: dict[str, Any] | str | None = None) -> CallResult:
        """The user's reply to a question (``{"question": ...}``): the facts the request left out, as they say them.

        Asking before the first write passes the reward's clarification part; the question's words do not matter.
        """
        if self.finished:
            return CallResult(REJECTION, "The episode is finished; no more tool calls can be made in it.", code="episode_finished")
        value, problem = parse_arguments(arguments) if isinstance(arguments, str) else (arguments, None)
        if problem is not None or (value is not None and not isinstance(value, dict)):
            return CallResult(REJECTION, f"Arguments of {ASK_USER} must be a JSON object.", code="invalid_arguments")
        self.note_user_message()
        reply = user_answer(self._task)
        return CallResult(SUCCESS, reply, data=reply)

    def note_user_message(self) -> None:
        """The agent asked the user something (``ask_user``, or a message to a simulated user): before any write, that
        is the asking a must-ask task needs."""
        if not self._wrote:
            self._asked = True

    def effects(self) -> Effects:
        """What the agent changed so far (after :meth:`finish`: what it had changed when it finished)."""
        if self._effects is not None:
            return self._effects
        if self.finished:  # its state is given back: never read it again
            raise RuntimeError(f"episode of task {self._task.id} failed while finishing; its effects are unknown")
        return self._current_effects()

    def _current_effects(self) -> Effects:
        """The effects so far: the tables successful calls may have written, now against s0."""
        written = self._episode.written
        if not written:
            return Effects({})
        bp = self._app.blueprint
        tables = [t for t in id_fields(bp) if t in written]  # blueprint order, as read_rows gives them
        db = self._episode.db
        if self._s0 is not None:  # s0 as rows, given by the caller
            return effects_of(bp, {t: self._s0.get(t, []) for t in tables}, read_rows(db, bp, tables), now=self._app.now)
        before, after = self._s0_tables.changed_rows(db, bp, tables)
        return effects_of(bp, before, after, now=self._app.now)

    def finish(self, answer: Any = None, *, rule: ScoreRule | None = None) -> Reward:
        """End the episode and score it against the task's ground truth (:func:`envsynth.grading.grade_task`).

        The reward has parts: ``state`` (the effects), ``answer`` (a question's answer, read as a
        person reads it: a value or a sentence stating it), ``policy`` (no forbidden call made, for
        a policy task), ``clarification`` (the user asked before the first write, for a must-ask
        task). ``rule`` (default: the episode's ``score_rule``) makes the score of them.

        The state is released (a pooled connection goes back to its pool) exactly once, also
        when scoring fails. Finishing again returns the first reward (``answer`` is ignored).

        Raises:
            RuntimeError: finishing again after the first :meth:`finish` raised.
        """
        if self.finished:
            if self._reward is None:
                raise RuntimeError(f"episode of task {self._task.id} failed while finishing; it has no reward")
            return self._reward
        try:
            effects = self._current_effects()
            reward = grade_task(
                self._app, self._task, effects, answer, self._made, rule=rule or self.score_rule, expected=self._expected, asked=self._asked
            )
        finally:
            self.finished, self.answer = True, answer
            self._end()
        self._effects, self._reward = effects, reward
        return reward

    def _end(self) -> None:
        """Give the state back: to the pool (the episode is detached from it) or by closing it."""
        release, self._release = self._release, None
        if release is not None:
            self._episode.detach()
            release(self._episode.db)
        else:
            self._episode.close()

    @property
    def tainted(self) -> bool:
        """Whether a call hit an environment bug (Unexpected Failure)."""
        return self._episode.tainted

    # -- the trainer's view -----------------------------------------------------------------

    def reset(self, seed: int | None = None) -> StepResult:
        """The first observation (the instruction); an episode already used starts again first.

        An episode with calls made, finished, or asked for another ``seed`` gives its state
        back unscored and continues on a fresh copy of s0 (the same object, a new attempt).
        """
        if self._calls or self.finished or (seed is not None and seed != self.seed):
            if not self.finished:  # its state goes back first, so a pool hands the same warm copy out again
                self.finished = True
                self._end()
            fresh = self._restart(self.seed if seed is None else seed)
            for name in TaskEpisode.__slots__:
                setattr(self, name, getattr(fresh, name))
        return StepResult(self.instruction)

    def step(self, action: Action | dict[str, Any]) -> StepResult:
        """One action: a tool call, or ``complete_task`` (``{"answer": ...}``) that ends and scores the episode.

        See :func:`envsynth.tasks.trainer.step`.
        """
        return _step(self, action)

    def state(self) -> EpisodeState:
        """Task, seed, calls made, whether it is done, its answer, taint and reward (never the ground truth)."""
        return EpisodeState(self._task.id, self.seed, self._calls, self.finished, self.answer, self.tainted, self._reward)


class EpisodePool:
    """Reuses one open connection per task state across episodes (k attempts, RL rollouts).

    A connection holds s0 and each episode runs inside a transaction that is rolled back
    when it finishes, so SQLite's parsed schema and prepared statements stay warm: no
    per-episode copy of the state and no re-parse. A connection whose transaction was
    ended by a tool (a COMMIT in custom code) is closed, never reused. At most ``size``
    idle connections are kept (least recently used task dropped first); any number of
    episodes may be live at once, the bound is on the idle ones only.

    Thread-safe: the idle table and its count change only under one lock, and a task's
    entry exists only while it holds at least one idle connection.
    """

    def __init__(self, size: int = 256) -> None:
        if size < 0:
            raise ValueError("size must be at least 0")
        self.size = size
        self._idle: OrderedDict[str, list[sqlite3.Connection]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    @property
    def idle(self) -> int:
        """How many idle connections the pool holds (at most ``size``)."""
        return self._count

    def start(
        self, app: App, task: Task, state: bytes, seed: int = 0, initial_rows: Rows | None = None, score_rule: ScoreRule = ALL
    ) -> TaskEpisode:
        """A fresh episode on ``task``: an idle connection holding s0 if there is one, else a new one."""
        key = task.hash or task.id
        conn = self._take(key)
        if conn is None:
            conn = open_state(state)
        conn.execute("BEGIN")
        return TaskEpisode(
            app,
            task,
            state,
            seed,
            initial_rows,
            connection=conn,
            release=lambda c: self._give(key, c),
            restart=lambda s: self.start(app, task, state, s, initial_rows, score_rule),
            score_rule=score_rule,
        )

    def _take(self, key: str) -> sqlite3.Connection | None:
        with self._lock:
            free = self._idle.get(key)
            if not free:
                return None
            conn = free.pop()
            if not free:  # no empty lists: eviction takes from the first entry
                del self._idle[key]
            self._count -= 1
            return conn

    def _give(self, key: str, conn: sqlite3.Connection) -> None:
        if not conn.in_transaction or not self.size:  # something committed: this copy of s0 is spoiled; or no room
            conn.close()
            return
        conn.execute("ROLLBACK")
        evicted: list[sqlite3.Connection] = []
        with self._lock:
            self._idle.setdefault(key, []).append(conn)
            self._idle.move_to_end(key)
            self._count += 1
            while self._count > self.size:
                old_key, conns = next(iter(self._idle.items()))
                evicted.append(conns.pop())
                self._count -= 1
                if not conns:
                    del self._idle[old_key]
        for old in evicted:
            old.close()
