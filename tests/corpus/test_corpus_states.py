"""Stored initial states (corpus/states.py) and cold episodes: no per-connection setup, nothing extra in the
database, rewards equal to a plain full-table diff, connections released."""

from __future__ import annotations

import gc
import shutil
import sqlite3
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_helpers import COMPOSITION, snapshot

from envsynth.blueprint.models import Blueprint
from envsynth.corpus import CorpusSummary, build_corpus, load_corpus
from envsynth.corpus.states import MAGIC, PAGE_SIZE
from envsynth.runtime.reward import Effects, compare, effects_of
from envsynth.runtime.state import open_state, read_rows
from envsynth.tasks.answerpath import answer_in
from envsynth.tasks.refs import resolve
from envsynth.tasks.state import state_bytes


def _replay(ep: Any, task: Any, calls: list[Any]) -> Any:
    results: list[Any] = []
    for c in calls:
        args = dict(c.args)
        for p, ref in c.refs.items():
            args[p] = resolve(ref, results)
        results.append(ep.call(c.tool, args).data)
    if task.answer_step is None or task.answer_step >= len(results):
        return None
    return answer_in(results[task.answer_step], task.answer_field)


def _objects(conn: sqlite3.Connection, master: str = "sqlite_master") -> list[tuple[str, str]]:
    return sorted(conn.execute(f"SELECT type, name FROM {master}").fetchall())


def test_the_build_stores_every_state(reference: CorpusSummary) -> None:
    corpus = load_corpus(reference.path)
    for t in corpus.tasks:
        data = corpus.stored_state(t)
        assert data is not None and len(data) % PAGE_SIZE == 0
        app = corpus.apps[t.app]
        stored, rebuilt = open_state(data), open_state(state_bytes(app, t))
        assert read_rows(stored, app.blueprint) == read_rows(rebuilt, app.blueprint)  # the same rows
        assert _objects(stored) == _objects(rebuilt)  # and nothing else
        assert corpus.state_bytes(t) == data
    for app in reference.manifest.apps:
        assert (reference.path / app.tasks_path / "states-00000.bin").read_bytes().startswith(MAGIC)


def test_missing_or_cut_states_are_written_again(
    with_apps: Callable[[str], Path], reference: CorpusSummary, blueprints: list[Blueprint]
) -> None:
    out = with_apps("out")
    shutil.copytree(reference.path / "tasks", out / "tasks")
    shutil.copy(reference.path / "corpus.json", out / "corpus.json")
    first, second = (out / a.tasks_path for a in reference.manifest.apps)
    (first / "states-00000.bin").unlink()
    data = (second / "states-00000.bin").read_bytes()
    (second / "states-00000.bin").write_bytes(data[: len(data) // 2])  # a frame cut in the middle
    build_corpus(out, blueprints=blueprints, **COMPOSITION)
    assert snapshot(out) == snapshot(reference.path)


def test_a_corpus_without_stored_states_still_runs(tmp_path: Path, reference: CorpusSummary) -> None:
    old = tmp_path / "old"
    shutil.copytree(reference.path, old)
    for p in old.glob("tasks/*/states*"):
        p.unlink()
    corpus = load_corpus(old, state_cache=0)
    for t in corpus.tasks:
        assert corpus.stored_state(t) is None
        ep = corpus.start(t)
        assert ep.finish(_replay(ep, t, list(t.oracle))).passed


@pytest.mark.parametrize("state_cache", [0, 1024])
def test_an_episode_database_holds_only_the_app(reference: CorpusSummary, state_cache: int) -> None:
    corpus = load_corpus(reference.path, state_cache=state_cache)
    for t in corpus.tasks:
        app = corpus.apps[t.app]
        sample = open_state(app.sample_state)
        for _ in range(2):  # the second start of a task reuses a pooled connection (state_cache > 0)
            ep = corpus.start(t)
            db = ep._episode.db
            assert _objects(db) == _objects(sample)
            assert _objects(db, "sqlite_temp_master") == []  # no change log, no trigger set up per connection
            _replay(ep, t, list(t.oracle))
            assert _objects(db) == _objects(sample)
            assert all(name.startswith("envsynth_state_") for _, name in _objects(db, "sqlite_temp_master"))  # state guards only
            ep.finish()


def test_rewards_equal_a_full_table_diff(reference: CorpusSummary) -> None:
    """Oracle, a wrong extra call, a partial run and nothing, each scored by finish and by diffing every table."""
    corpus = load_corpus(reference.path, state_cache=0)
    seen: set[float] = set()
    for t in corpus.tasks:
        app = corpus.apps[t.app]
        oracle = list(t.oracle)
        for calls in (oracle, oracle + oracle[-1:], oracle[:-1], []):
            ep = corpus.start(t, seed=1)
            answer = _replay(ep, t, calls)
            reward = ep.finish(answer)
            plain = app.episode(state_bytes(app, t), seed=1)  # its own connection, autocommit, no bookkeeping
            _replay(plain, t, calls)
            full = effects_of(app.blueprint, state_bytes(app, t), plain.db, now=app.now)
            plain.close()
            expected = compare(Effects.from_dict(t.expected_effects), full, expected_answer=t.expected_answer, answer=answer)
            assert reward.to_dict() == expected.to_dict()
            assert ep.effects().to_dict() == full.to_dict()
            seen.add(reward.score)
    assert seen == {0.0, 1.0}


def test_finished_episodes_release_their_connections(reference: CorpusSummary) -> None:
    corpus = load_corpus(reference.path, state_cache=0)
    refs = []
    for t in corpus.tasks:
        ep = corpus.start(t)
        _replay(ep, t, list(t.oracle))
        db = ep._episode.db
        ep.finish()
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")  # closed
        refs.append(weakref.ref(ep._episode))
        del ep, db
    gc.collect()
    assert all(r() is None for r in refs)
