"""Builds and runs on a local Ray instance (2 CPUs): the same corpus and the same results as local ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scale_helpers import COMPOSITION, blueprints, hashes

from envsynth import catalog
from envsynth.corpus import build_corpus
from envsynth.rollout.command import run_command
from envsynth.rollout.config import RunConfig
from envsynth.rollout.trajectory import read_trajectories
from envsynth.scale import RayExecutor

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_build_is_byte_identical_to_a_local_build(ray_cluster: None, local_build: Path, tmp_path: Path) -> None:
    with RayExecutor() as ex:
        assert ex.slots == 2
        spread = build_corpus(tmp_path / "ray", blueprints=blueprints(), executor=ex, **COMPOSITION)
    assert ray.is_initialized()  # a Ray the caller started is left running
    files = hashes(spread.path)
    assert len(files) >= 15 and any(name.endswith("shard-00000.jsonl") for name in files)
    assert files == hashes(local_build)
    assert spread.manifest.digest == json.loads((local_build / "corpus.json").read_text())["digest"]


def _episodes(run: Path) -> list[dict[str, Any]]:
    """The run's trajectories without their wall-clock timings, by task and attempt."""
    recs = [{k: v for k, v in rec.items() if k != "timings"} for rec in read_trajectories(run / "trajectories.jsonl")]
    return sorted(recs, key=lambda r: (r["task_id"], r["attempt"]))


def test_ray_run_of_the_oracle_gives_the_local_results(ray_cluster: None, local_build: Path, tmp_path: Path) -> None:
    corpus = local_build
    local = run_command(RunConfig(corpus=corpus, out=tmp_path / "local", agent="oracle", attempts=2)).to_dict()
    spread = run_command(
        RunConfig(corpus=corpus, out=tmp_path / "ray", agent="oracle", attempts=2, executor="ray", concurrency=4)
    ).to_dict()
    assert spread["episodes"] == local["episodes"] == 24 and spread["pass@1"] == 1.0
    assert _episodes(tmp_path / "ray") == _episodes(tmp_path / "local")
    assert json.loads((tmp_path / "ray" / "run.json").read_text()) == json.loads((tmp_path / "local" / "run.json").read_text())
    again = run_command(RunConfig(corpus=corpus, out=tmp_path / "ray", agent="oracle", attempts=2, executor="ray")).to_dict()
    assert again["this_run"] == {"written": 0, "skipped": 24, "failed": 0}  # resumable as a local run


def test_ray_run_calls_the_users_endpoint_from_the_workers(ray_cluster: None, local_build: Path, tmp_path: Path) -> None:
    from chat_server import chat_server, completion

    calls: list[str] = []

    def reply(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        calls.append(body["model"])
        return 200, completion(body["model"], {"role": "assistant", "content": "I cannot do that."})

    with chat_server(reply) as url:
        args: dict[str, Any] = {"agent": "openai", "model": "m", "base_url": url, "api_key": "k", "limit": 3}
        local = run_command(RunConfig(corpus=local_build, out=tmp_path / "local", **args)).to_dict()
        spread = run_command(RunConfig(corpus=local_build, out=tmp_path / "ray", executor="ray", **args)).to_dict()
    assert calls == ["m"] * 6 and spread["episodes"] == local["episodes"] == 3
    assert _episodes(tmp_path / "ray") == _episodes(tmp_path / "local")
    assert all(e["error"] is None and e["model"] == "m" for e in _episodes(tmp_path / "ray"))


def test_ray_build_of_the_demo_corpus_is_byte_identical(ray_cluster: None, tmp_path: Path) -> None:
    demo: dict[str, Any] = {"tasks_per_app": 10, "states": 2, "distractors": 2, "seed": 0}  # make demo's composition
    every = [catalog.load(name) for name in catalog.names()]
    local = build_corpus(tmp_path / "local", blueprints=every, **demo)
    with RayExecutor() as ex:
        spread = build_corpus(tmp_path / "ray", blueprints=every, executor=ex, **demo)
    assert spread.records == local.records >= 150
    assert hashes(spread.path) == hashes(local.path)
