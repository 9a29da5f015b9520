"""What the HTML report shows, as plain data read through the corpus, app, graph and run loaders."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from envsynth.corpus.load import Corpus
from envsynth.rollout.summary import pass_at_k, summarize_records
from envsynth.rollout.trajectory import RUN_CONFIG, TRAJECTORIES, counts, read_graded
from envsynth.runtime.app import App


def app_data(corpus: Corpus, name: str) -> dict[str, Any]:
    """One app: tables, tools by archetype, test verdicts per tool, graph elements and admission."""
    from envsynth.graph.io import GRAPH_FILE, read_graph
    from envsynth.view.html.graph import graph_elements

    app: App = corpus.apps[name]
    record = next(a for a in corpus.manifest.apps if a.name == name)
    folder = corpus.path / record.path
    bp = app.blueprint
    tests = json.loads((folder / "tests.json").read_text(encoding="utf-8")) if (folder / "tests.json").is_file() else {}
    per_tool: dict[str, Counter[str]] = defaultdict(Counter)
    for v in tests.get("verdicts", []):
        per_tool[v["tool"]][v["observed"]] += 1
        per_tool[v["tool"]]["failed"] += not v.get("ok", True)
    graph = graph_elements(read_graph(folder), [e.name for e in bp.entities]) if (folder / GRAPH_FILE).is_file() else None
    return {
        "name": name,
        "title": bp.title,
        "category": bp.category,
        "description": bp.description,
        "tables": [
            {"name": e.name, "description": e.description, "fields": [f"{f.name}: {f.type}" for f in e.fields], "label": e.label}
            for e in bp.entities
        ],
        "tools": [
            {
                "name": s.name,
                "kind": s.kind,
                "mode": s.mode,
                "entity": s.entity,
                "description": s.description,
                "tests": dict(per_tool[s.name]),
            }
            for s in app.specs
        ],
        "tools_count": len(app.specs),
        "by_kind": dict(Counter(s.kind for s in app.specs).most_common()),
        "tests": tests.get("summary", {}),
        "graph": graph,
        "admission": {
            "attempts": record.attempts,
            "admitted": record.admitted,
            "records": record.records,
            "rate": record.admitted / record.attempts if record.attempts else 0.0,
            "exhausted": record.exhausted,
            "rejections": record.rejections,
        },
    }


def corpus_data(corpus: Corpus) -> dict[str, Any]:
    """The corpus: :func:`envsynth.corpus.corpus_stats` (composition, chains, distractors, admission, quality, coherence) plus names."""
    from envsynth.corpus.stats import corpus_stats

    stats = corpus_stats(corpus)
    stats["failed_apps"] = [{"name": a.name, "error": a.error} for a in corpus.manifest.apps if a.error]
    return stats


def _chain_lengths(corpus: Corpus) -> dict[str, int]:
    return {t.id: int(t.stats.get("chain_length", len(t.oracle))) for t in corpus.tasks}


def _pass_by(records: list[dict[str, Any]], key: Any) -> dict[str, dict[str, float]]:
    """Group -> ``pass@1`` and ``pass@k`` (k: the fewest attempts of a task in the group), unbiased, mean over tasks."""
    tasks: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        g = key(r)
        if g is not None:
            tasks[str(g)][r["task_id"]].append(bool(r.get("reward", {}).get("passed")))
    out: dict[str, dict[str, float]] = {}
    for g in sorted(tasks, key=lambda s: (0, int(s), "") if s.isdigit() else (1, 0, s)):  # chain lengths by number, apps by name
        per = tasks[g].values()
        k = min(len(v) for v in per)
        out[g] = {
            "tasks": len(per),
            "pass@1": sum(pass_at_k(len(v), sum(v), 1) for v in per) / len(per),
            f"pass@{k}": sum(pass_at_k(len(v), sum(v), k) for v in per) / len(per),
        }
    return out


def run_data(run_dir: Path, corpus: Corpus) -> dict[str, Any]:
    """One run folder: its summary, pass@1/pass@k per app and chain length, failure kinds and tokens per app.

    Raises:
        FileNotFoundError: the folder holds no ``trajectories.jsonl``.
    """
    if not (run_dir / TRAJECTORIES).is_file():
        raise FileNotFoundError(f"{run_dir} is not a run folder: no {TRAJECTORIES}")
    everything = read_graded(run_dir)
    records = [r for r in everything if counts(r)]  # labelled episodes (user_failure, judge_error) stay out
    config = json.loads((run_dir / RUN_CONFIG).read_text(encoding="utf-8")) if (run_dir / RUN_CONFIG).is_file() else {}
    chains = _chain_lengths(corpus)
    failures: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for r in records:
        failures.update(m.get("kind", "other") for m in r.get("reward", {}).get("breakdown", []))
        if r.get("error"):
            failures[f"error: {r['error'].get('kind', 'unknown')}"] += 1
        tokens[r["app"]] += int(r.get("usage", {}).get("total_tokens", 0))
    known = [r for r in records if r["task_id"] in chains]
    return {
        "label": run_dir.name,
        "path": str(run_dir),
        "config": config,
        "same_corpus": config.get("corpus_digest") in (None, corpus.manifest.digest),
        "summary": summarize_records(everything).to_dict(),
        "by_app": _pass_by(records, lambda r: r["app"]),
        "by_chain": _pass_by(known, lambda r: chains[r["task_id"]]),
        "failure_kinds": dict(failures.most_common()),
        "tokens_by_app": dict(sorted(tokens.items())),
        "unknown_tasks": len(records) - len(known),
        "records": records,
        "failed": [r for r in records if not r.get("reward", {}).get("passed")],
    }
