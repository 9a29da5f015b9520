"""``envsynth plan grid | fit | suggest`` end to end on synthetic results (see test_plan_law.py for the law)."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from test_plan_law import true_score
from typer.testing import CliRunner

from envsynth import catalog
from envsynth.cli import app as cli

DOC = Path(__file__).parents[2] / "docs" / "plan.md"


def _sweep_results(tmp_path: Path) -> Path:
    """Run plan grid, then 'train' every corpus of the sweep: its score drawn from the known law plus noise."""
    specs = tmp_path / "sweep.csv"
    args = ["plan", "grid", "--budget", "4000", "--points", "64", "--max-apps", "8", "--out", str(specs)]
    got = CliRunner().invoke(cli, args)
    assert got.exit_code == 0, got.output
    rows = list(csv.DictReader(specs.open()))
    assert len(rows) == 64 and {int(r["apps"]) for r in rows} == {1, 2, 4, 8}
    assert all(int(r["apps"]) * int(r["tasks_per_app"]) * int(r["states"]) == int(r["records"]) <= 4000 for r in rows)
    assert rows[0]["command"].startswith("envsynth build corpora/run-000 --apps ")
    rng = random.Random(0)
    results = tmp_path / "results.csv"
    with results.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[*rows[0].keys(), "compute", "score"])
        w.writeheader()
        for r in rows:
            a, s, d, n = int(r["apps"]), int(r["states"]), int(r["distractors"]), int(r["records"])
            w.writerow({**r, "compute": n, "score": round(true_score(a, s, d, n) + rng.gauss(0, 0.01), 4)})
    return results


def test_grid_fit_suggest(tmp_path: Path) -> None:
    results = _sweep_results(tmp_path)
    fit_file = tmp_path / "fit.json"
    got = CliRunner().invoke(cli, ["plan", "fit", str(results), "--out", str(fit_file)])
    assert got.exit_code == 0, got.output
    assert "composition-aware" in got.output and "task count only" in got.output
    fit = json.loads(fit_file.read_text())
    assert fit["law"]["mae_held_out"] < fit["baseline"]["mae_held_out"]
    got = CliRunner().invoke(cli, ["plan", "suggest", "--budget", "4000", "--fit", str(fit_file), "--max-apps", "8"])
    assert got.exit_code == 0, got.output
    best = next(line for line in got.output.splitlines() if line.startswith("best: "))
    assert "--states 2 --distractors 2" in best
    assert best in DOC.read_text(), "docs/plan.md shows this example's output"


def test_plan_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("apps,tasks_per_app,states,distractors,score\n2,10,1,0,high\n")
    got = CliRunner().invoke(cli, ["plan", "fit", str(bad)])
    assert got.exit_code == 2 and f"{bad}:2: score: 'high' is not a number" in got.output
    few = tmp_path / "few.csv"
    few.write_text("apps,tasks_per_app,states,distractors,score\n" + "".join(f"{a},10,1,0,0.{a}\n" for a in range(1, 6)))
    got = CliRunner().invoke(cli, ["plan", "fit", str(few)])
    assert got.exit_code == 2 and "cannot fit 9 parameters" in got.output
    got = CliRunner().invoke(cli, ["plan", "suggest", "--budget", "100", "--fit", str(tmp_path / "none.json")])
    assert got.exit_code == 2 and "no fit file at" in got.output
    got = CliRunner().invoke(cli, ["plan", "grid", "--budget", "4000", "--points", "5"])
    assert got.exit_code == 2 and "at least 12" in got.output
    n = len(catalog.entries())
    got = CliRunner().invoke(cli, ["plan", "grid", "--budget", "4000", "--max-apps", str(n + 1)])
    assert got.exit_code == 2 and f"--max-apps {n + 1}: give 1 to {n}" in got.output
