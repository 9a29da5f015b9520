"""The sandboxed worker: runs the agent's code blocks, one after another (stdlib only).

This file is executed *inside* the sandbox as a script (``python -I -S worker.py``); it
never imports envsynth and is never imported by the parent to run code. It talks to
the parent over the two pipes it inherits as stdin/stdout, one JSON object per line:

parent -> worker::

    {"op": "setup", "tools": [{"name": ..., "params": [...], "doc": ...}, ...]}
    {"op": "run", "block": 7, "code": "...", "cpu": 5}
    {"op": "result", "seq": 3, "ok": true, "value": ...}          # answer to call 3
    {"op": "result", "seq": 3, "ok": false, "error": "..."}

worker -> parent::

    {"op": "hello"}                                       # limits set, ready
    {"op": "call", "block": 7, "seq": 3, "name": "search_orders", "arguments": {...}}
    {"op": "done", "block": 7, "output": "...", "error": null | "...", "dropped": 0}

Block ids and call numbers let the parent drop what is stale (a message forged by the
agent's code, or the late "done" of a block it had already given up on) and keep both
sides in step.

Tool functions are stubs: they send a call and block until the parent, which holds the
database, answers. Right after start the pipes are moved to private descriptors and fds
0, 1 and 2 point at /dev/null, so ``print`` (captured per block) and raw writes to fd 1
can never be mistaken for protocol messages.
"""

import contextlib
import io
import json
import os
import resource
import signal
import sys
import threading
import traceback


class ToolError(Exception):
    """A tool rejected the call (unknown row, wrong state, invalid arguments...)."""


class _Stop(BaseException):
    """complete_task() was called: end the code block."""


class CPUTimeExceeded(BaseException):
    """The code block used more CPU time than allowed."""


class _Capture(io.TextIOBase):
    """Keeps the first ``limit`` characters written; counts the rest."""

    def __init__(self, limit):
        self.limit = limit
        self.parts = []
        self.size = 0
        self.dropped = 0

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        room = self.limit - self.size
        if room > 0:
            part = s[:room]
            self.parts.append(part)
            self.size += len(part)
            self.dropped += len(s) - len(part)
        else:
            self.dropped += len(s)
        return len(s)

    def text(self):
        return "".join(self.parts)


def confine(memory, cpu_total):
    """Set the worker's process limits (address space, CPU, no core files, file size, open files, processes).

    A Python-level fork() child exits at once (it would share the protocol pipes), and
    children are reaped automatically. Under bwrap the seccomp filter refuses fork anyway.
    Also used by the tool worker (``tool_worker.py`` loads this file by path).
    """
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_total, cpu_total))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))  # bounds the kernel buffers of pipes and sockets
    with contextlib.suppress(ValueError, OSError):  # binds where the uid is not root (fallback); bwrap has seccomp
        resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    os.register_at_fork(after_in_child=lambda: os._exit(70))
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def protocol_pipes():
    """Move the protocol pipes (stdin, stdout) to private descriptors; fds 0, 1 and 2 then point at /dev/null.

    Returns:
        ``(rfile, wfile)``: text files for the JSON lines from and to the parent.
    """
    rfd, wfd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    return os.fdopen(rfd, "r", encoding="utf-8", newline="\n"), os.fdopen(wfd, "w", encoding="utf-8", newline="\n")


def _make_stub(name, params, doc, call):
    """The tool function ``name``: checks its arguments like Python would, then ``call(name, arguments)``."""

    def stub(*args, **kwargs):
        if len(args) > len(params):
            raise TypeError(f"{name}() takes {len(params)} arguments but {len(args)} were given")
        arguments = dict(zip(params, args))
        for key, value in kwargs.items():
            if key in arguments:
                raise TypeError(f"{name}() got multiple values for argument {key!r}")
            arguments[key] = value
        try:
            json.dumps(arguments)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name}(): arguments must be JSON values ({exc})") from None
        return call(name, arguments)

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = doc
    return stub


def _run_block(msg, namespace, cpu_total, output_limit):
    """Run one code block with its CPU allowance, its output captured; ``(capture, error text or None)``."""
    capture = _Capture(output_limit)
    error = None
    used = sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
    soft = min(cpu_total, int(used + float(msg.get("cpu", 5))) + 1)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, cpu_total))
    sys.stdout = sys.stderr = capture
    try:
        code = compile(msg["code"], "<code>", "exec")
        exec(code, namespace)
    except _Stop:
        pass
    except SyntaxError as exc:
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    except BaseException as exc:  # the agent's error, reported back as the observation
        error = _agent_traceback(exc)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    if len(error or "") > 4000:
        error = error[:2000] + "\n...\n" + error[-2000:]
    return capture, error


def _agent_traceback(exc):
    """The traceback of an error in the agent's code: from its first frame on, without this file's frames."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != "<code>":
        tb = tb.tb_next
    try:
        lines = traceback.format_exception(type(exc), exc, tb)
        return "".join(line for line in lines if 'File "/sandbox/' not in line).strip()
    except BaseException:
        return type(exc).__name__


def _main():
    memory, cpu_total, output_limit = (int(a) for a in sys.argv[1:4])
    confine(memory, cpu_total)
    rfile, wfile = protocol_pipes()

    def send(msg):
        wfile.write(json.dumps(msg, ensure_ascii=False, default=repr) + "\n")
        wfile.flush()

    def receive():
        line = rfile.readline()
        if not line:
            os._exit(0)
        return json.loads(line)

    def on_xcpu(signum, frame):
        raise CPUTimeExceeded("the code block used more CPU time than allowed")

    signal.signal(signal.SIGXCPU, on_xcpu)

    calling = threading.Lock()  # threads of one block take turns: one call in flight at a time
    current = {"block": None, "seq": 0}

    def call(name, arguments):
        with calling:
            current["seq"] += 1
            seq = current["seq"]
            send({"op": "call", "block": current["block"], "seq": seq, "name": name, "arguments": arguments})
            while True:  # skip anything that is not the answer to this call
                reply = receive()
                if reply.get("op") == "result" and reply.get("seq") == seq:
                    break
        if reply.get("stop"):
            raise _Stop()
        if not reply.get("ok"):
            raise ToolError(reply.get("error", "the call failed"))
        return reply.get("value")

    namespace = {}

    def setup(tools):
        namespace.clear()
        namespace.update({"__name__": "__main__", "__builtins__": __builtins__, "ToolError": ToolError})
        for tool in tools:
            namespace[tool["name"]] = _make_stub(tool["name"], tool.get("params", []), tool.get("doc", ""), call)

    setup([])
    send({"op": "hello"})
    while True:
        msg = receive()
        op = msg.get("op")
        if op == "setup":
            setup(msg.get("tools", []))
            continue
        if op != "run":
            continue
        current["block"] = msg.get("block")
        capture, error = _run_block(msg, namespace, cpu_total, output_limit)
        send({"op": "done", "block": current["block"], "output": capture.text(), "dropped": capture.dropped, "error": error})


if __name__ == "__main__":
    _main()
