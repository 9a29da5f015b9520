"""The docs run: the worked example of docs/blueprints.md builds and passes, and every Python snippet of
README.md and docs/*.md runs against a small demo corpus (those marked ``<!-- not-run: reason -->`` are skipped)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from envsynth import build_app, catalog, load_blueprint
from envsynth.corpus import build_corpus
from envsynth.runtime.episode import Episode
from envsynth.tasks.episode import TaskEpisode

ROOT = Path(__file__).parent.parent


def test_docs_worked_example_is_the_tested_file() -> None:
    doc = (ROOT / "docs" / "blueprints.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", doc, flags=re.S) if "name: vet_clinic" in b]
    assert blocks, "the worked example is missing from docs/blueprints.md"
    assert yaml.safe_load(blocks[0]) == yaml.safe_load((ROOT / "tests" / "data" / "vet_clinic.yaml").read_text())


def test_docs_worked_example_builds(tmp_path: Path) -> None:
    built = build_app(load_blueprint(ROOT / "tests" / "data" / "vet_clinic.yaml"), tmp_path)
    assert built.report.passed
    assert built.report.counts()["unexpected_failure"] == 0
    assert {s.kind for s in built.app.specs} >= {"get", "search", "create", "update", "transition", "book", "aggregate"}


SNIPPET = re.compile(r"(?:<!--\s*not-run:\s*(?P<reason>[^>]*?)\s*-->\s*\n)?```python\n(?P<code>.*?)```", re.S)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _snippets() -> list[Any]:
    """Every ```python block of README.md and docs/*.md, by file and line; marked ones skipped with their reason."""
    out = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in SNIPPET.finditer(text):
            where = f"{doc.relative_to(ROOT)}:{text.count(chr(10), 0, m.start('code'))}"
            marks = [pytest.mark.skip(reason=f"{where}: {m['reason']}")] if m["reason"] else []
            out.append(pytest.param(where, m["code"], id=where, marks=marks))
    return out


def _in_procedural_tests() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(os.path.join("testing", "procedural.py")):
            return True
        frame = frame.f_back
    return False


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as after a small `make demo`: out/ a corpus, and the blueprint files the snippets read."""
    root = tmp_path_factory.mktemp("docs")
    first = catalog.names()[0]  # as in `make demo`, the corpus's first tasks are of the catalogue's first app
    apps = [catalog.load(first), catalog.load("harbor_market")]
    build_corpus(root / "out", blueprints=apps, tasks_per_app=2, states=2, distractors=1)
    for name in ("my_domain.yaml", "my.yaml"):
        shutil.copy(ROOT / "tests" / "data" / "bookshop.yaml", root / name)
    return root


def test_every_python_snippet_is_found() -> None:
    params = _snippets()
    assert len(params) >= 10
    assert all(p.marks or "not-run" not in p.values[1] for p in params)
    assert sum(not p.marks for p in params) >= 5  # the runnable ones stay the many


@pytest.mark.parametrize(("where", "code"), _snippets())
def test_doc_snippet_runs_on_the_demo_corpus(where: str, code: str, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # each snippet runs in a fresh copy of the demo folder; every tool call it makes must name a
    # tool the episode has, with arguments of the right shape
    work = tmp_path / "work"
    shutil.copytree(demo, work)
    monkeypatch.chdir(work)
    calls: list[tuple[str, Any]] = []
    for cls in (Episode, TaskEpisode):
        real = cls.call

        def record(self: Any, name: str, arguments: Any = None, *a: Any, _real: Any = real, **k: Any) -> Any:
            res = _real(self, name, arguments, *a, **k)
            if not _in_procedural_tests():  # a build's own negative test cases are meant to be rejected
                calls.append((name, res))
            return res

        monkeypatch.setattr(cls, "call", record)
    exec(compile(code, where, "exec"), {"__name__": "__snippet__"})
    bad = [(name, res.code, res.content) for name, res in calls if res.code in ("unknown_tool", "invalid_arguments")]
    assert not bad, f"{where}: {bad}"


def test_catalog_and_load_app_after_import_envsynth(demo: Path) -> None:
    # a fresh interpreter: `import envsynth` alone gives envsynth.catalog; load_app finds OUT/<app> in a corpus too
    code = (
        "import envsynth\n"
        "assert envsynth.catalog.load('harbor_market').name == 'harbor_market'\n"
        "assert envsynth.load_app('out/harbor_market').name == 'harbor_market'\n"
        "assert envsynth.load_app('out/apps/harbor_market').name == 'harbor_market'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    res = subprocess.run([sys.executable, "-c", code], cwd=demo, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
