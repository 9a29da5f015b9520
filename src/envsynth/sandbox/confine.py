"""How a sandboxed worker is confined: the seccomp filter and bubblewrap's view of the machine.

The seccomp filter refuses new processes (``fork``/``vfork``/``clone`` without
``CLONE_THREAD``) and memory outside the address space; bubblewrap's options give a
read-only view of the Python installation with its installed packages hidden, the
worker's own files copied in (no host path appears inside), a read-only /dev and a
size-limited /tmp. :mod:`envsynth.sandbox.launcher` detects which of these work here and
starts workers with them.
"""

from __future__ import annotations

import os
import platform
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

NOBODY = 65534

# --- seccomp: refuse new processes, allow threads ---------------------------------------

_ARCH = {  # machine -> (AUDIT_ARCH, clone, clone3, [fork, vfork], [shared memory], getrandom)
    # shared memory outside the address space: memfd_create, memfd_secret, shmget, msgget, mq_open
    "x86_64": (0xC000003E, 56, 435, [57, 58], [319, 447, 29, 68, 240], 318),
    "aarch64": (0xC00000B7, 220, 435, [], [279, 447, 194, 186, 180], 278),
}
_EPERM, _ENOSYS = 1, 38
_CLONE_THREAD = 0x00010000


def seccomp_filter(deterministic: bool = False) -> bytes | None:
    """A classic BPF program for ``bwrap --seccomp``: no new processes, no memory outside RLIMIT_AS.

    Refused with EPERM: ``fork``, ``vfork``, ``clone`` without ``CLONE_THREAD``, and the
    calls that make memory the address-space limit does not see (``memfd_create``,
    ``memfd_secret``, System V ``shmget`` / ``msgget``, ``mq_open``). ``clone3`` gets
    ENOSYS (its flags sit in memory the filter cannot read), which makes glibc fall back
    to ``clone`` for threads. With ``deterministic`` ``getrandom`` gets ENOSYS too, so
    the C library and Python read ``/dev/urandom``, which the tool worker's sandbox
    makes a copy of ``/dev/zero``. Other architectures (x32, i386 entry points) are
    refused. None on machines this table does not know.
    """
    arch = _ARCH.get(platform.machine())
    if arch is None:
        return None
    audit, clone, clone3, forks, shared, getrandom = arch
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | _EPERM, 0x00050000 | _ENOSYS
    ld_abs, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    prog: list[tuple[int, int, int, int]] = []
    # Labels resolved by hand: the last three instructions are ALLOW, EPERM, ENOSYS.
    body: list[tuple[str, Any, str | int, str | int]] = [
        ("ld", 4, 0, 0),
        ("jeq", audit, 0, "eperm"),
        ("ld", 0, 0, 0),
        ("jge", 0x40000000, "eperm", 0),
        *[("jeq", nr, "eperm", 0) for nr in [*forks, *shared]],
        *([("jeq", getrandom, "enosys", 0)] if deterministic else []),
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


def _interpreter() -> str:
    """The real interpreter binary (not a venv symlink chain or a pyenv shim)."""
    return os.path.realpath(sys.executable)


_SIZE_OPTION: bool | None = None


def _bwrap_has_size() -> bool:
    """Whether this bubblewrap knows ``--size`` (a size-limited ``--tmpfs``)."""
    global _SIZE_OPTION
    if _SIZE_OPTION is None:
        try:
            text = subprocess.run(["bwrap", "--help"], capture_output=True, timeout=10).stdout.decode(errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        _SIZE_OPTION = "--size" in text
    return _SIZE_OPTION


def package_dirs() -> list[str]:
    """Directories of installed Python packages under the paths bound into the sandbox (hidden there)."""
    minor = f"python3.{sys.version_info[1]}"
    roots = {"/usr", "/usr/local", *_python_roots()}
    found: set[str] = set()
    for root in roots:
        for sub in (f"lib/{minor}/site-packages", f"lib/{minor}/dist-packages", "lib/python3/dist-packages", "lib/python3/site-packages"):
            path = os.path.join(root, sub)
            if os.path.isdir(path) and not os.path.islink(path):
                found.add(path)
    return sorted(found)


def _python_roots() -> set[str]:
    return {os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(_interpreter()))}


class _Files:
    """Files copied into the sandbox (``bwrap --ro-bind-data``): no host path appears in it."""

    def __init__(self, paths: tuple[Path, ...]) -> None:
        self.fds: list[int] = []
        self.args: list[str] = []
        for path in paths:
            fd = os.memfd_create(f"envsynth-{path.name}", 0)
            self.fds.append(fd)
            os.write(fd, path.read_bytes())
            os.lseek(fd, 0, os.SEEK_SET)
            self.args += ["--ro-bind-data", str(fd), inside(path)]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def _bwrap_args(files: _Files | None = None, tmp: int = 64 << 20, deterministic: bool = False) -> list[str]:
    """bubblewrap's options: the read-only view, /tmp of ``tmp`` bytes, a read-only /dev."""
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args += ["--uid", str(NOBODY), "--gid", str(NOBODY), "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for root in sorted(_python_roots()):
        if not root.startswith("/usr") and os.path.isdir(root):
            args += ["--ro-bind", root, root]
    sized = _bwrap_has_size()
    for hidden in package_dirs():  # the base interpreter's packages: an empty read-only dir instead
        args += [*(["--size", "4096"] if sized else []), "--tmpfs", hidden, "--remount-ro", hidden]
    if files is not None:
        args += files.args
    args += ["--dev", "/dev"]
    if deterministic:  # randomness the C library or Python read from the kernel: zeros
        args += ["--dev-bind", "/dev/zero", "/dev/urandom", "--dev-bind", "/dev/zero", "/dev/random"]
    args += ["--remount-ro", "/dev", "--proc", "/proc"]
    if tmp > 0 and sized:
        args += ["--size", str(tmp), "--tmpfs", "/tmp"]
    else:  # no size-limited tmpfs here: /tmp stays an empty read-only directory
        args += ["--dir", "/tmp"]
    args += ["--remount-ro", "/", "--chdir", "/tmp", "--setenv", "HOME", "/tmp", "--setenv", "PATH", "/usr/bin:/bin"]
    return args


def inside(path: Path) -> str:
    """Where a file bound into the sandbox appears there: ``/sandbox/<name>``."""
    return f"/sandbox/{path.name}"


def _seccomp_fd(program: bytes) -> int:
    fd = os.memfd_create("envsynth-seccomp", 0)  # not CLOEXEC-free by default: passed via pass_fds
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
