"""The OOD audit: how close each app of a corpus is to the domains of evaluation benchmarks.

For every app and benchmark it compares, with TF-IDF cosine (see :mod:`envsynth.audit.similarity`):

- ``description``: the app's title, description and table names and descriptions against each
  benchmark domain's whole text (name, description, tool names and descriptions);
- ``tools``: each tool's name and description against every tool of the benchmark (the mean of
  each tool's best match);
- ``instructions``: the app's task requests (when the folder is a corpus) against each domain.

``score`` is the mean of the parts the app has; the nearest domain and the closest tool pairs are
reported with the words they share, so a user can see why and hold out what overlaps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from envsynth.audit.similarity import Vector, Vectoriser, cosine, shared_terms, tokens
from envsynth.errors import EnvsynthError

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus

BENCHMARKS = ("tau2", "appworld", "bfcl")
"""The benchmarks whose reference lists ship with envsynth (``envsynth/audit/references/<name>.yaml``)."""
OVERLAP = 0.25
"""A score at or above which an app is flagged as overlapping a benchmark (hold it out when evaluating there)."""


class AuditError(EnvsynthError, ValueError):
    """An unknown benchmark, or a folder without apps."""


@dataclass
class Domain:
    """One benchmark domain of a reference list."""

    benchmark: str
    name: str
    description: str
    tools: dict[str, str]

    def text(self) -> str:
        return " ".join([self.name, self.description, *(f"{n} {d}" for n, d in self.tools.items())])


@dataclass
class AppText:
    """What the audit reads of one app."""

    name: str
    description: str
    tools: dict[str, str]
    instructions: list[str] = field(default_factory=list)


def load_references(names: list[str]) -> list[Domain]:
    """The shipped domains of the benchmarks ``names``.

    Raises:
        AuditError: a name without a shipped reference list.
    """
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise AuditError(f"unknown benchmark(s) {', '.join(unknown)}: envsynth ships references for {', '.join(BENCHMARKS)}")
    out = []
    for name in names:
        doc = yaml.safe_load((resources.files("envsynth.audit") / "references" / f"{name}.yaml").read_text(encoding="utf-8"))
        out += [Domain(name, d["name"], d["description"], dict(d["tools"])) for d in doc["domains"]]
    return out


def read_apps(folder: str | Path) -> list[AppText]:
    """The apps of a corpus folder (with their task requests) or of a folder of built apps.

    Raises:
        AuditError: no app in the folder.
        envsynth.corpus.CorpusError: a corpus that cannot be read.
    """
    from envsynth.corpus.layout import MANIFEST

    root = Path(folder)
    if (root / MANIFEST).is_file():
        from envsynth.corpus.load import load_corpus

        return corpus_apps(load_corpus(root))
    dirs = [d for d in sorted(root.glob("*")) + sorted(root.glob("apps/*")) if (d / "app.json").is_file()]
    if (root / "app.json").is_file():
        dirs = [root]
    if not dirs:
        raise AuditError(f"no apps in {root}: give a corpus or a folder written by envsynth build")
    return [_app_text(d, []) for d in dirs]


def corpus_apps(corpus: Corpus) -> list[AppText]:
    """The apps of a loaded corpus, each with its task requests."""
    requests: dict[str, list[str]] = {}
    for t in corpus.tasks:
        requests.setdefault(t.app, []).append(t.instruction)
    return [_app_text(corpus.path / "apps" / name, requests.get(name, [])) for name in corpus.apps]


def _app_text(folder: Path, instructions: list[str]) -> AppText:
    manifest = json.loads((folder / "app.json").read_text(encoding="utf-8"))
    bp = manifest["blueprint"]
    parts = [bp["title"], bp.get("description", "")]
    parts += [f"{e['name']} {e.get('description', '')}" for e in bp["entities"]]
    tools = {t["name"]: t.get("description", "") for t in manifest["tools"]}
    return AppText(manifest["name"], " ".join(parts), tools, instructions)


class _Space:
    """Vectors of every document, with one idf over the references and the apps."""

    def __init__(self, domains: list[Domain], apps: list[AppText]) -> None:
        docs = [tokens(d.text()) for d in domains]
        docs += [tokens(" ".join([a.description, *(f"{n} {d}" for n, d in a.tools.items())])) for a in apps]
        self.vec = Vectoriser(docs)
        self.domains = [(d, self.vec.vector(tokens(d.text()))) for d in domains]
        self.ref_tools = [(d, n, self.vec.vector(tokens(f"{n} {desc}"))) for d in domains for n, desc in d.tools.items()]


def _tool_matches(space: _Space, app: AppText, benchmark: str) -> list[dict[str, Any]]:
    out = []
    refs = [(d, n, v) for d, n, v in space.ref_tools if d.benchmark == benchmark]
    for name, desc in app.tools.items():
        v = space.vec.vector(tokens(f"{name} {desc}"))
        best = max(refs, key=lambda r: (cosine(v, r[2]), r[1]))
        out.append(
            {
                "tool": name,
                "reference": f"{best[0].name}.{best[1]}",
                "similarity": round(cosine(v, best[2]), 4),
                "shared": shared_terms(v, best[2], 4),
            }
        )
    return sorted(out, key=lambda m: (-m["similarity"], m["tool"]))


def _nearest(space: _Space, vector: Vector, benchmark: str) -> tuple[Domain, float, list[str]]:
    scored = [(cosine(vector, v), d.name, d, v) for d, v in space.domains if d.benchmark == benchmark]
    sim, _, domain, v = max(scored, key=lambda s: (s[0], s[1]))
    return domain, sim, shared_terms(vector, v)


def audit_app(space: _Space, app: AppText, benchmark: str, top: int = 3) -> dict[str, Any]:
    """One app against one benchmark: the score, its parts, the nearest domain and the closest tools."""
    desc_vec = space.vec.vector(tokens(app.description))
    whole = space.vec.vector(tokens(" ".join([app.description, *(f"{n} {d}" for n, d in app.tools.items())])))
    nearest, _, shared = _nearest(space, whole, benchmark)
    parts = {"description": _nearest(space, desc_vec, benchmark)[1]}
    matches = _tool_matches(space, app, benchmark)
    parts["tools"] = sum(m["similarity"] for m in matches) / len(matches) if matches else 0.0
    if app.instructions:
        parts["instructions"] = _nearest(space, space.vec.vector(tokens(" ".join(app.instructions))), benchmark)[1]
    score = sum(parts.values()) / len(parts)
    return {
        "benchmark": benchmark,
        "score": round(score, 4),
        "parts": {k: round(v, 4) for k, v in parts.items()},
        "nearest_domain": nearest.name,
        "shared_terms": shared,
        "closest_tools": matches[:top],
        "overlap": score >= OVERLAP,
    }


def audit(folder: str | Path, against: list[str], top: int = 3) -> dict[str, Any]:
    """Audit every app of ``folder`` (a corpus or a folder of built apps) against the benchmarks ``against``.

    See :func:`audit_apps` for what it returns.
    """
    return audit_apps(read_apps(folder), against, top)


def audit_apps(apps: list[AppText], against: list[str], top: int = 3) -> dict[str, Any]:
    """Audit apps (:func:`read_apps`, :func:`corpus_apps`) against the benchmarks ``against``.

    Returns:
        ``method``, ``benchmarks``, ``threshold`` and ``apps``: per app its ``name``, ``closest``
        (the benchmark it is nearest to) and ``against`` (per benchmark: score 0..1, its parts,
        nearest domain, shared terms, closest tool pairs, overlap flag), apps sorted by their
        highest score first.
    """
    domains = load_references(against)
    space = _Space(domains, apps)
    rows = []
    for app in apps:
        res = {b: audit_app(space, app, b, top) for b in against}
        closest = max(against, key=lambda b: (res[b]["score"], b))
        rows.append({"name": app.name, "closest": closest, "max_score": res[closest]["score"], "against": res})
    rows.sort(key=lambda r: (-r["max_score"], r["name"]))
    return {"method": "tfidf-cosine", "benchmarks": against, "threshold": OVERLAP, "apps": rows}
