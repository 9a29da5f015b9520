"""The subprocess fallback (no bubblewrap): same protocol and limits, weaker filesystem isolation."""

from __future__ import annotations

import os

import pytest
from sandbox_helpers import oracle_block

from envsynth.corpus import Corpus
from envsynth.sandbox import CodeActEpisode, Limits, WorkerPool, fallback_mode
from envsynth.sandbox.launcher import detect


@pytest.fixture(scope="module")
def fallback_pool():
    # the wall limit stays well above the CPU limit so that a busy machine cannot turn one into the other
    with WorkerPool(size=1, limits=Limits(wall=8.0, cpu=1.0, memory=256 << 20), mode=fallback_mode("test")) as pool:
        yield pool


def test_fallback_runs_the_oracle(sbx_corpus: Corpus, fallback_pool: WorkerPool) -> None:
    assert fallback_pool.mode.name == "subprocess"
    task = sbx_corpus.tasks[0]
    ep = CodeActEpisode(sbx_corpus.start(task), pool=fallback_pool)
    obs = ep.run(oracle_block(task))
    assert obs.error is None and obs.done, obs.text
    assert ep.finish().score == 1.0


def test_fallback_limits(sbx_corpus: Corpus, fallback_pool: WorkerPool) -> None:
    ep = CodeActEpisode(sbx_corpus.start(sbx_corpus.tasks[0]), pool=fallback_pool)
    assert "MemoryError" in (ep.run("a = bytearray(4 * 1024**3)").error or "")
    assert ep.run("import time\ntime.sleep(30)").error.startswith("TimeoutError")
    assert "CPUTimeExceeded" in (ep.run("while True:\n    pass").error or "")
    if "setpriv" in fallback_pool.mode.prefix:
        assert ep.run("import os\nprint(os.getuid())").text.strip() == "65534"
        assert "PermissionError" in (ep.run("open('/etc/shadow').read()").error or "")
        assert ep.run(f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)").error
    if "unshare" in fallback_pool.mode.prefix:
        assert ep.run("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)").error
    assert ep.run("print(6 * 7)").text.strip() == "42"
    ep.close()


def test_fallback_is_announced(monkeypatch: pytest.MonkeyPatch) -> None:
    import envsynth.sandbox.launcher as launcher
    from envsynth.sandbox import SandboxUnavailable, SandboxWarning

    monkeypatch.setattr(launcher, "_MODE", fallback_mode("bwrap not found on PATH"))
    with pytest.warns(SandboxWarning, match="filesystem isolation is weaker"):
        launcher.resolve_mode()
    with pytest.raises(SandboxUnavailable, match="bwrap not found"):
        launcher.resolve_mode(require_bwrap=True)
    monkeypatch.setattr(launcher, "_MODE", None)
    assert detect().name in ("bwrap", "subprocess")
