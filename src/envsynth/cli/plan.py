"""``envsynth plan`` and ``audit``: choosing a composition, checking overlap with benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from envsynth.cli.common import (
    app,
    console,
    fail,
    styled,
    warn,
)
from envsynth.cli.errors import error_line

plan_app = typer.Typer(
    help="Plan a corpus composition (SynthAPI): a sweep to train on, a scaling law fitted to its results, a suggestion for a budget.",
    no_args_is_help=True,
)


app.add_typer(plan_app, name="plan")


def _write_or_print(text: str, out: Path | None, what: str) -> None:
    if out is None:
        print(text, end="" if text.endswith("\n") else "\n")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    console.print(f"{what}: {out}")


def _max_apps(max_apps: int | None, catalogue: int) -> int:
    if max_apps is None:
        return catalogue
    if not 1 <= max_apps <= catalogue:
        fail(f"--max-apps {max_apps}: give 1 to {catalogue} (the catalogue's domains)")
    return max_apps


@plan_app.command("grid")
def plan_grid(
    budget: Annotated[int, typer.Option("--budget", "-N", help="The largest corpus of the sweep, in task records A*T*S.")],
    points: Annotated[int, typer.Option(help="Corpora in the sweep (spread over budgets N/8, N/4, N/2, N).")] = 48,
    seed: Annotated[int, typer.Option(help="Seed of the sweep's draw and of every corpus.")] = 0,
    max_apps: Annotated[
        int | None, typer.Option("--max-apps", help="The most apps a corpus may have (default: the catalogue's domains).")
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the sweep as CSV here (default: print it).")] = None,
) -> None:
    """Write the corpora specs (A, T, S, D, seed and the build command) of a sweep to train on with your own trainer.

    Train one model per row, add its compute and normalised score (0..1) as columns compute and
    score, and fit the results with envsynth plan fit.
    """
    from envsynth import catalog as cat
    from envsynth.plan import grid, to_csv

    try:
        rows = grid(budget, _max_apps(max_apps, len(cat.entries())), points=points, seed=seed)
    except ValueError as exc:
        fail(error_line(exc))
    _write_or_print(to_csv(rows), out, f"{len(rows)} corpora, {sum(r['records'] for r in rows)} task records in all")


@plan_app.command("fit")
def plan_fit(
    results: Annotated[Path, typer.Argument(help="CSV: apps, tasks_per_app, states, distractors, score (0..1) [, compute].")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the fit (JSON) here, for envsynth plan suggest.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the fit as JSON.")] = False,
) -> None:
    """Fit the composition-aware law and the task-count-only law; hold out the top 25% compute runs; report both MAEs."""
    from envsynth.plan import PlanError, fit_results, read_results

    try:
        fit = fit_results(read_results(results))
    except PlanError as exc:
        fail(str(exc))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(fit, indent=2) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps(fit, indent=2))
        return
    law, base, best = fit["law"], fit["baseline"], fit["optimum"]
    t = Table(title=f"{fit['runs']} runs; held out: the {fit['held_out']} of compute >= {fit['held_out_compute_from']:g}")
    for col in ("law", "MAE fitted runs", "MAE held-out runs"):
        t.add_column(col)
    t.add_row("composition-aware", f"{law['mae_fit']:.4f}", f"{law['mae_held_out']:.4f}")
    t.add_row("task count only", f"{base['mae_fit']:.4f}", f"{base['mae_held_out']:.4f}")
    console.print(t)
    console.print(
        f"optimum at compute {best['compute']:g}: A = {best['apps']:.1f}, S = {best['states']:.1f}, D = {best['distractors']:.1f}"
        + (f"; fit written to {out}" if out else "")
    )


@plan_app.command("suggest")
def plan_suggest(
    budget: Annotated[int, typer.Option("--budget", "-N", help="Task records to build (A*T*S), in the fit's compute unit.")],
    fit: Annotated[Path, typer.Option("--fit", help="A fit file written by envsynth plan fit --out.")],
    top: Annotated[int, typer.Option(help="Compositions to list.")] = 5,
    max_apps: Annotated[int | None, typer.Option("--max-apps", help="The most apps to suggest (default: the catalogue's domains).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recommend A, T, S, D for a budget: the composition the fitted law scores best, within what the catalogue supplies."""
    from envsynth import catalog as cat
    from envsynth.plan import PlanError, read_fit, suggest

    try:
        got = suggest(read_fit(fit), budget, _max_apps(max_apps, len(cat.entries())), top=max(top, 1))
    except PlanError as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(got, indent=2))
        return
    t = Table(title=f"budget {budget} task records ({got['searched']['compositions']} compositions searched)")
    for col in ("A", "T", "S", "D", "records", "predicted score"):
        t.add_column(col, justify="right")
    for r in [got["best"], *got["alternatives"]]:
        t.add_row(*(str(r[k]) for k in ("apps", "tasks_per_app", "states", "distractors", "records", "predicted_score")))
    console.print(t)
    if got["extrapolated"]:
        warn("warning", f"the budget lies outside the compute the fit saw ({fit}): the prediction extrapolates", "yellow")
    console.print(f"best: {got['best']['command']}")


@app.command()
def audit(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder, or a folder of apps written by envsynth build.")],
    against: Annotated[
        str, typer.Option("--against", help="Benchmarks to compare with, comma-separated: tau2, appworld, bfcl.")
    ] = "tau2,appworld,bfcl",
    top: Annotated[int, typer.Option(help="Closest tool pairs to list per app and benchmark.")] = 3,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Out-of-distribution audit: how close each app's description, tools and task requests are to benchmark domains.

    A score (0..1, TF-IDF cosine) at or above the threshold flags an app to hold out when
    evaluating on that benchmark; the nearest domain and the closest tools say why.
    """
    from envsynth.audit import AuditError
    from envsynth.audit import audit as run_audit
    from envsynth.corpus.errors import CorpusError

    names = [n.strip() for n in against.split(",") if n.strip()]
    try:
        result = run_audit(corpus, names, top=max(top, 0))
    except (AuditError, CorpusError) as exc:
        fail(str(exc))
    if as_json:
        print(json.dumps(result, indent=2))
        return
    t = Table(title=f"OOD audit of {corpus} (TF-IDF cosine; overlap at >= {result['threshold']})")
    t.add_column("app")
    for b in names:
        t.add_column(f"{b}: score (nearest domain)")
    t.add_column("hold out for")
    for a in result["apps"]:
        cells = [f"{a['against'][b]['score']:.3f} ({a['against'][b]['nearest_domain']})" for b in names]
        flagged = [b for b in names if a["against"][b]["overlap"]]
        t.add_row(a["name"], *cells, styled(", ".join(flagged), "bold red") if flagged else "-")
    console.print(t)
    for a in result["apps"]:
        for b in names:
            r = a["against"][b]
            if r["overlap"]:
                pairs = "; ".join(f"{m['tool']} ~ {m['reference']} ({m['similarity']:.2f})" for m in r["closest_tools"])
                console.print(f"{a['name']} ~ {b}/{r['nearest_domain']}: shares {', '.join(r['shared_terms'])}; closest tools: {pairs}")
    flagged_apps = sum(any(a["against"][b]["overlap"] for b in names) for a in result["apps"])
    console.print(f"audit: {len(result['apps'])} apps, {flagged_apps} overlapping {', '.join(names)}")
