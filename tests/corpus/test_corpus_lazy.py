"""The lazy corpus: load_corpus reads the task index, not the records; corpus.tasks behaves like the old list."""

from __future__ import annotations

import importlib.util
import logging
import shutil
import sqlite3
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envsynth.corpus import Corpus, CorpusError, CorpusSummary, load_corpus
from envsynth.corpus import index as corpus_index
from envsynth.tasks.model import Task

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
GENERATED = 3000


def _gen_module() -> Any:
    spec = importlib.util.spec_from_file_location("gen_big_corpus", BENCHMARKS / "gen_big_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, reference: CorpusSummary) -> Path:
    """3,000 records replicated from the reference corpus by benchmarks/gen_big_corpus.py."""
    out = tmp_path_factory.mktemp("big") / "c"
    _gen_module().generate(reference.path, out, GENERATED)
    return out


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the task records parsed (Task.model_validate_json calls)."""
    calls = [0]
    real = Task.model_validate_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Task], data: Any, **kwargs: Any) -> Task:
        calls[0] += 1
        return real(cls, data, **kwargs)

    monkeypatch.setattr(Task, "model_validate_json", classmethod(counting))
    return calls


def _lines(reference: CorpusSummary) -> list[Task]:
    return [
        Task.model_validate_json(line)
        for a in reference.manifest.apps
        for s in a.shards
        for line in (reference.path / s).read_bytes().splitlines()
    ]


def test_opening_reads_no_record(generated: Path, parses: list[int]) -> None:
    tracemalloc.start()
    c = load_corpus(generated)
    n = len(c.tasks)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == GENERATED and parses[0] == 0
    assert peak < 2_000_000, peak  # the records themselves would take ~50 MB
    ids = list(c.tasks.ids())
    action = c.tasks.where(kind="action")
    assert len(ids) == len(set(ids)) == GENERATED and parses[0] == 0
    assert 0 < len(action) < GENERATED and [e.id for e in action.entries()] == [e.id for e in c.tasks.entries() if e.kind == "action"]
    assert parses[0] == 0
    task = c.task(ids[2500])
    assert task.id == ids[2500] and parses[0] == 1 and c.tasks[2500] is task
    assert c.tasks[-1].id == ids[-1] and parses[0] == 2


def test_generated_records_are_real_tasks(generated: Path) -> None:
    c = load_corpus(generated)
    c.verify()  # every copy carries its own content hash; the manifest digest covers them
    t = c.tasks[-7]
    assert c.start(t).finish().score == 0.0
    coords = [(e.app_index, e.task, e.state) for e in c.tasks.entries()]
    assert len(set(coords)) == GENERATED


def test_sequence_behaves_like_the_list(reference: CorpusSummary) -> None:
    expected = _lines(reference)
    tasks = load_corpus(reference.path).tasks
    n = len(expected)
    assert len(tasks) == n and tasks == expected and list(tasks) == expected and list(reversed(tasks)) == expected[::-1]
    assert [tasks[i] for i in range(-n, n)] == expected + expected
    for bad in (n, -n - 1):
        with pytest.raises(IndexError):
            tasks[bad]
    with pytest.raises(TypeError):
        tasks["0"]  # type: ignore[call-overload]
    assert tasks[:] == expected and tasks[3:100] == expected[3:] and tasks[::-3] == expected[::-3] and tasks[5:2] == []
    for app in {t.app for t in expected}:
        for kind in ("action", "info", "mixed", None):
            want = [t for t in expected if t.app == app and (kind is None or t.kind == kind)]
            got = tasks.where(app=app, kind=kind)
            assert got == want and len(got) == len(want) and list(got.ids()) == [t.id for t in want]
            if want:
                assert got[-1] == want[-1] and got[0:1] == want[0:1] and got.index(want[-1]) == len(want) - 1
    for i, t in enumerate(expected):
        assert tasks.by_id(t.id) == t and t in tasks and tasks.index(t) == i and tasks.index_of(t.id) == i
    other = expected[0].model_copy(update={"instruction": "something else"})
    assert other not in tasks and "x" not in tasks
    with pytest.raises(ValueError, match="not in the tasks"):
        tasks.index(other)
    with pytest.raises(KeyError):
        tasks.by_id("nope")
    assert tasks.where(kind="info").where(app=expected[0].app) == [t for t in expected if t.kind == "info" and t.app == expected[0].app]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_slices_and_indexes_match_the_list(reference: CorpusSummary, data: st.DataObject) -> None:
    expected = _lines(reference)
    tasks = _shared(reference).tasks
    s = data.draw(st.slices(len(expected) + 3))
    assert tasks[s] == expected[s]
    i = data.draw(st.integers(-len(expected), len(expected) - 1))
    assert tasks[i] == expected[i]


_OPEN: dict[Path, Corpus] = {}


def _shared(reference: CorpusSummary) -> Corpus:
    if reference.path not in _OPEN:
        _OPEN[reference.path] = load_corpus(reference.path, state_cache=4)
    return _OPEN[reference.path]


def test_threads_share_one_corpus(generated: Path) -> None:
    c = load_corpus(generated)
    ids = list(c.tasks.ids())
    picks = ids[::37]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda i: c.task(i).id, picks))
    assert got == picks


def test_the_build_writes_the_index_the_shards_give(tmp_path: Path, reference: CorpusSummary) -> None:
    built = (reference.path / "tasks" / "index.sqlite").read_bytes()
    out = tmp_path / "c"
    shutil.copytree(reference.path, out)
    (out / "tasks" / "index.sqlite").unlink()
    corpus_index.write_index(out, reference.manifest)
    assert (out / "tasks" / "index.sqlite").read_bytes() == built


@pytest.fixture
def copy(tmp_path: Path, reference: CorpusSummary) -> Iterator[Path]:
    out = tmp_path / "c"
    shutil.copytree(reference.path, out)
    yield out


def test_an_old_corpus_without_index_loads_and_gets_one(copy: Path, reference: CorpusSummary, caplog: pytest.LogCaptureFixture) -> None:
    index = copy / "tasks" / "index.sqlite"
    built = index.read_bytes()
    index.unlink()
    with caplog.at_level(logging.WARNING, logger="envsynth.corpus"):
        c = load_corpus(copy)
    assert c.tasks == _lines(reference)
    assert [r.getMessage() for r in caplog.records] == [
        f"{index}: task index rebuilt from the shards, as it is missing (a corpus built before the index existed)"
    ]
    assert index.read_bytes() == built
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="envsynth.corpus"):
        load_corpus(copy)
    assert caplog.records == []


def test_a_read_only_old_corpus_keeps_its_index_in_memory(
    copy: Path, reference: CorpusSummary, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    index = copy / "tasks" / "index.sqlite"
    index.unlink()

    def read_only(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr(corpus_index, "write_index", read_only)
    with caplog.at_level(logging.WARNING, logger="envsynth.corpus"):
        c = load_corpus(copy)
    assert c.tasks == _lines(reference) and not index.exists()
    (msg,) = [r.getMessage() for r in caplog.records]
    assert "rebuilt from the shards in memory" in msg and "Read-only file system" in msg and "\n" not in msg


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda p: p.write_bytes(b"not a database" * 100), "it is unreadable (file is not a database)"),
        (lambda p: p.write_bytes(b""), "it is unreadable (no such table: meta)"),
        (lambda p: _sql(p, "UPDATE meta SET value = 'x' WHERE key = 'digest'"), "it was written for other tasks than the manifest lists"),
        (
            lambda p: _sql(p, "UPDATE meta SET value = '2' WHERE key = 'version'"),
            "format envsynth-task-index 2, expected envsynth-task-index 1",
        ),
        (lambda p: _sql(p, "UPDATE shards SET size = size + 1 WHERE shard = 0"), "bytes, the index says"),
    ],
)
def test_a_broken_or_stale_index_is_rebuilt(
    copy: Path, reference: CorpusSummary, caplog: pytest.LogCaptureFixture, damage: Any, why: str
) -> None:
    index = copy / "tasks" / "index.sqlite"
    built = index.read_bytes()
    damage(index)
    with caplog.at_level(logging.WARNING, logger="envsynth.corpus"):
        c = load_corpus(copy)
    assert c.tasks == _lines(reference) and index.read_bytes() == built
    (msg,) = [r.getMessage() for r in caplog.records]
    assert msg.startswith(f"{index}: task index rebuilt from the shards, as ") and why in msg


def _sql(path: Path, stmt: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(stmt)
    conn.commit()
    conn.close()


def test_an_index_pointing_at_the_wrong_record_is_a_one_line_error(copy: Path, reference: CorpusSummary) -> None:
    index = copy / "tasks" / "index.sqlite"
    _sql(index, "UPDATE tasks SET id = 'somebody-else' WHERE pos = 1")  # same sizes: it is opened as it is
    c = load_corpus(copy)
    assert c.tasks[0] == _lines(reference)[0]
    with pytest.raises(CorpusError, match=r"holds task .*, the index says somebody-else: the shard changed after it was indexed") as info:
        c.tasks[1]
    assert "\n" not in str(info.value)
    shard = copy / reference.manifest.apps[0].shards[0]
    data = bytearray(shard.read_bytes())
    data[0:1] = b"x"  # same size, broken JSON in the first record
    shard.write_bytes(bytes(data))
    with pytest.raises(CorpusError, match=r"at byte 0 is not a task .*: the shard changed after it was indexed") as info:
        load_corpus(copy).tasks[0]
    assert "\n" not in str(info.value)


def test_http_task_listing_reads_only_the_page(generated: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from envsynth.serve.http import create_app

    c = load_corpus(generated)
    app_name = c.tasks.entries().__next__().app
    want = [e.id for e in c.tasks.entries() if e.app == app_name and e.kind == "info"]
    with TestClient(create_app(c)) as client:
        page = client.get("/tasks", params={"app": app_name, "kind": "info", "offset": 5, "limit": 7}).json()
    assert page["total"] == len(want) and [t["id"] for t in page["tasks"]] == want[5:12]
    assert c.tasks.reads == 7  # a filter over the records would have read all of them


def test_inspect_stats_read_each_record_once(generated: Path) -> None:
    from envsynth.corpus import corpus_stats

    c = load_corpus(generated)
    stats = corpus_stats(c)
    assert stats["tasks"] == GENERATED and sum(stats["tasks_by_kind"].values()) == GENERATED
    assert c.tasks.reads == GENERATED


def test_a_run_over_every_task_reads_each_record_once(tmp_path: Path, reference: CorpusSummary) -> None:
    from envsynth.agents import OracleAgent
    from envsynth.corpus.index import open_index
    from envsynth.corpus.lazy import TaskSeq
    from envsynth.rollout import run_batch

    c = load_corpus(reference.path)
    small = Corpus(c.path, c.manifest, TaskSeq.open(open_index(c.path, c.manifest), recent=2))
    res = run_batch(small, lambda t, a: OracleAgent(t), attempts=3, concurrency=2, out=tmp_path / "run")
    assert res.written == 3 * len(c.tasks) and res.errors == 0
    assert small.tasks.reads == len(c.tasks)
