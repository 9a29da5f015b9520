"""Numbers about a corpus for ``envsynth inspect``: tasks by kind, chain lengths, distractors, admission, graphs."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from envsynth.corpus.layout import APPS_DIR
from envsynth.corpus.load import Corpus
from envsynth.tasks.model import Task


def _histogram(counter: Counter[int]) -> dict[str, int]:
    return {str(k): counter[k] for k in sorted(counter)}


def corpus_stats(corpus: Corpus) -> dict[str, Any]:
    """Plain-data statistics of a loaded corpus.

    Returns:
        ``composition``, ``seed``, ``tasks`` (records), ``tasks_by_kind``, ``chain_length``
        (a histogram: length -> tasks; ``stats['chain_length']`` or the oracle's length),
        ``distractor_rows`` (rows added per depth level, summed over tasks, and their mean),
        ``admission`` (attempts, admitted, rate, rejections by reason...), ``apps``
        (per app: tasks, admission, graph nodes and edges from its ``graph.json``) and
        ``quality`` (the task quality linter's defect rates, chain connectedness, tool
        coverage per app and user roles: :func:`envsynth.report.lint_corpus`), ``coherence`` (the
        state linter's share of tasks whose initial state has each class of defect, with examples:
        :func:`envsynth.report.lint_states`), ``difficulty``
        (tasks per tier, the mean score, tasks per construct) and ``baselines`` (the share of
        tasks each guessing baseline scores 1.0 on: :func:`envsynth.corpus.baselines.baseline_rates`).
    """
    from envsynth.corpus.baselines import baseline_rates

    m = corpus.manifest
    tasks = list(corpus.tasks)  # each record read once (corpus.tasks reads them on demand)
    kinds = Counter(t.kind for t in tasks)
    chains = Counter(int(t.stats.get("chain_length", len(t.oracle))) for t in tasks)
    depth: Counter[str] = Counter()
    for t in tasks:
        depth.update(t.state.distractor_depth)
    n = len(tasks)
    return {
        "path": str(corpus.path),
        "envsynth_version": m.envsynth_version,
        "seed": m.seed,
        "composition": m.composition.model_dump(),
        "tasks": n,
        "tasks_by_kind": dict(sorted(kinds.items())),
        "chain_length": _histogram(chains),
        "distractor_rows": {
            "total": dict(sorted(depth.items())),
            "mean_per_task": {k: round(v / n, 3) for k, v in sorted(depth.items())} if n else {},
        },
        "difficulty": _difficulty(tasks),
        "baselines": baseline_rates(corpus, tasks),
        "admission": m.admission.model_dump(),
        "apps": [
            {
                "name": a.name,
                "tasks": a.records,
                "admitted": a.admitted,
                "attempts": a.attempts,
                "exhausted": a.exhausted,
                "rejections": a.rejections,
                "error": a.error,
                "graph": _graph_counts(corpus, a.name) if a.error is None else None,
            }
            for a in m.apps
        ],
        "quality": _quality(corpus, tasks),
        "coherence": _coherence(corpus, tasks),
    }


def _quality(corpus: Corpus, tasks: list[Task]) -> dict[str, Any]:
    from envsynth.report import AppView, lint_corpus

    views = {name: AppView(app.blueprint, app.specs) for name, app in corpus.apps.items()}
    return lint_corpus(tasks, views).model_dump()


def _coherence(corpus: Corpus, tasks: list[Task]) -> dict[str, Any]:
    from envsynth.report import lint_states

    return lint_states(tasks, {name: app.blueprint for name, app in corpus.apps.items()}).model_dump()


def _graph_counts(corpus: Corpus, app: str) -> dict[str, Any] | None:
    path = corpus.path / APPS_DIR / app / "graph.json"
    if not path.is_file():
        return None
    g = json.loads(path.read_text(encoding="utf-8"))
    return {"nodes": len(g.get("nodes", [])), "edges": len(g.get("edges", [])), "edge_counts": g.get("edge_counts", {})}


def _difficulty(tasks: list[Any]) -> dict[str, Any]:
    """Tasks per tier (every tier listed), the mean score and tasks per construct (most used first)."""
    from envsynth.tasks.admission.difficulty import TIERS

    tiers = Counter(t.tier for t in tasks)
    used: Counter[str] = Counter()
    for t in tasks:
        used.update(t.constructs)
    return {
        "tiers": {tier: tiers.get(tier, 0) for tier in TIERS},
        "mean": round(sum(t.difficulty for t in tasks) / len(tasks), 2) if tasks else 0.0,
        "constructs": dict(used.most_common()),
    }
