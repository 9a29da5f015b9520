"""Rejection.reason is a closed set: an unknown reason is refused where the rejection is made."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

import envsynth
from envsynth.tasks.model import Coordinates, Rejection, RejectionReason

SRC = Path(envsynth.__file__).parent
COORDS = Coordinates(app=0, task=0, state=0, distractors=0)


def test_a_known_reason_is_kept_as_its_string() -> None:
    r = Rejection(app="shop", coordinates=COORDS, reason="oracle_fails", detail="with another episode seed")
    assert r.reason == "oracle_fails"
    assert '"reason":"oracle_fails"' in r.model_dump_json()  # corpus files keep today's strings


def test_an_unknown_reason_is_refused() -> None:
    with pytest.raises(ValidationError, match="reason"):
        Rejection(app="shop", coordinates=COORDS, reason="oracle_sad")


def _reasons_in_source() -> set[str]:
    """The reason literals the source gives: ``reject("...")``, ``reason="..."``, what ``admit`` and ``_judge``
    return, and ``why, detail = "...", ...`` in the state draws."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "reject" and node.args:
                found |= {node.args[0].value} if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) else set()
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Rejection":
                found |= {k.value.value for k in node.keywords if k.arg == "reason" and isinstance(k.value, ast.Constant)}
            if isinstance(node, ast.FunctionDef) and node.name in ("admit", "_judge"):
                returned = [c for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None for c in ast.walk(r.value)]
                found |= {c.value for c in returned if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if isinstance(node, ast.Assign) and [getattr(e, "id", None) for e in getattr(node.targets[0], "elts", ())] == ["why", "detail"]:
                first = node.value.elts[0] if isinstance(node.value, ast.Tuple) else None
                found |= {first.value} if isinstance(first, ast.Constant) else set()
            if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "SYNTHESIS_ERROR" and isinstance(node.value, ast.Constant):
                found.add(node.value.value)
    return found


def test_every_reason_the_source_gives_is_in_the_set() -> None:
    """Each reason a stage can give is in the set, and the set holds no reason that no stage gives."""
    assert _reasons_in_source() == set(get_args(RejectionReason))
