"""A corpus build spread over an executor (here local processes) writes the same bytes as the local pool."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scale_helpers import COMPOSITION, blueprints, hashes

from envsynth.corpus import CorpusError, build_corpus
from envsynth.corpus.tasklog import complete_lines
from envsynth.scale import LocalExecutor, open_executor
from envsynth.scale.executor import ExecutorError


def test_spread_build_is_byte_identical_and_reports_progress(local_build: Path, tmp_path: Path) -> None:
    events = []
    with LocalExecutor(2) as ex:
        summary = build_corpus(tmp_path / "spread", blueprints=blueprints(), executor=ex, progress=events.append, **COMPOSITION)
    assert hashes(summary.path) == hashes(local_build)
    assert summary.synthesized == summary.records == 2 * 3 * 2
    done = [e for e in events if e.phase == "done"]
    assert sorted(e.app for e in done) == sorted(b.name for b in blueprints()) and all(e.admitted == 3 for e in done)
    admitted = [e.admitted for e in events if e.phase == "tasks" and e.app == "taskboard"]
    assert admitted == sorted(admitted)  # committed in task-index order


def test_spread_build_resumes_an_interrupted_local_build(local_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "cut"
    shutil.copytree(local_build, out)
    (out / "corpus.json").unlink()
    for app in ("tempo_music", "taskboard"):  # as if killed after the first attempt of each app
        log = out / "tasks" / app / "attempts.jsonl"
        log.write_bytes(complete_lines(log)[0])
    with LocalExecutor(2) as ex:
        summary = build_corpus(out, blueprints=blueprints(), executor=ex, **COMPOSITION)
    assert 0 < summary.synthesized < summary.records
    assert hashes(out) == hashes(local_build)


def test_spread_build_refuses_other_options_and_a_task_stage(local_build: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    shutil.copytree(local_build, out)
    (out / "corpus.json").unlink()
    with LocalExecutor(1) as ex:
        with pytest.raises(CorpusError, match=r"state.json: these tasks were built with .*states=2"):
            build_corpus(out, blueprints=blueprints(), executor=ex, **{**COMPOSITION, "states": 1})
        with pytest.raises(ValueError, match="task stage"):
            build_corpus(tmp_path / "staged", blueprints=blueprints(), executor=ex, task_stage=lambda a, g, t: t, **COMPOSITION)


def test_open_executor_names_the_bad_setting() -> None:
    with pytest.raises(ExecutorError, match=r"unknown executor 'dask' \(choose local or ray\)") as info:
        open_executor("dask")
    assert info.value.option == "executor"
    with pytest.raises(ExecutorError, match="an address is for the ray executor") as info:
        open_executor("local", address="auto")
    assert info.value.option == "address"
    with pytest.raises(ExecutorError, match="workers must be 0"):
        open_executor("local", workers=-1)


def test_spread_run_refuses_what_it_cannot_carry(local_build: Path, tmp_path: Path) -> None:
    from envsynth.errors import ConfigError
    from envsynth.rollout.config import RunConfig

    for settings, field, words in (
        ({"mode": "code"}, "executor", "the ray executor runs function-calling episodes"),
        ({"user_sim": True, "user_model": "m"}, "executor", "does not carry the user simulator"),
    ):
        with pytest.raises(ConfigError, match=words) as info:
            RunConfig.of(corpus=local_build, out=tmp_path / "r", agent="oracle", executor="ray", **settings)
        assert info.value.option == field
    with pytest.raises(ConfigError, match="an address is for the ray executor") as info:
        RunConfig.of(corpus=local_build, out=tmp_path / "r", agent="oracle", address="auto")
    assert info.value.option == "address"
    assert not (tmp_path / "r").exists()


def test_a_ray_address_where_nothing_listens_is_refused_in_seconds() -> None:
    pytest.importorskip("ray")
    import socket

    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ExecutorError, match=rf"no Ray cluster answers at {address}"):
            open_executor("ray", address=address)
    with pytest.raises(ExecutorError, match="not an address"):
        open_executor("ray", address="nowhere")
