"""Episodes: one state in memory, tool calls with the papers' three outcome classes."""

from __future__ import annotations

import json
import sqlite3
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from envsynth.runtime.state import open_state
from envsynth.runtime.toolkit import Context, ToolError

if TYPE_CHECKING:
    from envsynth.runtime.app import App

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
    :class:`CallResult` and is appended to :attr:`log`.
    """

    app: App
    db: sqlite3.Connection
    ctx: Context
    log: list[CallRecord] = field(default_factory=list)

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
        result = self._call(name, arguments, replay)
        if result[0].outcome != SUCCESS or self.app.keep_log:
            res, trace = result
            self.log.append(CallRecord(name, arguments, res.outcome, res.content, res.code, trace))
        return result[0]

    def _call(self, name: str, arguments: dict[str, Any] | str | None, replay: bool = False) -> tuple[CallResult, str | None]:
        app = self.app
        fn = app.functions.get(name)
        if fn is None:
            return CallResult(REJECTION, f"Unknown tool {name!r}.", code="unknown_tool"), None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                return CallResult(REJECTION, f"Arguments of {name} are not valid JSON: {exc.msg}.", code="invalid_arguments"), None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return CallResult(REJECTION, f"Arguments of {name} must be a JSON object.", code="invalid_arguments"), None
        try:
            args = app.validate[name](arguments).__dict__
        except ValidationError as exc:
            return CallResult(REJECTION, _validation_message(name, exc), code="invalid_arguments"), None
        db = self.db
        if not replay:
            db.execute("SAVEPOINT tool_call")
        try:
            value = fn(self.ctx, **args)
            content = "" if replay else json.dumps(value, ensure_ascii=False)
        except ToolError as exc:
            self._undo(replay)
            return CallResult(REJECTION, exc.message, code=exc.code or "rejected"), None
        except Exception:  # any other exception is an environment bug
            self._undo(replay)
            trace = traceback.format_exc()
            return CallResult(FAILURE, f"Internal error in {name}; the call had no effect.", code="unexpected_failure"), trace
        if not replay:
            db.execute("RELEASE tool_call")
        return CallResult(SUCCESS, content, data=value), None

    def _undo(self, replay: bool) -> None:
        if not replay:
            self.db.execute("ROLLBACK TO tool_call")
            self.db.execute("RELEASE tool_call")

    def close(self) -> None:
        self.db.close()


def _validation_message(name: str, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument {loc!r}")
        elif err["type"] == "missing":
            parts.append(f"missing required argument {loc!r}")
        else:
            parts.append(f"{loc}: {err['msg']} (got {err.get('input')!r})")
    return f"Invalid arguments for {name}: " + "; ".join(parts) + "."
