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
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.reward import Effects, compare, effects_of
from envsynth.runtime.state import open_state, read_rows
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve
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


def test_a_task_read_from_the_corpus_finds_its_state_without_the_index(reference: CorpusSummary, monkeypatch: pytest.MonkeyPatch) -> None:
    """Records remember where they were read while they live; other Task objects are looked up by id."""
    corpus = load_corpus(reference.path, state_cache=0)
    corpus.tasks._records.recent = 0  # keep no record in the LRU: a record lives as long as its users hold it
    first = list(corpus.tasks)
    expected = {t.id: corpus.stored_state(t) for t in first}
    assert all(expected.values())
    texts = [t.model_dump_json() for t in reversed(first)]
    del first
    gc.collect()  # the records die, their notes with them
    copies = [Task.model_validate_json(text) for text in texts for _ in range(20)]  # never read by the corpus
    again = list(corpus.tasks)
    assert again[0].id != copies[0].id
    lookups: list[str] = []
    position = corpus.tasks.task_index.position
    monkeypatch.setattr(corpus.tasks.task_index, "position", lambda task_id: lookups.append(task_id) or position(task_id))
    notes = corpus.tasks._records._where
    notes[id(copies[0])] = (weakref.ref(again[0]), corpus.tasks.position_of(again[0]))  # as if a dead record had its address
    for c in copies:
        assert corpus.stored_state(c) == expected[c.id]
    assert sorted(set(lookups)) == sorted(expected) and len(lookups) == len(copies)  # the copies are looked up, each time
    for t in again:
        assert corpus.stored_state(t) == expected[t.id]
    assert len(lookups) == len(copies)  # the records read again are not
