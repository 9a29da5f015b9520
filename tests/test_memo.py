"""Indexes of derived lookups (envsynth.memo): owned by one object, never shared with a copy."""

from __future__ import annotations

import copy
import pickle

from envsynth import catalog
from envsynth.memo import Index
from envsynth.runtime.state import id_fields


def test_a_copy_with_other_entities_does_not_answer_from_its_originals_index() -> None:
    bp = catalog.load("taskboard")
    first = bp.entities[0]
    assert bp.entity(first.name) is first and id_fields(bp)[first.name] == first.id_field  # indexes built
    renamed = first.model_copy(update={"name": "renamed"})
    other = bp.model_copy(update={"entities": [renamed, *bp.entities[1:]]})
    assert other.entity("renamed") is renamed
    assert "renamed" in id_fields(other) and first.name not in id_fields(other)
    assert first.name in id_fields(bp)


def test_copies_and_pickles_leave_the_index_behind() -> None:
    bp = catalog.load("taskboard")
    bp.entity(bp.entities[0].name)
    assert "index" in bp.__dict__
    for clone in (copy.copy(bp), copy.deepcopy(bp), pickle.loads(pickle.dumps(bp))):
        assert "index" not in clone.__dict__
        assert clone == bp and clone.entity(bp.entities[0].name) == bp.entities[0]


def test_paired_lookups_are_rebuilt_for_another_object() -> None:
    calls: list[str] = []

    def build(owner: str, other: list[str], key: str) -> str:
        calls.append(key)
        return f"{owner}+{other[0]}+{key}"

    index, a, b = Index(), ["a"], ["a"]  # equal, but not the same object
    assert index.paired(build, "o", a, "k") == "o+a+k"
    assert index.paired(build, "o", a, "k") == "o+a+k"
    assert calls == ["k"]
    index.paired(build, "o", b, "k")
    assert calls == ["k", "k"]
