"""load_corpus: tasks round trip, lazy apps, episodes on tasks, clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import envsynth
from envsynth.corpus import Corpus, CorpusError, CorpusSummary, load_corpus
from envsynth.runtime.answerpath import answer_in
from envsynth.runtime.state import open_state, read_rows
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import resolve


@pytest.fixture(scope="module")
def corpus(reference: CorpusSummary) -> Corpus:
    return envsynth.load_corpus(reference.path)


def _oracle_answer(corpus: Corpus, task: Task) -> tuple[Any, Any]:
    """Run the task's oracle calls (refs resolved from earlier results) and score the episode."""
    ep = corpus.start(task)
    results: list[Any] = []
    for call in task.oracle:
        args = {**call.args, **{p: resolve(r, results) for p, r in call.refs.items()}}
        res = ep.call(call.tool, args)
        assert res.outcome == "success", (task.id, call.tool, res.content)
        results.append(res.data)
    answer = answer_in(results[task.answer_step], task.answer_field) if task.answer_step is not None and task.answer_field else None
    return ep, answer


def test_round_trip(corpus: Corpus, reference: CorpusSummary) -> None:
    lines = [
        Task.model_validate_json(line)
        for a in reference.manifest.apps
        for shard in a.shards
        for line in (reference.path / shard).read_bytes().splitlines()
    ]
    assert corpus.tasks == lines and len(corpus) == 12
    assert [(t.coordinates.app, t.coordinates.task, t.coordinates.state) for t in corpus.tasks] == sorted(
        (t.coordinates.app, t.coordinates.task, t.coordinates.state) for t in corpus.tasks
    )
    assert all(t.hash and t.hash == t.content_hash() for t in corpus.tasks)
    corpus.verify()
    assert corpus.manifest == reference.manifest
    assert list(corpus.apps) == [a.name for a in reference.manifest.apps]
    first = corpus.tasks[0]
    assert corpus.task(first.id) is first
    with pytest.raises(KeyError, match="no task 'nope'"):
        corpus.task("nope")


def test_apps_load_lazily(reference: CorpusSummary) -> None:
    c = load_corpus(reference.path)
    assert c.apps.loaded == []
    app = c.apps[c.tasks[0].app]
    assert app.name == c.tasks[0].app and c.apps[app.name] is app
    assert c.apps.loaded == [app.name]


def test_every_oracle_scores_one_and_doing_nothing_zero(corpus: Corpus) -> None:
    for task in corpus.tasks:
        ep, answer = _oracle_answer(corpus, task)
        names = [t["function"]["name"] for t in ep.tools]
        assert names[-1] == "complete_task" and set(names[:-1]) == set(task.visible_tools)
        reward = ep.finish(answer)
        assert reward.score == 1.0, (task.id, reward)
        assert corpus.start(task.id).finish().score == 0.0, task.id


def test_state_bytes_are_cached(corpus: Corpus) -> None:
    t = corpus.tasks[1]
    first = corpus.state_bytes(t)
    assert corpus.state_bytes(t.id) is first
    app = corpus.apps[t.app]
    fresh = envsynth.tasks.state_bytes(app, t)  # same rows; page layout may differ (a reused scratch connection)
    assert read_rows(open_state(fresh), app.blueprint) == read_rows(open_state(first), app.blueprint)


def test_tampered_task_fails_verify(tmp_path: Path, reference: CorpusSummary) -> None:
    out = tmp_path / "c"
    shutil.copytree(reference.path, out)
    shard = out / reference.manifest.apps[0].shards[0]
    shard.write_text(shard.read_text().replace('"instruction":"', '"instruction":"X', 1))
    with pytest.raises(CorpusError, match="does not match its hash"):
        load_corpus(out).verify()


def test_errors_are_one_line(tmp_path: Path, reference: CorpusSummary) -> None:
    def error(path: Path) -> str:
        with pytest.raises(CorpusError) as info:
            load_corpus(path)
        msg = str(info.value)
        assert "\n" not in msg
        return msg

    assert "no corpus folder at" in error(tmp_path / "missing")
    out = tmp_path / "c"
    shutil.copytree(reference.path / "apps", out / "apps")
    assert "holds apps only" in error(out)
    (out / "corpus.json").write_text("{}")
    assert "corpus.json: envsynth_version: Field required" in error(out)
    shutil.rmtree(out)
    shutil.copytree(reference.path, out)
    name = reference.manifest.apps[0].name
    shutil.rmtree(out / "apps" / name)
    c = load_corpus(out)  # apps load on first use
    with pytest.raises(CorpusError, match="no app folder"):
        c.apps[name]
    shard = out / reference.manifest.apps[1].shards[0]
    shard.write_bytes(b"".join(shard.read_bytes().splitlines(keepends=True)[:3]))
    assert "holds 3 tasks, the manifest says 6" in error(out)
    shard.write_text("{}\n")
    assert "line 1 is not a task" in error(out)


def test_older_format_is_refused_with_a_rebuild_hint(tmp_path: Path, reference: CorpusSummary) -> None:
    out = tmp_path / "c"
    shutil.copytree(reference.path, out)
    manifest = json.loads((out / "corpus.json").read_text())
    assert manifest["version"] == 4
    for old in (1, 2, 3):  # 1: task hashes over key-sorted JSON; 2: tasks without a scenario; 3: without difficulty
        manifest["version"] = old
        (out / "corpus.json").write_text(json.dumps(manifest))
        with pytest.raises(CorpusError, match=rf"corpus format {old} .*reads format 4: rebuild the corpus"):
            load_corpus(out)
