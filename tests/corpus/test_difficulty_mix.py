"""``--difficulty``: a corpus keeps the mix of tiers asked for, resumably; exports order and filter by difficulty."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from envsynth import catalog
from envsynth.cli import app as cli
from envsynth.corpus import build_corpus, load_corpus
from envsynth.corpus.difficulty import parse_mix, quotas
from envsynth.export import export_rl

APPS = [catalog.load("taskboard"), catalog.load("northwind_bank")]


def test_named_mixes_and_shares_parse() -> None:
    assert parse_mix(None) is None and parse_mix("natural") is None
    assert parse_mix("hard") == {"hard": 1.0}
    assert parse_mix("mix") == pytest.approx({"easy": 1 / 3, "medium": 1 / 3, "hard": 1 / 3})
    assert parse_mix("easy=1, hard=3") == {"easy": 0.25, "hard": 0.75}
    for bad, said in (("brutal", "give easy"), ("easy=x", "not a number"), ("easy=-1", "0 or more"), ("easy=0", "add up to 0")):
        with pytest.raises(ValueError, match=said):
            parse_mix(bad)


@given(st.dictionaries(st.sampled_from(["easy", "medium", "hard"]), st.integers(0, 9), min_size=1), st.integers(0, 300))
def test_quotas_add_up_to_the_tasks_per_app(shares: dict[str, int], t: int) -> None:
    if not sum(shares.values()):
        return
    mix = parse_mix(",".join(f"{k}={v}" for k, v in shares.items()))
    assert mix is not None
    q = quotas(mix, t)
    assert sum(q.values()) == t
    for tier, n in q.items():
        assert abs(n - mix.get(tier, 0) * t) < 1


@pytest.fixture(scope="module")
def steered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mix") / "c"
    build_corpus(out, blueprints=APPS, tasks_per_app=6, states=1, distractors=2, difficulty="easy=1,hard=2")
    return out


def test_a_steered_corpus_keeps_the_mix_asked_for(steered: Path) -> None:
    c = load_corpus(steered)
    assert c.manifest.composition.difficulty == pytest.approx({"easy": 1 / 3, "hard": 2 / 3})
    for name in ("taskboard", "northwind_bank"):
        tiers = sorted(t.tier for t in c.tasks if t.app == name)
        assert tiers == ["easy", "easy", "hard", "hard", "hard", "hard"]
    assert c.manifest.admission.rejections.get("difficulty_quota", 0) > 0


def test_a_steered_build_resumes_to_the_same_bytes(steered: Path, tmp_path: Path) -> None:
    again = tmp_path / "c"
    shutil.copytree(steered, again)
    for name in ("taskboard", "northwind_bank"):
        log = again / "tasks" / name / "attempts.jsonl"
        lines = log.read_bytes().splitlines(keepends=True)
        log.write_bytes(b"".join(lines[: len(lines) // 2]))  # a crash halfway through
    build_corpus(again, blueprints=APPS, tasks_per_app=6, states=1, distractors=2, difficulty="easy=1,hard=2")
    for f in sorted(p.relative_to(steered) for p in steered.rglob("*") if p.is_file() and p.suffix in (".jsonl", ".json")):
        assert (again / f).read_bytes() == (steered / f).read_bytes(), f


def test_another_mix_is_refused_on_the_same_folder(steered: Path) -> None:
    with pytest.raises(Exception, match="difficulty"):
        build_corpus(steered, blueprints=APPS, tasks_per_app=6, states=1, distractors=2, difficulty="hard")


def test_export_orders_and_filters_by_difficulty(steered: Path, tmp_path: Path) -> None:
    export_rl(steered, tmp_path / "all.jsonl", order="difficulty")
    rows = [json.loads(line) for line in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert [r["difficulty"] for r in rows] == sorted(r["difficulty"] for r in rows)
    export_rl(steered, tmp_path / "hard.jsonl", tiers=["hard"], min_difficulty=9)
    hard = [json.loads(line) for line in (tmp_path / "hard.jsonl").read_text().splitlines()]
    assert hard and all(r["tier"] == "hard" and r["difficulty"] >= 9 for r in hard)
    assert len(hard) < len(rows)
    with pytest.raises(ValueError, match="unknown tier"):
        export_rl(steered, tmp_path / "x.jsonl", tiers=["brutal"])
    with pytest.raises(ValueError, match="above max"):
        export_rl(steered, tmp_path / "x.jsonl", min_difficulty=5, max_difficulty=2)


def test_the_cli_names_the_flag_and_inspect_shows_tiers_and_baselines(steered: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["build", str(tmp_path / "x"), "-T", "2", "--difficulty", "brutal"])
    assert bad.exit_code != 0 and "--difficulty" in bad.output and "give easy" in bad.output
    shown = runner.invoke(cli, ["inspect", str(steered), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)["corpus"]
    assert data["difficulty"]["tiers"] == {"easy": 4, "medium": 0, "hard": 8}
    rates = data["baselines"]["baselines"]
    assert set(rates) >= {"do-nothing", "constant '1'", "constant '0'", "constant 'yes'", "first candidate"}
    assert all(r["solved"] == 0 for name, r in rates.items() if name != "most common answer")
    text = runner.invoke(cli, ["inspect", str(steered)]).output
    assert "guessing baselines" in text and "difficulty tiers" in text
