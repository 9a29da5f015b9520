"""A build interrupted anywhere resumes to the bytes of an uninterrupted one: nothing lost or duplicated."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_helpers import COMPOSITION, DATA, snapshot

import envsynth.tasks.synth as synth
from envsynth.blueprint.models import Blueprint
from envsynth.corpus import CorpusSummary, build_corpus


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Make the n-th call of synthesize raise KeyboardInterrupt (as a Ctrl-C would)."""
    real = synth.synthesize
    calls = [0]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(synth, "synthesize", flaky)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_resume_after_an_interrupt(
    monkeypatch: pytest.MonkeyPatch, with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint], n: int
) -> None:
    out = with_apps("out")
    with monkeypatch.context() as m:
        _interrupt_at(m, n)
        with pytest.raises(KeyboardInterrupt):
            build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert not (out / "corpus.json").exists()
    kept = sum(len(v.splitlines()) for k, v in snapshot(out).items() if "shard-" in k)
    resumed = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert snapshot(out) == snapshot(reference.path)
    assert resumed.synthesized == 12 - kept


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import envsynth.tasks.synth as synth
    from envsynth import catalog, load_blueprint
    from envsynth.corpus import build_corpus

    real, calls = synth.synthesize, [0]
    def dying(*args, **kwargs):
        calls[0] += 1
        if calls[0] == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: a power cut as far as the files know
        return real(*args, **kwargs)
    synth.synthesize = dying
    bps = [catalog.load("tempo_music"), load_blueprint(Path(sys.argv[3]) / "bookshop.yaml")]
    build_corpus(sys.argv[1], blueprints=bps, tasks_per_app=3, states=2, distractors=2, seed=0)
    """
)


def test_resume_after_sigkill(with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]) -> None:
    out = with_apps("out")
    res = subprocess.run([sys.executable, "-c", KILLER, str(out), "4", str(DATA)], capture_output=True, text=True, timeout=300)
    assert res.returncode == -9, res.stderr
    partial = snapshot(out)
    assert "corpus.json" not in partial and any(k.endswith("attempts.jsonl") for k in partial)
    resumed = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert 0 < resumed.synthesized < 12
    assert snapshot(out) == snapshot(reference.path)


def test_torn_lines_are_cut_and_redone(with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]) -> None:
    out = with_apps("out")
    build_corpus(out, blueprints=blueprints, **COMPOSITION)
    name = blueprints[0].name
    tasks = out / "tasks" / name
    (out / "corpus.json").unlink()
    log = tasks / "attempts.jsonl"
    log.write_bytes(log.read_bytes()[:-5])  # the last attempt line was being written
    shard = tasks / "shard-00000.jsonl"
    data = shard.read_bytes()
    shard.write_bytes(data + data[: len(data) // 3])  # and a task of an attempt in flight, torn
    again = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert again.synthesized == 2
    assert snapshot(out) == snapshot(reference.path)
    shard.write_bytes(data[: len(data) // 2])  # tasks lost although their attempts were committed
    again = build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert again.synthesized > 0
    assert snapshot(out) == snapshot(reference.path)
