"""No import cycles between envsynth's subpackages: data flows one way through the stages.

Every import counts, lazy ones inside functions included (a cycle hidden in a function is
still a cycle); only imports under ``if TYPE_CHECKING:`` are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

import envsynth

SRC = Path(envsynth.__file__).parent


def _unit(path: Path) -> str:
    """The subpackage (or top-level module) a source file belongs to: ``tasks``, ``cli``..."""
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(tree: ast.AST) -> list[tuple[str, int]]:
    hidden = {
        id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)
    }
    out = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, node.lineno))
    return out


def dependency_graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for path in sorted(SRC.rglob("*.py")):
        unit = _unit(path)
        g.add_node(unit)
        for module, line in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            parts = module.split(".")
            if parts[0] != "envsynth" or len(parts) < 2 or parts[1] == unit:
                continue
            g.add_edge(unit, parts[1])
            g.edges[unit, parts[1]].setdefault("at", []).append(f"{path.relative_to(SRC)}:{line}")
    return g


def test_no_import_cycles_between_subpackages() -> None:
    g = dependency_graph()
    assert {"blueprint", "runtime", "tasks", "sandbox", "compiler", "corpus"} <= set(g)
    cycles = [c for c in nx.simple_cycles(g)]
    where = [[g.edges[c[i], c[(i + 1) % len(c)]]["at"][0] for i in range(len(c))] for c in cycles[:5]]
    assert not cycles, f"import cycles: {cycles[:5]} at {where}"


def test_the_finder_sees_lazy_imports(tmp_path: Path) -> None:
    code = "import typing\nif typing.TYPE_CHECKING:\n    from envsynth.tasks import Task\n\ndef f():\n    from envsynth.sandbox import untrusted\n"
    found = [m for m, _ in _imports(ast.parse(code))]
    assert "envsynth.sandbox" in found and "envsynth.tasks" not in found
