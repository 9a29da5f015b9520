"""Starting sandboxed workers: bubblewrap when usable, a restricted subprocess otherwise.

The mode is detected once per process (:func:`detect`). With bubblewrap a worker runs
with no network, no capabilities, uid/gid 65534, its own pid/ipc/uts namespaces, a
read-only view of the Python installation (its installed packages hidden) and a copy of
``worker.py`` (no /etc, no /home, no corpus, no envsynth package, no host path of the
checkout), a read-only /dev, a /tmp tmpfs of ``Limits.tmp`` bytes, a seccomp filter
refusing new processes (``fork``/``vfork``/``clone`` without ``CLONE_THREAD``) and memory
outside the address space (memfd, System V shm and message queues, POSIX message queues),
and rlimits on address space and CPU. The parent also measures a worker's CPU time
(:meth:`Worker.cpu_seconds`), kills it past its limit, and stops it between blocks. Without bubblewrap the worker is a plain subprocess with the same rlimits, a
fresh network namespace when ``unshare`` works and uid 65534 when started as root; its
filesystem isolation is weaker (it can read whatever uid 65534 may read).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envsynth.errors import SandboxError
from envsynth.sandbox.confine import (  # re-exported: the launcher's names before the split
    NOBODY,
    _bwrap_args,
    _Files,
    _interpreter,
    _seccomp_fd,
    inside,
    seccomp_filter,
)

WORKER_SOURCE = Path(__file__).with_name("worker.py")
WORKER_INSIDE = "/sandbox/worker.py"
MAX_LINE = 4 << 20  # a protocol line longer than this kills the worker


class SandboxUnavailable(SandboxError):
    """bubblewrap was required but cannot be used here."""


class SandboxWarning(UserWarning):
    """The sandbox runs without bubblewrap: weaker filesystem isolation."""


class WorkerDied(SandboxError):
    """The worker exited, was killed, or broke the protocol."""


class WorkerTimeout(SandboxError):
    """The worker did not answer within the deadline."""


class WorkerCPUExceeded(WorkerDied):
    """The worker used more CPU time (all its threads) than the parent allows; it was killed."""


MAX_DEPTH = 64  # a protocol message nested deeper than this kills the worker
CPU_GRACE = 1.5  # the parent kills a worker this many CPU seconds past its limit (the worker's own SIGXCPU comes first)
_CPU_POLL = 0.05
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Limits:
    """Per code block limits (wall and CPU seconds, output characters) and per worker memory.

    ``memory`` is the worker's whole memory budget: under bubblewrap ``tmp`` bytes of it
    are the size of its /tmp (a tmpfs; 0: /tmp is read-only), the rest is its address
    space (RLIMIT_AS). Other shared memory (memfd, System V shm and message queues,
    /dev/shm) is refused in the sandbox, so nothing else can hold memory for it.
    """

    wall: float = 10.0
    cpu: float = 5.0
    memory: int = 512 << 20
    output: int = 8192
    cpu_total: int = 600  # hard RLIMIT_CPU of a worker over its whole life (one episode)
    tmp: int = 64 << 20

    def __post_init__(self) -> None:
        if self.tmp < 0 or (self.memory > 0 and self.tmp >= self.memory):
            raise ValueError(f"Limits: tmp ({self.tmp} bytes) must be at least 0 and below memory ({self.memory} bytes)")

    @property
    def address_space(self) -> int:
        """The RLIMIT_AS of a worker: its memory less its /tmp (0: no limit)."""
        return self.memory - self.tmp if self.memory > 0 else 0


# --- mode detection ---------------------------------------------------------------------


@dataclass(frozen=True)
class Mode:
    """How workers are started here: ``"bwrap"`` or ``"subprocess"``, and why."""

    name: str
    reason: str
    prefix: tuple[str, ...] = field(default=())
    seccomp: bool = False

    @property
    def isolated(self) -> bool:
        return self.name == "bwrap"


def _probe(cmd: list[str], **kw: Any) -> str | None:
    """None if ``cmd`` runs and prints ok, else what went wrong."""
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=20, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if proc.returncode != 0 or proc.stdout.strip() != b"ok":
        return (proc.stderr.decode(errors="replace").strip() or f"exit {proc.returncode}")[:300]
    return None


_MODE: Mode | None = None
_MODE_LOCK = threading.Lock()


def detect(refresh: bool = False) -> Mode:
    """Detect once whether bubblewrap works here; otherwise the subprocess fallback."""
    global _MODE
    with _MODE_LOCK:
        if _MODE is not None and not refresh:
            return _MODE
        py = [_interpreter(), "-I", "-S", "-c", "print('ok')"]
        reason = "bwrap not found on PATH"
        if shutil.which("bwrap"):
            flt = seccomp_filter()
            if flt is not None:
                fd = _seccomp_fd(flt)
                try:
                    err = _probe([*_bwrap_args(), "--seccomp", str(fd), *py], pass_fds=(fd,), cwd="/")
                finally:
                    os.close(fd)
                if err is None:
                    _MODE = Mode("bwrap", "bubblewrap with seccomp", seccomp=True)
                    return _MODE
            err = _probe([*_bwrap_args(), *py], cwd="/")
            if err is None:
                _MODE = Mode("bwrap", "bubblewrap (no seccomp filter for this machine: fork is not blocked)")
                return _MODE
            reason = f"bwrap is not usable: {err}"
        _MODE = fallback_mode(reason)
        return _MODE


def fallback_mode(reason: str = "bubblewrap not used") -> Mode:
    """The subprocess fallback: rlimits, ``unshare --net`` and uid 65534 (``setpriv``) where they work."""
    py = [_interpreter(), "-I", "-S", "-c", "print('ok')"]
    prefix: list[str] = []
    if shutil.which("unshare") and _probe(["unshare", "--net", *py]) is None:
        prefix += ["unshare", "--net"]
    if os.geteuid() == 0 and shutil.which("setpriv"):
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        if _probe([*prefix, *drop, *py]) is None:
            prefix += drop
    return Mode("subprocess", reason, prefix=tuple(prefix))


def resolve_mode(require_bwrap: bool = False) -> Mode:
    """The detected mode; raises if bubblewrap is required and missing, warns on the fallback."""
    mode = detect()
    if mode.isolated:
        return mode
    if require_bwrap:
        raise SandboxUnavailable(f"code sandbox needs bubblewrap: {mode.reason}")
    warnings.warn(
        f"code sandbox without bubblewrap ({mode.reason}): workers are subprocesses with rlimits"
        f"{', no network' if 'unshare' in mode.prefix else ', WITH network'}"
        f"{', uid 65534' if 'setpriv' in mode.prefix else ''}; filesystem isolation is weaker",
        SandboxWarning,
        stacklevel=3,
    )
    return mode


# --- one worker -------------------------------------------------------------------------


class Worker:
    """One sandboxed Python process speaking the line protocol of ``worker.py`` (or of ``script``).

    ``modules`` are stdlib-only files the script loads by path (copied read-only to
    ``/sandbox/<name>`` under bubblewrap); their paths follow the three limit arguments.
    ``deterministic`` (the tool worker) makes the kernel's randomness zeros in the sandbox.
    """

    def __init__(
        self, mode: Mode, limits: Limits, script: Path = WORKER_SOURCE, modules: tuple[Path, ...] = (), deterministic: bool = False
    ) -> None:
        self.mode = mode
        self.limits = limits
        worker_args = [str(limits.address_space), str(limits.cpu_total), str(limits.output)]
        worker_args += [inside(m) if mode.isolated else str(m) for m in modules]
        py = [_interpreter(), "-I", "-S", "-B"]
        pass_fds: list[int] = []
        files = None
        if mode.isolated:
            files = _Files((script, *modules))
            pass_fds += files.fds
            cmd = _bwrap_args(files, limits.tmp, deterministic)
            if mode.seccomp:
                flt = seccomp_filter(deterministic)
                if flt is None:
                    raise SandboxUnavailable("no seccomp filter for this machine")
                pass_fds.append(_seccomp_fd(flt))
                cmd += ["--seccomp", str(pass_fds[-1])]
            cmd += [*py, inside(script), *worker_args]
            cwd = "/"
        else:
            cmd = [*mode.prefix, *py, str(script), *worker_args]
            cwd = "/tmp"
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=tuple(pass_fds),
                cwd=cwd,
                env=env,
                start_new_session=True,
                bufsize=0,
            )
        finally:
            for fd in pass_fds:
                os.close(fd)
        self._buf = b""
        self._hello = False
        self.dead = False
        self.paused = False
        self._pid_list: list[int] | None = None
        self._cpu_checked = 0.0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return not self.dead and self.proc.poll() is None

    def ready(self, timeout: float = 10.0) -> None:
        """Wait for the worker's hello (it has set its limits and waits for work)."""
        if not self._hello:
            msg = self.receive(time.monotonic() + timeout)
            if msg.get("op") != "hello":
                self.kill()
                raise WorkerDied(f"unexpected first message {msg!r}")
            self._hello = True

    def send(self, msg: dict[str, Any], deadline: float | None = None) -> None:
        """Write one message; WorkerTimeout if the worker stops reading before ``deadline``."""
        data = (json.dumps(msg, ensure_ascii=False, default=str) + "\n").encode()
        if deadline is None:
            deadline = time.monotonic() + 10.0
        assert self.proc.stdin is not None
        try:
            fd = self.proc.stdin.fileno()
            os.set_blocking(fd, False)
            view = memoryview(data)
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise WorkerTimeout("the worker stopped reading")
                _, ready, _ = select.select([], [fd], [], left)
                if ready:
                    with contextlib.suppress(BlockingIOError):
                        view = view[os.write(fd, view) :]
        except (BrokenPipeError, OSError, ValueError) as exc:
            self.kill()
            raise WorkerDied(f"the worker is gone ({exc})") from None

    def receive(self, deadline: float, cpu_limit: float | None = None) -> dict[str, Any]:
        """The next message, or WorkerTimeout at ``deadline`` (monotonic), WorkerDied on EOF/garbage.

        With ``cpu_limit`` (CPU seconds of the worker's processes, see :meth:`cpu_seconds`)
        the worker is killed with WorkerCPUExceeded once it has used more, whatever its
        code did with SIGXCPU. A message that is not a JSON object, or is nested deeper
        than :data:`MAX_DEPTH`, kills the worker (WorkerDied): decoding never raises here.
        """
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            self._check_cpu(cpu_limit)
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout("no answer before the deadline")
            ready, _, _ = select.select([fd], [], [], left if cpu_limit is None else min(left, _CPU_POLL))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.kill()
                raise WorkerDied(self._death_reason())
            self._buf += chunk
            if len(self._buf) > MAX_LINE and b"\n" not in self._buf:
                self.kill()
                raise WorkerDied("the worker sent an oversized message")
        self._check_cpu(cpu_limit)
        line, _, self._buf = self._buf.partition(b"\n")
        msg = decode_message(line)
        if msg is None:
            self.kill()
            raise WorkerDied("the worker broke the protocol (a message that is not a JSON object of at most 64 levels)")
        return msg

    def _check_cpu(self, cpu_limit: float | None) -> None:
        if cpu_limit is None:
            return
        now = time.monotonic()
        if now - self._cpu_checked < _CPU_POLL:
            return
        self._cpu_checked = now
        used = self.cpu_seconds()
        if used > cpu_limit:
            self.kill()
            raise WorkerCPUExceeded(f"the worker used {used:.1f} s of CPU time, past its limit")

    def _pids(self) -> list[int]:
        """The worker's processes as the host sees them: bwrap's, then the Python process (and any child)."""
        if self._pid_list is not None:
            return self._pid_list
        pids, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop(0)
            pids.append(pid)
            try:
                todo += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
            except OSError:
                continue
        if self.mode.seccomp and self._hello and len(pids) >= 3:  # no process can be added: keep the list
            self._pid_list = pids
        return pids

    def _python_pids(self) -> list[int]:
        """The sandbox's Python process (and any child), without bubblewrap's processes."""
        pids = self._pids()
        return pids[2:] if self.mode.isolated else pids

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system, every thread) used so far by the worker's Python process (and any child)."""
        total = 0
        for pid in self._python_pids():
            try:
                stat = Path(f"/proc/{pid}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            total += int(fields[11]) + int(fields[12])
        return total / _TICK

    def _signal(self, sig: int) -> None:
        for pid in self._python_pids():  # not bubblewrap's two processes, which only wait
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    def pause(self) -> None:
        """Stop every thread of the worker (SIGSTOP) until :meth:`resume`: nothing runs between blocks.

        Also when the block left no thread: a signal handler (an interval timer's) would
        run the code's Python in the main thread while it waits for the next message.
        """
        if not self.paused and self.alive():
            self._signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        """Let a paused worker run again (SIGCONT)."""
        if self.paused:
            self.paused = False
            self._signal(signal.SIGCONT)

    def _death_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return "the worker closed its pipe"
        if code < 0:
            try:
                return f"the worker was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"the worker was killed by signal {-code}"
        return f"the worker exited with status {code}"

    def _children(self) -> list[int]:  # the outer bwrap's children
        try:
            text = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def kill(self, grace: float = 0.0) -> None:
        """Stop the worker and everything it started; reap it.

        With ``grace`` the worker is first asked to exit (its stdin is closed) and given
        that many seconds. Then bubblewrap's inner process (the sandbox's pid 1, whose
        death takes every process in the sandbox with it) is killed before the outer one,
        so the outer bwrap reaps it and no zombie is left to the host's init.
        """
        self.dead = True
        self.resume()  # a stopped worker could not see its pipe close, nor its bwrap reap it
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if self.proc.poll() is None and grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        if self.proc.poll() is None:
            for child in self._children():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(child, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=0.5)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def decode_message(line: bytes) -> dict[str, Any] | None:
    """One protocol line as a dict, or None when it is not a JSON object nested at most :data:`MAX_DEPTH` levels.

    Never raises: invalid UTF-8 or JSON, and nesting too deep for the decoder, are None.
    """
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict):
        return None
    if line.count(b"[") + line.count(b"{") > MAX_DEPTH and _depth(msg) > MAX_DEPTH:
        return None
    return msg


def _depth(value: Any) -> int:
    """How deeply lists and dicts nest in ``value`` (iterative: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                return level
            stack += [(v, level + 1) for v in item if isinstance(v, (list, dict))]
    return deepest
