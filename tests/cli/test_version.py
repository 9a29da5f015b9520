"""``envsynth --version`` prints the package version and exits 0, before any command runs."""

from __future__ import annotations

from typer.testing import CliRunner

import envsynth
from envsynth.cli import app as cli


def test_version() -> None:
    got = CliRunner().invoke(cli, ["--version"])
    assert got.exit_code == 0 and got.output == f"envsynth {envsynth.__version__}\n"
    assert "--version" in CliRunner().invoke(cli, ["--help"]).output
    got = CliRunner().invoke(cli, ["--version", "build"])  # eager: the command is not run
    assert got.exit_code == 0 and got.output == f"envsynth {envsynth.__version__}\n"
