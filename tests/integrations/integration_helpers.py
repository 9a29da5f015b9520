"""Playing a task's oracle through an integration: its calls with refs filled in from earlier results."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import MISSING, resolve


def oracle_calls(task: Task, step: Callable[[str, dict[str, Any]], str]) -> None:
    """Make the oracle's calls through ``step(name, arguments) -> result text``, refs taken from the JSON results."""
    results: list[Any] = []
    for call in task.oracle:
        args = dict(call.args)
        for name, ref in call.refs.items():
            value = resolve(ref, results)
            assert value is not MISSING, f"oracle of {task.id}: {ref} not in the results"
            args[name] = value
        results.append(json.loads(step(call.tool, args)))
