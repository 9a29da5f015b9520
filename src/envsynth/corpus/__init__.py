"""Corpora: A apps x T tasks x S initial states at distractor depth D, built resumably and read back.

Usage::

    from envsynth import catalog
    from envsynth.corpus import build_corpus, load_corpus
    summary = build_corpus("corpus/", blueprints=[catalog.load("harbor_market")], tasks_per_app=10, states=2)
    corpus = load_corpus("corpus/")
    ep = corpus.start(corpus.tasks[0])          # a TaskEpisode: .tools, .call(), .finish()
"""

from __future__ import annotations

from envsynth.corpus.app_tasks import AppProgress
from envsynth.corpus.build import CorpusSummary, build_corpus
from envsynth.corpus.errors import CorpusError
from envsynth.corpus.layout import SHARD_SIZE, attempt_budget
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.corpus.manifest import AppRecord, Composition, CorpusManifest
from envsynth.corpus.stats import corpus_stats

__all__ = [
    "SHARD_SIZE",
    "AppProgress",
    "AppRecord",
    "Composition",
    "Corpus",
    "CorpusError",
    "CorpusManifest",
    "CorpusSummary",
    "attempt_budget",
    "build_corpus",
    "corpus_stats",
    "load_corpus",
]
