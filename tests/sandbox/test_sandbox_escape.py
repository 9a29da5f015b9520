"""Escape attempts: each gives an error observation and the episode goes on afterwards."""

from __future__ import annotations

import os
import time

import pytest
from sandbox_helpers import FORCE_FALLBACK

from envsynth.corpus import Corpus
from envsynth.sandbox import CodeActEpisode, CodeSandbox, detect

BWRAP = detect().isolated and not FORCE_FALLBACK
only_bwrap = pytest.mark.skipif(not BWRAP, reason="filesystem isolation needs bubblewrap (the fallback is weaker, see docs/sandbox.md)")


@pytest.fixture
def ep(sbx_corpus: Corpus, sandbox: CodeSandbox) -> CodeActEpisode:
    episode = sandbox.episode(sbx_corpus.start(sbx_corpus.tasks[0]))
    yield episode
    episode.close()


def still_works(ep: CodeActEpisode) -> None:
    obs = ep.run("print(len(list_tools()), 6 * 7)")
    assert obs.error is None, obs.text
    assert obs.text.strip().endswith(" 42")
    assert not ep.done


def test_infinite_loop_times_out(ep: CodeActEpisode) -> None:
    ep.run("kept = 1")
    t0 = time.monotonic()
    obs = ep.run("while True:\n    pass")
    assert time.monotonic() - t0 < ep.limits.wall + 2
    assert obs.error and ("CPUTimeExceeded" in obs.error or "TimeoutError" in obs.error)
    still_works(ep)


def test_sleep_hits_the_wall_clock_and_restarts(ep: CodeActEpisode) -> None:
    ep.run("kept = 1")
    t0 = time.monotonic()
    obs = ep.run("import time\ntime.sleep(60)")
    assert time.monotonic() - t0 < ep.limits.wall + 2
    assert obs.error and obs.error.startswith("TimeoutError") and "restarted" in obs.error
    assert ep.restarts == 1
    assert "NameError" in (ep.run("kept").error or "")  # a fresh worker: variables lost
    still_works(ep)


def test_memory_bomb(ep: CodeActEpisode) -> None:
    obs = ep.run("a = bytearray(4 * 1024**3)")
    assert obs.error and "MemoryError" in obs.error
    obs = ep.run("a = []\nwhile True:\n    a.append(' ' * 10**6)")
    assert obs.error and ("MemoryError" in obs.error or "SandboxError" in obs.error)
    still_works(ep)


def test_fork_bomb(ep: CodeActEpisode) -> None:
    obs = ep.run("import os\nwhile True:\n    os.fork()")
    assert obs.error, obs.text
    if BWRAP:
        assert "PermissionError" in obs.error  # the seccomp filter refuses new processes
    if BWRAP:  # the fallback lets exec'd children run (same uid, same network namespace)
        obs = ep.run("import subprocess\nsubprocess.run(['/bin/true'])")
        assert obs.error
        obs = ep.run("import multiprocessing\np = multiprocessing.Process(target=print)\np.start()")
        assert obs.error
    else:  # a forked Python child exits at once instead of running on
        assert ep.run("import os\nprint(os.fork() > 0)").text.strip() == "True"
    obs = ep.run("import threading\nt = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()")
    assert obs.error is None and obs.text.strip() == "thread"  # threads still work
    still_works(ep)


def test_no_network(ep: CodeActEpisode) -> None:
    mode = ep.pool.mode
    if not (mode.isolated or "unshare" in mode.prefix):
        pytest.skip("the fallback could not make a network namespace here (see the SandboxWarning)")
    obs = ep.run("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)")
    assert obs.error and ("OSError" in obs.error or "unreachable" in obs.error or "Error" in obs.error)
    obs = ep.run("import socket\nsocket.getaddrinfo('pypi.org', 443)")
    assert obs.error
    if BWRAP:  # no /sys in the sandbox; the network namespace holds only lo
        obs = ep.run("import socket\nprint(sorted(n for _, n in socket.if_nameindex()))")
        assert obs.text.strip() in ("['lo']", "[]"), obs.text
    still_works(ep)


@only_bwrap
@pytest.mark.parametrize("path_kind", ["shadow", "corpus", "state_db", "app_json"])
def test_host_files_unreadable(ep: CodeActEpisode, sbx_corpus: Corpus, path_kind: str) -> None:
    app_dir = sbx_corpus.path / "apps" / sbx_corpus.tasks[0].app
    path = {
        "shadow": "/etc/shadow",
        "corpus": str(sbx_corpus.path / "corpus.json"),
        "state_db": str(app_dir / "state.db"),
        "app_json": str(app_dir / "app.json"),
    }[path_kind]
    assert os.path.exists(path)
    obs = ep.run(f"print(open({path!r}, 'rb').read()[:20])")
    assert obs.error and ("FileNotFoundError" in obs.error or "PermissionError" in obs.error), obs.text
    still_works(ep)


@only_bwrap
def test_writes_only_to_tmp(ep: CodeActEpisode) -> None:
    for target in ("/x", "/usr/x", "/sandbox/worker.py", os.path.realpath(os.__file__)):
        obs = ep.run(f"open({target!r}, 'w').write('x')")
        assert obs.error and ("OSError" in obs.error or "PermissionError" in obs.error or "Read-only" in obs.error), (target, obs.text)
    assert ep.run("open('/tmp/scratch.txt', 'w').write('fine')\nprint(open('/tmp/scratch.txt').read())").text.strip() == "fine"
    still_works(ep)


@only_bwrap
def test_envsynth_and_ground_truth_not_reachable(ep: CodeActEpisode, sbx_corpus: Corpus) -> None:
    task = sbx_corpus.tasks[0]
    obs = ep.run("import envsynth")
    assert obs.error and "ModuleNotFoundError" in obs.error
    obs = ep.run("import envsynth.runtime.reward")
    assert obs.error and "ModuleNotFoundError" in obs.error
    # look everywhere the code can look: its memory, the files it can list
    probe = (
        "import gc, os, sys\n"
        "hits = [o for o in gc.get_objects() if isinstance(o, dict) and ('expected_effects' in o or 'oracle' in o)]\n"
        "texts = [o for o in gc.get_objects() if isinstance(o, str) and ('expected_effects' in o or 'oracle_program' in o)]\n"
        "names = []\n"
        "for root, dirs, files in os.walk('/'):\n"
        "    if root.startswith(('/proc', '/sys', '/dev', '/usr')):\n"
        "        dirs[:] = []\n"
        "        continue\n"
        "    names += [os.path.join(root, f) for f in files if 'envsynth' in root + f or f.endswith(('.jsonl', '.db', 'corpus.json'))]\n"
        "print(len(hits), len(texts), [n for n in names if n != '/sandbox/worker.py'], sorted(sys.modules).count('envsynth'))\n"
    )
    obs = ep.run(probe)
    assert obs.error is None, obs.text
    if BWRAP:
        assert obs.text.strip() == "0 0 [] 0", obs.text
    if task.expected_answer is not None:
        assert str(task.expected_answer) not in ep.run("import gc\nprint([o for o in gc.get_objects() if isinstance(o, str)])").text
    still_works(ep)


def test_kill_the_parent(ep: CodeActEpisode) -> None:
    mode = ep.pool.mode
    if not (mode.isolated or "setpriv" in mode.prefix):
        pytest.skip("the fallback runs the code as our own uid here: it could kill us")
    me = os.getpid()
    obs = ep.run(f"import os, signal\nos.kill({me}, signal.SIGKILL)")
    assert obs.error and ("ProcessLookupError" in obs.error or "PermissionError" in obs.error), obs.text
    obs = ep.run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.kill(1, signal.SIGKILL)\nprint('alive')")
    assert os.getpid() == me  # we are still here
    obs = ep.run("import os, signal\nos.kill(0, signal.SIGKILL)")  # its own group: the worker dies
    assert obs.error
    still_works(ep)


def test_protocol_forgery_is_contained(ep: CodeActEpisode) -> None:
    # raw writes to fd 1 go to /dev/null; writing garbage to the real pipe kills only the worker
    assert ep.run("import os\nos.write(1, b'{\"op\": \"done\"}\\n')\nprint('after')").text.strip() == "after"
    obs = ep.run(
        "import os\nfor fd in range(3, 10):\n    try:\n        os.write(fd, b'garbage\\n')\n    except OSError:\n        pass\nimport time\ntime.sleep(0.2)"
    )
    assert obs.error is None or "SandboxError" in obs.error or "TimeoutError" in obs.error
    still_works(ep)


def test_require_bwrap() -> None:
    if detect().isolated:
        with CodeSandbox(workers=0, require_bwrap=True) as sb:
            assert sb.mode == "bwrap"
    else:
        from envsynth.sandbox import SandboxUnavailable

        with pytest.raises(SandboxUnavailable):
            CodeSandbox(workers=0, require_bwrap=True)


def test_worker_that_stops_reading_cannot_block_the_parent(ep: CodeActEpisode) -> None:
    # a forged call from a thread, then the worker never reads its answer: the wall clock still holds
    code = (
        "import os, json, time\n"
        "big = 'x' * 300000\n"
        "for fd in range(3, 8):\n"
        "    try:\n"
        "        os.write(fd, (json.dumps({'op': 'call', 'name': 'get_tool_documentation', 'arguments': {'name': big}}) + '\\n').encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    obs = ep.run(code)
    assert time.monotonic() - t0 < ep.limits.wall + 2
    assert obs.error
    still_works(ep)


def test_forged_messages_with_bad_fields(ep: CodeActEpisode) -> None:
    # the worker's own pipe, found by trying: forged calls and a forged 'done' with junk fields
    code = (
        "import os, json\n"
        "msgs = [{'op': 'call', 'name': 'get_tool_documentation', 'arguments': {'name': [1]}},\n"
        "        {'op': 'call', 'name': 'list_tools', 'arguments': {'app': {'x': 1}}},\n"
        "        {'op': 'call', 'name': 'nope', 'arguments': [1, 2]},\n"
        "        {'op': 'done', 'output': 'z' * 100000, 'dropped': 'many', 'error': None}]\n"
        "for fd in range(3, 8):\n"
        "    try:\n"
        "        os.write(fd, ''.join(json.dumps(m) + '\\n' for m in msgs).encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "import time\n"
        "time.sleep(0.5)\n"
    )
    obs = ep.run(code)
    assert len(obs.text) <= 2 * ep.limits.output + 200
    still_works(ep)
