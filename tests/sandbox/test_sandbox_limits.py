"""Issue 13 (sandbox): memory in every form, CPU of threads, what /proc shows, the parent's decoding.

Each test runs real code blocks in real workers and checks the effect from the host side
where it can.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import FORCE_FALLBACK

import envsynth
from envsynth.corpus import Corpus
from envsynth.sandbox import CodeActEpisode, CodeSandbox, Limits, WorkerPool, detect, fallback_mode
from envsynth.tasks.model import Task

BWRAP = detect().isolated and not FORCE_FALLBACK
SECCOMP = BWRAP and detect().seccomp
only_bwrap = pytest.mark.skipif(not BWRAP, reason="needs bubblewrap (the fallback's limits are weaker, see docs/sandbox.md)")
only_seccomp = pytest.mark.skipif(not SECCOMP, reason="needs bubblewrap with the seccomp filter")
CHECKOUT = str(Path(envsynth.__file__).resolve().parents[2])
LIMITS = Limits(wall=20.0, cpu=1.0, memory=256 << 20, tmp=32 << 20, output=4000)


@pytest.fixture(scope="module")
def slow_sandbox() -> Iterator[CodeSandbox]:
    """A long wall time: only the CPU limit can stop a spinning block before it."""
    with CodeSandbox(workers=1, limits=LIMITS) as sb:
        if FORCE_FALLBACK:
            sb.pool.close()
            sb.pool = WorkerPool(size=1, limits=LIMITS, mode=fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1"))
        yield sb
        sb.pool.close()


@pytest.fixture
def ep(sbx_corpus: Corpus, slow_sandbox: CodeSandbox) -> Iterator[CodeActEpisode]:
    episode = slow_sandbox.episode(sbx_corpus.start(sbx_corpus.tasks[0]))
    yield episode
    episode.close()


def still_works(ep: CodeActEpisode) -> None:
    obs = ep.run("print(6 * 7)")
    assert obs.error is None and obs.text.strip() == "42", obs.text


def descendants(pid: int) -> list[int]:
    """A process and its descendants, parents first (the host's /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        try:
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
    return out


def sandbox_cpu(pid: int) -> float:
    """CPU seconds of a process and all its descendants, read from the host's /proc."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


# --- item 5: memory in any form counts against the worker's budget ---------------------------


@only_bwrap
def test_tmp_is_a_tmpfs_of_the_configured_size(ep: CodeActEpisode) -> None:
    code = (
        "import os\n"
        "st = os.statvfs('/tmp')\n"
        "print(st.f_blocks * st.f_frsize)\n"
        "written, error = 0, None\n"
        "try:\n"
        "    for i in range(64):\n"  # at most 64 files of 4 MB (256 MB, the whole memory limit)
        "        with open(f'/tmp/f{i}', 'wb') as f:\n"
        "            for _ in range(4):\n"
        "                f.write(b'x' * (1 << 20))\n"
        "                written += 1 << 20\n"
        "except OSError as exc:\n"
        "    error = exc.errno\n"
        "print(written, error)\n"
    )
    obs = ep.run(code)
    assert obs.error is None, obs.text
    size, rest = obs.text.strip().split("\n")
    written, errno = rest.split()
    assert int(size) <= LIMITS.tmp
    assert int(written) <= LIMITS.tmp and errno == "28"  # ENOSPC: the allocation is refused
    if os.geteuid() == 0:  # seen from the host: the worker's /tmp holds at most its size
        host = os.statvfs(f"/proc/{descendants(ep._worker.pid)[-1]}/root/tmp")
        assert host.f_blocks * host.f_frsize <= LIMITS.tmp
        assert (host.f_blocks - host.f_bfree) * host.f_frsize <= LIMITS.tmp
    still_works(ep)


@only_bwrap
@pytest.mark.parametrize("path", ["/dev/shm/x", "/dev/x", "/x"])
def test_dev_and_dev_shm_are_not_writable(ep: CodeActEpisode, path: str) -> None:
    obs = ep.run(f"open({path!r}, 'wb').write(b'x' * 1000)")
    assert obs.error and ("OSError" in obs.error or "PermissionError" in obs.error or "FileNotFoundError" in obs.error), obs.text
    still_works(ep)


@only_seccomp
def test_memfd_is_refused(ep: CodeActEpisode) -> None:
    code = (
        "import os\n"
        "fds = []\n"
        "for i in range(12):\n"  # 12 x 32 MB: beyond the 256 MB budget if allowed
        "    fd = os.memfd_create(f'm{i}')\n"
        "    os.ftruncate(fd, 32 << 20)\n"
        "    os.pwrite(fd, b'x' * (32 << 20), 0)\n"
        "    fds.append(fd)\n"
        "print(len(fds))\n"
    )
    obs = ep.run(code)
    assert obs.error and "PermissionError" in obs.error, obs.text
    still_works(ep)


@only_seccomp
def test_shared_memory_and_message_queues_are_refused(ep: CodeActEpisode) -> None:
    code = (
        "import ctypes, ctypes.util\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "shm = libc.shmget(0, ctypes.c_size_t(1 << 30), 0o1600)\n"  # IPC_PRIVATE, IPC_CREAT | 0600
        "e1 = ctypes.get_errno()\n"
        "msq = libc.msgget(0, 0o1600)\n"
        "e2 = ctypes.get_errno()\n"
        "mq = libc.mq_open(b'/envsynth', 0o102, 0o600, None)\n"  # O_CREAT | O_RDWR
        "e3 = ctypes.get_errno()\n"
        "print(shm, e1, msq, e2, mq, e3)\n"
    )
    obs = ep.run(code)
    assert obs.error is None, obs.text
    assert obs.text.split() == ["-1", "1", "-1", "1", "-1", "1"]  # EPERM
    still_works(ep)


def test_memory_is_split_between_tmp_and_the_address_space() -> None:
    assert Limits(memory=512 << 20, tmp=64 << 20).address_space == 448 << 20
    with pytest.raises(ValueError, match="tmp"):
        Limits(memory=64 << 20, tmp=64 << 20)


def test_heap_beyond_the_address_space_is_refused(ep: CodeActEpisode) -> None:
    obs = ep.run(f"b = bytearray({LIMITS.memory - LIMITS.tmp // 2})")
    assert obs.error and "MemoryError" in obs.error, obs.text
    still_works(ep)


# --- item 6: CPU of threads, enforced by the parent ----------------------------------------------

SPIN = "import signal, threading\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\ndef spin():\n    while True:\n        pass\n"


def test_threads_ignoring_sigxcpu_are_stopped_by_the_parent(ep: CodeActEpisode) -> None:
    t0 = time.monotonic()
    obs = ep.run(SPIN + "for _ in range(2):\n    threading.Thread(target=spin, daemon=True).start()\nspin()")
    assert time.monotonic() - t0 < LIMITS.wall, obs.text
    assert obs.error and "CPU" in obs.error and "restarted" in obs.error, obs.text
    still_works(ep)


def test_a_thread_does_not_run_between_blocks_and_its_cpu_counts(ep: CodeActEpisode) -> None:
    obs = ep.run(SPIN + "threading.Thread(target=spin, daemon=True).start()")
    assert obs.error is None, obs.text
    pid = ep._worker.pid
    before = sandbox_cpu(pid)
    time.sleep(1.5)
    assert sandbox_cpu(pid) - before < 0.05  # stopped between blocks
    obs = ep.run("import time\ntime.sleep(15)")  # the thread runs again during this block: its CPU is the block's
    assert obs.error and obs.error.startswith("CPUTimeExceeded"), obs.text
    still_works(ep)


# --- item 9: /proc and the base interpreter's packages ---------------------------------------


@only_bwrap
def test_proc_does_not_reveal_the_checkout_path(ep: CodeActEpisode) -> None:
    code = (
        "import os\n"
        "hits = []\n"
        "for pid in [p for p in os.listdir('/proc') if p.isdigit()] + ['self', 'thread-self']:\n"
        "    base = '/proc/' + pid\n"
        "    for name in ('cmdline', 'environ', 'mountinfo', 'mounts', 'maps', 'status', 'stat', 'comm'):\n"
        "        try:\n"
        "            with open(base + '/' + name, 'rb') as f:\n"
        "                data = f.read()\n"
        "        except OSError:\n"
        "            continue\n"
        f"        if {CHECKOUT.encode()!r} in data:\n"
        "            hits.append(base + '/' + name)\n"
        "    for link in ('cwd', 'root', 'exe'):\n"
        "        try:\n"
        f"            if {CHECKOUT!r} in os.readlink(base + '/' + link):\n"
        "                hits.append(base + '/' + link)\n"
        "        except OSError:\n"
        "            pass\n"
        "print(hits)\n"
    )
    obs = ep.run(code)
    assert obs.error is None, obs.text
    assert obs.text.strip() == "[]", obs.text


@only_bwrap
def test_the_base_interpreters_packages_are_not_importable(ep: CodeActEpisode) -> None:
    site = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})["purelib"]
    dirs = [
        d
        for d in {site, "/usr/lib/python3/dist-packages", f"/usr/local/lib/python3.{sys.version_info[1]}/dist-packages"}
        if os.path.isdir(d)
    ]
    assert dirs
    code = (
        "import os, sys\n"
        f"dirs = {dirs!r}\n"
        "sys.path[:0] = dirs\n"
        "seen = []\n"
        "for d in dirs:\n"
        "    try:\n"
        "        seen += os.listdir(d)\n"
        "    except OSError:\n"
        "        pass\n"
        "found = []\n"
        "for name in ('pytest', 'yaml', 'pip', 'IPython', 'setuptools'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "        found.append(name)\n"
        "    except ImportError:\n"
        "        pass\n"
        "print(seen, found)\n"
    )
    obs = ep.run(code)
    assert obs.error is None, obs.text
    assert obs.text.strip() == "[] []", obs.text
    still_works(ep)


# --- item 3: the parent's decoding of worker messages is bounded ------------------------------


@pytest.mark.parametrize(
    "garbage",
    [
        "'[' * 5000",
        "'{\"a\":' * 5000",
        "json.dumps({'op': 'call', 'block': BLOCK, 'seq': 1, 'name': 'list_tools', 'arguments': {'app': NEST}})",
        "'\\xff\\xfe not json'",
    ],
)
def test_garbage_on_the_pipe_is_a_sandbox_error(ep: CodeActEpisode, garbage: str) -> None:
    code = (
        "import json, os, sys, time\n"
        "NEST = 0\n"
        "for _ in range(400):\n"
        "    NEST = [NEST]\n"
        "call = [c.cell_contents for c in list_tools.__closure__ if getattr(c.cell_contents, '__name__', '') == 'call'][0]\n"
        "BLOCK = [c.cell_contents for c in call.__closure__ if isinstance(c.cell_contents, dict)][0]['block']\n"
        f"line = ({garbage} + '\\n').encode('utf-8', 'surrogateescape')\n"
        "for fd in range(3, 12):\n"
        "    try:\n"
        "        os.write(fd, line)\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(0.5)\n"
    )
    obs = ep.run(code)
    assert obs.error is None or obs.error.startswith("SandboxError"), obs.text
    still_works(ep)
    assert not ep.done


class _GarbageAgent:
    """A code-mode policy whose first block writes a deeply nested line to the worker's pipe."""

    name = "garbage"
    model = "none"
    max_turns = 3
    max_tokens = None

    def __init__(self) -> None:
        from envsynth.agents.codeloop import CODE_SYSTEM_PROMPT
        from envsynth.llm.types import Usage

        self.system_prompt = CODE_SYSTEM_PROMPT
        self.usage = Usage()

    async def next_message(self, messages: list[dict], tools: list[dict]) -> dict:
        if sum(m.get("role") == "assistant" for m in messages):
            return {"role": "assistant", "content": "```python\nprint('still here')\n```" if len(messages) < 6 else "Done."}
        block = "import os, time\nfor fd in range(3, 12):\n    try:\n        os.write(fd, b'[' * 5000 + b'\\n')\n    except OSError:\n        pass\ntime.sleep(0.3)\n"
        return {"role": "assistant", "content": f"```python\n{block}```"}


def test_garbage_from_one_agent_does_not_abort_a_rollout(sbx_corpus: Corpus, sandbox: CodeSandbox, tmp_path: Path) -> None:
    from envsynth.agents.oracle_code import OracleCodeAgent
    from envsynth.rollout import read_trajectories, run_batch

    bad, good = sbx_corpus.tasks[0], sbx_corpus.tasks[1]

    def factory(task: Task, attempt: int) -> object:
        return _GarbageAgent() if task.id == bad.id else OracleCodeAgent(task)

    result = run_batch(sbx_corpus, factory, [bad, good], out=tmp_path / "run", sandbox=sandbox, concurrency=2)
    assert result.written == 2
    records = {r["task_id"]: r for r in read_trajectories(tmp_path / "run" / "trajectories.jsonl")}
    assert records[good.id]["reward"]["score"] == 1.0
    observations = [m["content"] for m in records[bad.id]["messages"] if m["role"] == "user"]
    assert any("SandboxError" in o for o in observations), observations
    assert any("still here" in o for o in observations), observations  # the episode went on
