"""Helpers shared by the sandbox tests."""

from __future__ import annotations

import os

from envsynth.tasks.model import Task

FORCE_FALLBACK = os.environ.get("ENVSYNTH_SANDBOX_FALLBACK") == "1"  # run the suite on the subprocess fallback


def oracle_block(task: Task) -> str:
    """The task's oracle program as a code block ending with complete_task."""
    return (
        "def _call(name, arguments):\n"
        "    return globals()[name](**arguments)\n"
        + task.oracle_program.replace("env.call(", "_call(")
        + "complete_task(answer=solve(None))\n"
    )
