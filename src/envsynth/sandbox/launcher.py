"""Starting sandboxed workers: bubblewrap when usable, a restricted subprocess otherwise.

The mode is detected once per process (:func:`detect`). With bubblewrap a worker runs
with no network, no capabilities, uid/gid 65534, its own pid/ipc/uts namespaces, a
read-only view of the Python installation and of ``worker.py`` only (no /etc, no /home,
no corpus, no envsynth package), a tmpfs /tmp, a seccomp filter refusing new
processes (``fork``/``vfork``/``clone`` without ``CLONE_THREAD``), and rlimits on memory
and CPU. Without bubblewrap the worker is a plain subprocess with the same rlimits, a
fresh network namespace when ``unshare`` works and uid 65534 when started as root; its
filesystem isolation is weaker (it can read whatever uid 65534 may read).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKER_SOURCE = Path(__file__).with_name("worker.py")
WORKER_INSIDE = "/sandbox/worker.py"
NOBODY = 65534
MAX_LINE = 4 << 20  # a protocol line longer than this kills the worker


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required but cannot be used here."""


class SandboxWarning(UserWarning):
    """The sandbox runs without bubblewrap: weaker filesystem isolation."""


class WorkerDied(RuntimeError):
    """The worker exited, was killed, or broke the protocol."""


class WorkerTimeout(RuntimeError):
    """The worker did not answer within the deadline."""


@dataclass(frozen=True)
class Limits:
    """Per code block limits (wall and CPU seconds, output characters) and per worker memory."""

    wall: float = 10.0
    cpu: float = 5.0
    memory: int = 512 << 20
    output: int = 8192
    cpu_total: int = 600  # hard RLIMIT_CPU of a worker over its whole life (one episode)


# --- seccomp: refuse new processes, allow threads ---------------------------------------

_ARCH = {  # machine -> (AUDIT_ARCH, clone, clone3, [fork, vfork])
    "x86_64": (0xC000003E, 56, 435, [57, 58]),
    "aarch64": (0xC00000B7, 220, 435, []),
}
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000


def seccomp_filter() -> bytes | None:
    """A classic BPF program for ``bwrap --seccomp``: no fork/vfork, no clone without CLONE_THREAD.

    ``clone3`` gets ENOSYS (its flags sit in memory the filter cannot read), which makes
    glibc fall back to ``clone`` for threads. Other architectures (x32, i386 entry points)
    are refused. None on machines this table does not know.
    """
    arch = _ARCH.get(platform.machine())
    if arch is None:
        return None
    audit, clone, clone3, forks = arch
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | _EPERM, 0x00050000 | _ENOSYS
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog: list[tuple[int, int, int, int]] = []
    # Labels resolved by hand: the last three instructions are ALLOW, EPERM, ENOSYS.
    body: list[tuple[str, Any, str | int, str | int]] = [
        ("ld", 4, 0, 0),
        ("jeq", audit, 0, "eperm"),
        ("ld", 0, 0, 0),
        ("jge", 0x40000000, "eperm", 0),
        *[("jeq", nr, "eperm", 0) for nr in forks],
        ("jeq", clone3, "enosys", 0),
        ("jeq", clone, 0, "allow"),
        ("ld", 16, 0, 0),
        ("jset", _CLONE_THREAD, "allow", "eperm"),
    ]
    n = len(body)
    target = {"allow": n, "eperm": n + 1, "enosys": n + 2}
    for i, (op, k, jt, jf) in enumerate(body):

        def rel(label: str | int, at: int = i) -> int:
            return label if isinstance(label, int) else target[label] - at - 1

        code = {"ld": ld_abs, "jeq": jeq, "jge": jge, "jset": jset}[op]
        prog.append((code, rel(jt) if op != "ld" else 0, rel(jf) if op != "ld" else 0, k))
    prog += [(ret, 0, 0, allow), (ret, 0, 0, eperm), (ret, 0, 0, enosys)]
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


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


def _interpreter() -> str:
    """The real interpreter binary (not a venv symlink chain or a pyenv shim)."""
    return os.path.realpath(sys.executable)


def _bwrap_args(script: Path = WORKER_SOURCE, modules: tuple[Path, ...] = ()) -> list[str]:
    args = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--uid",
        str(NOBODY),
        "--gid",
        str(NOBODY),
        "--ro-bind",
        "/usr",
        "/usr",
    ]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    roots = {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(_interpreter()))}
    for root in sorted(roots):
        if not root.startswith("/usr") and os.path.isdir(root):
            args += ["--ro-bind", root, root]
    args += ["--ro-bind", str(script), inside(script)]
    for module in modules:
        args += ["--ro-bind", str(module), inside(module)]
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--chdir",
        "/tmp",
        "--setenv",
        "HOME",
        "/tmp",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
    ]
    return args


def inside(path: Path) -> str:
    """Where a file bound into the sandbox appears there: ``/sandbox/<name>``."""
    return f"/sandbox/{path.name}"


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
                    err = _probe([*_bwrap_args(), "--seccomp", str(fd), *py], pass_fds=(fd,))
                finally:
                    os.close(fd)
                if err is None:
                    _MODE = Mode("bwrap", "bubblewrap with seccomp", seccomp=True)
                    return _MODE
            err = _probe([*_bwrap_args(), *py])
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


def _seccomp_fd(program: bytes) -> int:
    fd = os.memfd_create("envsynth-seccomp", 0)  # not CLOEXEC-free by default: passed via pass_fds
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


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

    ``modules`` are stdlib-only files the script loads by path (bound read-only at
    ``/sandbox/<name>`` under bubblewrap); their paths follow the three limit arguments.
    """

    def __init__(self, mode: Mode, limits: Limits, script: Path = WORKER_SOURCE, modules: tuple[Path, ...] = ()) -> None:
        self.mode = mode
        self.limits = limits
        worker_args = [str(limits.memory), str(limits.cpu_total), str(limits.output)]
        worker_args += [inside(m) if mode.isolated else str(m) for m in modules]
        py = [_interpreter(), "-I", "-S", "-B"]
        pass_fds: tuple[int, ...] = ()
        fd = None
        if mode.isolated:
            cmd = _bwrap_args(script, modules)
            if mode.seccomp:
                flt = seccomp_filter()
                assert flt is not None
                fd = _seccomp_fd(flt)
                cmd += ["--seccomp", str(fd)]
                pass_fds = (fd,)
            cmd += [*py, inside(script), *worker_args]
            cwd = None
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
                pass_fds=pass_fds,
                cwd=cwd,
                env=env,
                start_new_session=True,
                bufsize=0,
            )
        finally:
            if fd is not None:
                os.close(fd)
        self._buf = b""
        self._hello = False
        self.dead = False

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

    def receive(self, deadline: float) -> dict[str, Any]:
        """The next message, or WorkerTimeout at ``deadline`` (monotonic), WorkerDied on EOF/garbage."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerTimeout("no answer before the deadline")
            ready, _, _ = select.select([fd], [], [], left)
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
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            msg = json.loads(line)
        except ValueError:
            self.kill()
            raise WorkerDied("the worker broke the protocol") from None
        if not isinstance(msg, dict):
            self.kill()
            raise WorkerDied("the worker broke the protocol")
        return msg

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

    def _children(self) -> list[int]:
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
