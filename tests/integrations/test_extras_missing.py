"""Without its extra, an integration's import fails with the pip command that installs it; the package imports none."""

from __future__ import annotations

import subprocess
import sys

import pytest

_BLOCK = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # what Python does for a package that is not installed
import envsynth.integrations
try:
    import {module}
except ImportError as exc:
    print(exc)
else:
    print("imported")
"""


@pytest.mark.parametrize(
    ("module", "blocked", "extra"),
    [
        ("envsynth.integrations.openenv_env", ["openenv", "openenv.core"], "envsynth[openenv]"),
        ("envsynth.integrations.skyrl_env", ["skyrl_gym"], "envsynth[skyrl]"),
    ],
)
def test_missing_extra_names_the_pip_command(module: str, blocked: list[str], extra: str) -> None:
    code = _BLOCK.format(blocked=blocked, module=module)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"pip install '{extra}'" in out.stdout


def test_the_package_imports_no_integration_library() -> None:
    code = "import sys, envsynth.integrations; print(sorted(m for m in ('openenv', 'skyrl_gym', 'trl', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr
