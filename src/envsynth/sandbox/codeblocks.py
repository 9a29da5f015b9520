"""Code acting (SynthAPI style): a TaskEpisode acted on by Python code blocks run in sandboxed workers.

A :class:`CodeActEpisode` wraps a :class:`~envsynth.tasks.episode.TaskEpisode`. Each
``run(code)`` sends the block to a sandboxed worker; inside, every visible tool is a
function (keyword or positional arguments, returns the result as Python data, raises
``ToolError`` on a rejection), next to the meta-tools ``list_apps()``, ``list_tools()``,
``get_tool_documentation(name)`` and ``complete_task(answer=None)``. The stubs send each
call back over a pipe; the parent runs it with ``TaskEpisode.call`` and answers, so the
database, the verifier and the oracle never enter the sandbox. What the block prints
(truncated) and its error, if any, are the observation.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from envsynth.sandbox.launcher import CPU_GRACE, Limits, Worker, WorkerCPUExceeded, WorkerDied, WorkerTimeout
from envsynth.sandbox.pool import WorkerPool, default_pool

if TYPE_CHECKING:
    from envsynth.runtime.reward import Reward
    from envsynth.tasks.episode import TaskEpisode

_BLOCK_IDS = itertools.count(1)
META_TOOLS = ("list_apps", "list_tools", "get_tool_documentation", "complete_task")
_META_PARAMS = {"list_apps": [], "list_tools": ["app"], "get_tool_documentation": ["name"], "complete_task": ["answer"]}
_META_DOCS = {
    "list_apps": "list_apps() -> list[str]: the apps you can act on.",
    "list_tools": "list_tools(app=None) -> list[dict]: name and summary of every tool you can call.",
    "get_tool_documentation": "get_tool_documentation(name) -> str: signature, parameters and description of a tool.",
    "complete_task": "complete_task(answer=None): call when the request is done; pass the answer to a question. Ends the episode.",
}


@dataclass(frozen=True)
class Observation:
    """What the agent sees after a code block.

    Attributes:
        text: the printed output (truncated to the output limit), then the error if any.
        error: the error (traceback of the agent's code, timeout, limit hit), or None.
        done: the episode has ended (``complete_task`` was called).
        answer: the answer passed to ``complete_task``.
        output: the printed output alone.
    """

    text: str
    error: str | None = None
    done: bool = False
    answer: Any = None
    output: str = ""


def _type_text(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "anyOf" in schema:
        return " | ".join(_type_text(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array" and isinstance(schema.get("items"), dict):
        return f"list[{_type_text(schema['items'])}]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "dict"}.get(kind, kind)


def tool_documentation(schema: dict[str, Any]) -> str:
    """An OpenAI function schema as text: signature, description, one line per parameter."""
    fn = schema.get("function", schema)
    params = fn.get("parameters", {}) or {}
    props: dict[str, Any] = params.get("properties", {}) or {}
    required = set(params.get("required", []) or [])
    sig = ", ".join(p if p in required else f"{p}=None" for p in props)
    lines = [f"{fn['name']}({sig})", ""]
    if fn.get("description"):
        lines += [fn["description"].strip(), ""]
    if props:
        lines.append("Parameters:")
        for name, ps in props.items():
            req = "required" if name in required else "optional"
            line = f"  {name} ({_type_text(ps)}, {req})"
            extra = []
            for key in ("minimum", "maximum", "minLength", "maxLength", "format", "default"):
                if key in ps:
                    extra.append(f"{key}={ps[key]!r}")
            if extra:
                line += " [" + ", ".join(extra) + "]"
            if ps.get("description"):
                line += f": {ps['description']}"
            lines.append(line)
    else:
        lines.append("No parameters.")
    lines.append("")
    lines.append("Returns the result as Python data; raises ToolError if the call is rejected.")
    return "\n".join(lines)


class CodeActEpisode:
    """An episode acted on by Python code blocks run in a sandboxed worker.

    Args:
        episode: the task episode (holds the state; never enters the sandbox).
        pool: where workers come from (default: the process-wide :func:`default_pool`).
        app: the app name ``list_apps()`` reports (default: the episode's app).

    One worker serves all blocks of the episode, so variables persist between blocks;
    a block that times out or breaks a limit gets its worker killed and the next block
    starts in a fresh worker (variables lost, the observation says so). Tool calls
    already made stay made.
    """

    def __init__(self, episode: TaskEpisode, pool: WorkerPool | None = None, app: str | None = None) -> None:
        self.episode = episode
        self.pool = pool or default_pool()
        self.limits: Limits = self.pool.limits
        app_obj = getattr(episode, "_app", None)
        self.app = app or getattr(app_obj, "name", None) or "app"
        self._schemas = {t["function"]["name"]: t for t in episode.tools if t["function"]["name"] != "complete_task"}
        self._stubs = [
            {
                "name": name,
                "params": list((s["function"].get("parameters") or {}).get("properties", {})),
                "doc": tool_documentation(s),
            }
            for name, s in self._schemas.items()
        ]
        self._stubs += [{"name": m, "params": _META_PARAMS[m], "doc": _META_DOCS[m]} for m in META_TOOLS]
        self._worker: Worker | None = None
        self.done = False
        self.answer: Any = None
        self.reward: Reward | None = None
        self.blocks = 0
        self.calls = 0
        self.restarts = 0
        self._cpu_mark = 0.0  # CPU seconds of the worker when its last block ended

    # --- the parent's side of the calls ---------------------------------------------

    def _answer(self, name: str, arguments: Any) -> dict[str, Any]:
        if self.done:
            return {"ok": False, "error": "The task is already complete."}
        if not isinstance(arguments, dict):
            return {"ok": False, "error": "arguments must be a dict"}
        if name == "list_apps":
            return {"ok": True, "value": [self.app]}
        if name == "list_tools":
            app = arguments.get("app")
            if app is not None and not (isinstance(app, str) and app == self.app):
                return {"ok": False, "error": f"Unknown app {app!r}; apps: {[self.app]}"}
            tools = [
                {"name": n, "description": (s["function"].get("description") or "").strip().split("\n")[0]}
                for n, s in self._schemas.items()
            ]
            tools.append({"name": "complete_task", "description": _META_DOCS["complete_task"]})
            return {"ok": True, "value": tools}
        if name == "get_tool_documentation":
            tool = arguments.get("name")
            if not isinstance(tool, str):
                return {"ok": False, "error": "get_tool_documentation(name): name must be a string"}
            if tool in self._schemas:
                return {"ok": True, "value": tool_documentation(self._schemas[tool])}
            if tool in _META_DOCS:
                return {"ok": True, "value": _META_DOCS[tool]}
            return {"ok": False, "error": f"Unknown tool {tool!r}."}
        if name == "complete_task":
            self._complete(arguments.get("answer"))
            return {"ok": True, "stop": True}
        self.calls += 1
        res = self.episode.call(name, arguments)
        if res.outcome == "success":
            return {"ok": True, "value": res.data}
        return {"ok": False, "error": res.content}

    def _complete(self, answer: Any) -> None:
        self.done = True
        self.answer = answer
        self.reward = self.episode.finish(answer)

    # --- running code -----------------------------------------------------------------

    def _take_worker(self) -> Worker:
        if self._worker is None or not self._worker.alive():
            if self._worker is not None:
                self.pool.release(self._worker)
                self.restarts += 1
            self._worker = self.pool.acquire()
            self._worker.send({"op": "setup", "tools": self._stubs})
            self._cpu_mark = self._worker.cpu_seconds()
        return self._worker

    def run(self, code: str) -> Observation:
        """Run one code block; what it printed and its error are the observation."""
        if self.done:
            return Observation("The task is already complete.", error="The task is already complete.", done=True, answer=self.answer)
        self.blocks += 1
        limits = self.limits
        deadline = time.monotonic() + limits.wall
        try:
            worker = self._take_worker()
            worker.resume()
            cpu_limit = self._cpu_mark + limits.cpu + CPU_GRACE  # what ran while paused (nothing) counts too
            block = next(_BLOCK_IDS)
            worker.send({"op": "run", "block": block, "code": code, "cpu": limits.cpu}, deadline)
            while True:
                msg = worker.receive(deadline, cpu_limit)
                op = msg.get("op")
                if msg.get("block") != block:  # stale: from a block already over, or forged
                    continue
                if op == "call":
                    answer = self._answer(str(msg.get("name")), msg.get("arguments"))
                    worker.send({"op": "result", "seq": msg.get("seq"), **answer}, deadline)
                elif op == "done":
                    break
                else:
                    raise WorkerDied(f"unexpected message {op!r}")
            worker.pause()  # threads the block left behind do not run until the next block
            self._cpu_mark = worker.cpu_seconds()
        except WorkerTimeout:
            self._drop_worker(hard=True)
            return self._observation(
                "",
                f"TimeoutError: the code block ran longer than {limits.wall:g} s and was stopped; "
                "the sandbox was restarted (variables from earlier blocks are lost).",
            )
        except WorkerCPUExceeded:
            self._drop_worker(hard=True)
            return self._observation(
                "",
                f"CPUTimeExceeded: the code block used more than {limits.cpu:g} s of CPU time (its threads included) "
                "and was stopped; the sandbox was restarted (variables from earlier blocks are lost).",
            )
        except WorkerDied as exc:
            self._drop_worker(hard=True)
            hint = f" (memory limit {limits.memory >> 20} MB, CPU limit {limits.cpu:g} s per block)"
            return self._observation("", f"SandboxError: {exc}{hint}; the sandbox was restarted (variables from earlier blocks are lost).")
        output = str(msg.get("output", ""))[: 2 * limits.output]  # the worker is not trusted to have cut it
        dropped = msg.get("dropped")
        if isinstance(dropped, int) and dropped > 0:
            output += f"\n... [output truncated: {dropped} more characters]"
        error = msg.get("error")
        if error:
            error = str(error)[:8000]
        if self.done:
            self._drop_worker()
        return self._observation(output, error or None)

    def _observation(self, output: str, error: str | None) -> Observation:
        text = output if not error else (output + ("\n" if output and not output.endswith("\n") else "") + error)
        return Observation(text=text, error=error, done=self.done, answer=self.answer, output=output)

    def _drop_worker(self, hard: bool = False) -> None:
        if self._worker is not None:
            if hard:
                self._worker.kill()
            self.pool.release(self._worker)
            self._worker = None
            if not self.done:
                self.restarts += 1

    def finish(self, answer: Any = None) -> Reward:
        """Score the episode: the answer given to ``complete_task``, else ``answer``; frees the worker."""
        if self.reward is None:
            self._complete(answer)
        self.close()
        assert self.reward is not None
        return self.reward

    def close(self) -> None:
        """Kill this episode's worker (the episode is not scored unless it was finished)."""
        if self._worker is not None:
            self.pool.release(self._worker)
            self._worker = None

    def __enter__(self) -> CodeActEpisode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CodeSandbox:
    """Runs code-acting episodes on a pool of warm sandboxed workers.

    Args:
        workers: warm workers kept ready.
        limits: wall/CPU seconds per block, memory and output limits.
        require_bwrap: raise SandboxUnavailable where bubblewrap is unusable instead of
            falling back to a plain subprocess (with a SandboxWarning).
    """

    def __init__(self, workers: int = 2, limits: Limits | None = None, require_bwrap: bool = False) -> None:
        self.pool = WorkerPool(size=workers, limits=limits, require_bwrap=require_bwrap)

    @property
    def mode(self) -> str:
        """``"bwrap"`` or ``"subprocess"``."""
        return self.pool.mode.name

    def episode(self, task_episode: TaskEpisode, app: str | None = None) -> CodeActEpisode:
        return CodeActEpisode(task_episode, pool=self.pool, app=app)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> CodeSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
