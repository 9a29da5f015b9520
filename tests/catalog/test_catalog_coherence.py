"""Catalogue apps whose generated states had defects (docs/tasks.md 7, "State coherence") now draw coherent ones:
a small corpus of two of them has none of the classes their blueprints' rules (not_before, composite keys,
at_most_one, compute, sum_of, when + otherwise, past_when/future_when) keep away."""

from __future__ import annotations

from pathlib import Path

import pytest

from envsynth import catalog
from envsynth.corpus import build_corpus
from envsynth.corpus.load import load_corpus
from envsynth.tasks.admission.coherence import lint_states

FIXED = ("date_order", "repeated_names_per_owner", "balance_on_wrong_kind", "derived_arithmetic", "several_active", "upcoming_in_past")


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bps = [catalog.load("northwind_bank"), catalog.load("juniper_goods")]
    return build_corpus(tmp_path_factory.mktemp("coh") / "c", blueprints=bps, tasks_per_app=8, states=1, distractors=2, seed=0).path


def test_two_apps_states_have_none_of_the_fixed_defects(corpus_path: Path) -> None:
    corpus = load_corpus(corpus_path)
    tasks = list(corpus.tasks)
    assert {t.app for t in tasks} == {"northwind_bank", "juniper_goods"}
    report = lint_states(tasks, {name: app.blueprint for name, app in corpus.apps.items()})
    assert report.tasks >= 16
    found = {c: report.examples.get(c) for c in FIXED if report.counts[c]}
    assert not found, f"state defects: {found}"
