"""Episodes: one state in memory, tool calls with the papers' three outcome classes."""

from __future__ import annotations

import json
import reprlib
import sqlite3
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from envsynth.runtime.guard import StateGuard
from envsynth.runtime.guard import install as install_guard
from envsynth.runtime.state import open_state
from envsynth.runtime.toolkit import Context, ToolError

if TYPE_CHECKING:
    from envsynth.runtime.app import App

_JSON = json.JSONEncoder(ensure_ascii=False)  # what json.dumps(value, ensure_ascii=False) builds on every call

MAX_ARGUMENTS = 1000
"""Keys of a call's arguments object at most (checked first: validating a million unknown keys takes seconds)."""

Outcome = Literal["success", "anticipated_rejection", "unexpected_failure"]
SUCCESS: Outcome = "success"
REJECTION: Outcome = "anticipated_rejection"
FAILURE: Outcome = "unexpected_failure"


@dataclass
class CallResult:
    """The outcome of one tool call.

    Attributes:
        outcome: ``success``, ``anticipated_rejection`` or ``unexpected_failure``.
        content: what the agent sees: the JSON result, or an error message.
        data: the result as Python data (success only).
        code: which check rejected the call (``exists:order``, ``state``,
            ``invalid_arguments``, ``unknown_tool``...), for rejections.
    """

    outcome: Outcome
    content: str
    data: Any = None
    code: str | None = None

    @property
    def ok(self) -> bool:
        return self.outcome == SUCCESS


@dataclass
class CallRecord:
    """A logged call; ``trace`` holds the traceback of an Unexpected Failure."""

    tool: str
    arguments: Any
    outcome: Outcome
    content: str
    code: str | None = None
    trace: str | None = None


@dataclass
class Episode:
    """One run over its own in-memory copy of a state.

    Create with :meth:`App.episode`. Tool calls never raise: every call returns a
    :class:`CallResult` and is appended to :attr:`log`. After :meth:`close` every call is
    rejected (code ``episode_finished``) without touching the database.
    """

    app: App
    db: sqlite3.Connection
    ctx: Context
    log: list[CallRecord] = field(default_factory=list)
    closed: bool = False
    guard: StateGuard | None = field(default=None, repr=False)
    written: set[str] = field(default_factory=set, repr=False)
    """Tables the successful calls so far may have written (their tools' ``writes``, ``creates`` and
    ``deletes``): only these can differ from the initial state."""

    @classmethod
    def start(cls, app: App, state: bytes, seed: int = 0) -> Episode:
        db = open_state(state)
        return cls(app=app, db=db, ctx=Context(db, app.now, seed, app.bool_columns))

    @property
    def tainted(self) -> bool:
        """Whether any call ended in an Unexpected Failure (an environment bug)."""
        return any(r.outcome == FAILURE for r in self.log)

    def call(self, name: str, arguments: dict[str, Any] | str | None = None, *, replay: bool = False) -> CallResult:
        """Call tool ``name`` with ``arguments`` (a dict or a JSON object text).

        ``replay=True`` is for callers that never show results to an agent and discard the
        whole state after any non-Success (task synthesis): a successful result's
        ``content`` is left empty (``data`` only) and a rejected call's partial writes are
        not rolled back.
        """
        result = self._call(name, arguments, replay) if not self.closed else (_finished(), None)
        if result[0].outcome != SUCCESS or self.app.keep_log:
            res, trace = result
            self.log.append(CallRecord(name, arguments, res.outcome, res.content, res.code, trace))
        return result[0]

    def _call(self, name: str, arguments: dict[str, Any] | str | None, replay: bool = False) -> tuple[CallResult, str | None]:
        app = self.app
        try:
            fn = app.functions.get(name)
        except TypeError:  # an unhashable "name" (a list from a client)
            fn = None
        if fn is None:
            return CallResult(REJECTION, f"Unknown tool {short_repr(name)}.", code="unknown_tool"), None
        if isinstance(arguments, str):
            arguments, problem = parse_arguments(arguments)
            if problem is not None:
                return CallResult(REJECTION, f"Arguments of {name} are {problem}.", code="invalid_arguments"), None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return CallResult(REJECTION, f"Arguments of {name} must be a JSON object.", code="invalid_arguments"), None
        if len(arguments) > MAX_ARGUMENTS:  # refused before validation, which would list every unknown key
            return CallResult(
                REJECTION,
                f"Arguments of {name} have {len(arguments)} keys; no tool takes more than {MAX_ARGUMENTS}.",
                code="invalid_arguments",
            ), None
        try:
            args = app.validate[name](arguments).__dict__
        except ValidationError as exc:
            return CallResult(REJECTION, _validation_message(name, exc), code="invalid_arguments"), None
        db = self.db
        undo = not replay and name in writing_tools(app)  # a tool that writes nothing has nothing to undo
        if undo:
            db.execute("SAVEPOINT tool_call")
        try:
            value = fn(self.ctx, **args) if name not in app.state_writers else self._guarded(fn, args, app.state_writers[name])
            content = "" if replay else _JSON.encode(value)
        except ToolError as exc:
            self._undo(undo)
            return CallResult(REJECTION, exc.message, code=exc.code or "rejected"), None
        except Exception:  # any other exception is an environment bug
            self._undo(undo)
            trace = traceback.format_exc()
            return CallResult(FAILURE, f"Internal error in {name}; the call had no effect.", code="unexpected_failure"), trace
        if undo:
            db.execute("RELEASE tool_call")
        tables = written_tables(app).get(name)
        if tables:
            self.written.update(tables)
        return CallResult(SUCCESS, content, data=value), None

    def _guarded(self, fn: Any, args: dict[str, Any], triggers: tuple[str, ...]) -> Any:
        """Call a tool that may write a state field with the state machines (``triggers``) armed in the database.

        Raises:
            ToolError: ``state:<entity>.<field>`` when the call tried a move its machine forbids
                (see :mod:`envsynth.runtime.guard`), even if its code caught the error and went on.
        """
        guard = self.guard = install_guard(self.db, self.app.blueprint, triggers, self.guard)
        guard.arm()
        try:
            value = fn(self.ctx, **args)
        except ToolError:
            raise
        except Exception:
            if guard.violation is None:
                raise
            raise ToolError(guard.message(), code=guard.code) from None
        finally:
            guard.disarm()
        if guard.violation is not None:
            raise ToolError(guard.message(), code=guard.code)
        return value

    def _undo(self, undo: bool) -> None:
        if undo:
            self.db.execute("ROLLBACK TO tool_call")
            self.db.execute("RELEASE tool_call")

    def detach(self) -> None:
        """End the episode without closing its connection (its owner takes it back); later calls are rejected."""
        self.closed = True

    def close(self) -> None:
        """End the episode and close its connection (again: no effect); later calls are rejected."""
        self.closed = True
        self.db.close()


def written_tables(app: App) -> dict[str, frozenset[str]]:
    """Tool name -> the tables its calls may write (declared ``writes``, ``creates`` and ``deletes``;
    the procedural tests fail a tool that changes anything else), for tools that write; kept on the app's index."""
    return app.index.of(_find_written_tables, app)


def writing_tools(app: App) -> frozenset[str]:
    """The tools whose calls may change the state: write mode, declared writes, or armed state machines
    (the others only read: the procedural tests fail a tool that changes anything it does not declare,
    and the sandbox refuses any write of untrusted code it does not declare); kept on the app's index."""
    return app.index.of(_find_writing_tools, app)


def _find_writing_tools(app: App) -> frozenset[str]:
    return frozenset(s.name for s in app.specs if s.mode == "write" or s.name in written_tables(app) or s.name in app.state_writers)


def _find_written_tables(app: App) -> dict[str, frozenset[str]]:
    out = {}
    for s in app.specs:
        tables = frozenset(s.writes) | frozenset(s.creates) | frozenset(s.deletes)
        if tables:
            out[s.name] = tables
    return out


def _finished() -> CallResult:
    return CallResult(REJECTION, "The episode is finished; no more tool calls can be made in it.", code="episode_finished")


def parse_arguments(text: str) -> tuple[Any, str | None]:
    """Tool-call arguments given as JSON text -> ``(value, None)``, or ``(None, problem)``.

    Blank text is ``{}``. Never raises: text nested too deeply for the parser (``"[" * 5000``)
    or holding a number too long to convert is a problem like any invalid JSON. The value
    may be any JSON value; the caller checks that it is an object.
    """
    if not text.strip():
        return {}, None
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at position {exc.pos})"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        return None, "not valid JSON (a number has too many digits)"


class _ShortRepr(reprlib.Repr):
    """``repr`` bounded in depth, length and cost, for values an agent sent (any size, any nesting)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = self.maxother = self.maxlong = 80
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = self.maxdeque = self.maxarray = 6

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 256:  # repr of a huge int is slow, and past 4300 digits raises
            return f"<{'-' if x < 0 else ''}integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_short = _ShortRepr()


def short_repr(value: Any) -> str:
    """``repr(value)`` shortened: at most 3 levels deep, long strings and containers cut (never raises)."""
    if type(value) is str and len(value) <= 80:  # the common case (a tool name, a short value), at builtin speed
        return repr(value)
    try:
        return _short.repr(value)
    except Exception:  # a custom object whose __repr__ fails: its type is enough to act on
        return f"<{type(value).__name__}>"


def _validation_message(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"  # a key the agent sent may be of any size
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument {short_repr(loc)}")
        elif err["type"] == "missing":
            parts.append(f"missing required argument {short_repr(loc)}")
        else:
            where = loc if len(loc) <= 80 and loc.isprintable() else short_repr(loc)
            parts.append(f"{where}: {err['msg'].removeprefix('Value error, ')} (got {short_repr(err.get('input'))})")
    return f"Invalid arguments for {name}: " + "; ".join(parts) + "."
