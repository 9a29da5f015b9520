"""One error root: every exception class of envsynth is an EnvsynthError, and the CLI prints any of them on one line."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

import envsynth
import envsynth.catalog
from envsynth.agents.oracle import OracleError
from envsynth.audit.audit import AuditError
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.expr import ExprError
from envsynth.cli import app
from envsynth.compiler.build import BuildError, FolderInUseError
from envsynth.corpus.errors import CorpusError
from envsynth.errors import ConfigError, EnvsynthError
from envsynth.export.messages import MalformedMessage
from envsynth.export.write import ExportError
from envsynth.llm.mock import ScriptedHTTPError
from envsynth.llm.types import LLMError
from envsynth.llmbuild.client import BudgetExceeded, CallFailed, PromptTooLong
from envsynth.llmbuild.prompts import PromptError
from envsynth.plan.fit import PlanError
from envsynth.rollout.batch import RunError
from envsynth.runtime.app import AppLoadError
from envsynth.sandbox.launcher import SandboxUnavailable, WorkerDied
from envsynth.sandbox.untrusted import SandboxedToolFailure
from envsynth.serve.registry import ServeError
from envsynth.tasks.building.instantiate import ChainFailed
from envsynth.testing.fixtures import Unsolvable
from envsynth.view.html.build import ReportError

SANDBOX_SIDE = {"envsynth.sandbox.worker", "envsynth.sandbox.tool_worker", "envsynth.runtime.toolkit"}
"""Modules the sandboxed worker loads by path, without envsynth: their exceptions cannot derive from the root."""


def _modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(envsynth.__path__, "envsynth.") if not m.name.endswith(".__main__")]  # runs the CLI


def _imports_envsynth(module: str) -> bool:
    tree = ast.parse(Path(importlib.import_module(module).__file__ or "").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        if any(n == "envsynth" or n.startswith("envsynth.") for n in names):
            return True
    return False


def test_every_exception_class_derives_from_the_root() -> None:
    strays = []
    seen = 0
    for name in _modules():
        module = importlib.import_module(name)
        for cls_name, cls in vars(module).items():
            if not (inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__module__ == name):
                continue
            if issubclass(cls, Warning) or name in SANDBOX_SIDE:  # a warning category; a class of the sandbox's side
                continue
            seen += 1
            if not issubclass(cls, EnvsynthError):
                strays.append(f"{name}.{cls_name}")
    assert seen >= 30 and strays == []


@pytest.mark.parametrize("module", sorted(SANDBOX_SIDE))
def test_sandbox_side_modules_import_nothing_of_envsynth(module: str) -> None:
    """The reason their exceptions are left out above: the sandboxed worker loads them by path, alone."""
    assert not _imports_envsynth(module)


def test_old_bases_still_catch() -> None:
    """Code that caught these as ValueError, RuntimeError or KeyError still does."""
    assert issubclass(BlueprintError, ValueError) and issubclass(ExprError, ValueError) and issubclass(PlanError, ValueError)
    assert issubclass(CorpusError, RuntimeError) and issubclass(RunError, RuntimeError) and issubclass(WorkerDied, RuntimeError)
    assert issubclass(PromptError, KeyError) and issubclass(FolderInUseError, ValueError) and issubclass(MalformedMessage, ValueError)
    assert issubclass(ConfigError, ValueError)
    assert not issubclass(ScriptedHTTPError, LLMError)  # the retry layer classifies it as a raw HTTP failure


ONE_PER_BOUNDARY: dict[str, Callable[[str], EnvsynthError]] = {
    "config": lambda m: ConfigError(m, "max_turns"),
    "blueprint": lambda m: BlueprintError("shop.yaml", m),
    "condition language": ExprError,
    "compile": BuildError,
    "folder in use": FolderInUseError,
    "fixture solver": Unsolvable,
    "app": AppLoadError,
    "tasks": ChainFailed,
    "corpus": CorpusError,
    "run": RunError,
    "oracle": OracleError,
    "sandbox": SandboxUnavailable,
    "sandbox worker": WorkerDied,
    "sandboxed tool": SandboxedToolFailure,
    "llm": lambda m: LLMError(m, kind="server", status=500),
    "scripted http": lambda m: ScriptedHTTPError(500, m),
    "llm build stop": lambda m: BudgetExceeded(1200, 1000),
    "llm build role": lambda m: CallFailed("designer", LLMError(m)),
    "llm build prompt": lambda m: PromptTooLong("designer", 9000, 8000),
    "prompt template": PromptError,
    "serve": lambda m: ServeError(404, "unknown_task", m),
    "export": ExportError,
    "export message": MalformedMessage,
    "plan": PlanError,
    "audit": AuditError,
    "report": ReportError,
}


@pytest.mark.parametrize("boundary", sorted(ONE_PER_BOUNDARY))
def test_cli_prints_one_line_for_an_error_of_each_boundary(boundary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    exc = ONE_PER_BOUNDARY[boundary]("it went wrong\n  on two lines")

    def entries() -> list[object]:
        raise exc

    monkeypatch.setattr(envsynth.catalog, "entries", entries)
    res = CliRunner().invoke(app, ["catalog"])
    assert res.exit_code == 2, (res.exception, res.output)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in res.output
    if "it went wrong" in str(exc):  # (a few classes word their own message from their fields)
        assert "it went wrong" in lines[0]


def test_cli_names_the_flag_of_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def entries() -> list[object]:
        raise ConfigError("must be at least 1, got 0", "max_turns")

    monkeypatch.setattr(envsynth.catalog, "entries", entries)
    res = CliRunner().invoke(app, ["catalog"])
    assert res.exit_code == 2 and res.stderr == "error: --max-turns: must be at least 1, got 0\n"


def test_cli_process_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    """The installed entry point (``main``) in a real process, with an error no command catches."""
    script = (
        "import sys, envsynth.catalog as c\n"
        "from envsynth.corpus.errors import CorpusError\n"
        "def boom(): raise CorpusError('the corpus at /nowhere is gone')\n"
        "c.entries = boom\n"
        "from envsynth.cli import main\n"
        "sys.argv = ['envsynth', 'catalog']\n"
        "main()\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr == "error: the corpus at /nowhere is gone\n" and res.stdout == ""


FLAG_WORDED_LEFT = {
    "compiler/build.py": "FolderInUseError's hint to rebuild with --force (the CLI tests expect the flag)",
    "plan/suggest.py": "a whole command to run: envsynth plan fit RESULTS.csv --out FILE",
    "serve/http.py": "an HTTP refusal telling the remote client how the server was started (--user-token)",
    "serve/net.py": "the exposure check's hint: --token or --insecure",
}
"""Errors of other boundaries whose messages still give a command-line hint (to be worded for library users next)."""


def _flag_worded_raises() -> dict[str, list[int]]:
    """``raise`` statements outside the CLI whose message names a command-line flag, by file."""
    src = Path(envsynth.__file__).parent
    found: dict[str, list[int]] = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel.startswith("cli/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                text = " ".join(c.value for c in ast.walk(node.exc) if isinstance(c, ast.Constant) and isinstance(c.value, str))
                if re.search(r"(^|[\s(])--[a-z]", text):
                    found.setdefault(rel, []).append(node.lineno)
    return found


def test_library_errors_are_not_worded_as_command_line_flags() -> None:
    """Settings are refused with a ConfigError naming the option; the CLI turns the option into its flag."""
    assert set(_flag_worded_raises()) <= set(FLAG_WORDED_LEFT)


def test_run_settings_are_config_errors_naming_their_option(tmp_path: Path) -> None:
    from envsynth.rollout.config import RunConfig

    cases = [
        ({"agent": "gpt"}, "agent"),
        ({"agent": "oracle", "mode": "shell"}, "mode"),
        ({"agent": "oracle", "user_sim": True}, "user_model"),
        ({"agent": "oracle", "attempts": 0}, "attempts"),
        ({"agent": "oracle", "max_errors": -1}, "max_errors"),
        ({"agent": "oracle", "temperature": -0.5}, "temperature"),
    ]
    for kwargs, option in cases:
        with pytest.raises(ConfigError) as info:
            RunConfig.of(corpus=tmp_path, out=tmp_path / "run", **kwargs)
        assert info.value.option == option and "--" not in str(info.value), (kwargs, str(info.value))
