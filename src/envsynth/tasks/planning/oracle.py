"""The oracle solver as a readable program (the chain C of ScaleEnv, as code)."""

from __future__ import annotations

import json

from envsynth.runtime.answerpath import answer_expr
from envsynth.tasks.model import Call
from envsynth.tasks.planning.refs import source

_JSON = json.JSONEncoder(ensure_ascii=False)  # what json.dumps(v, ensure_ascii=False) would build per value


def oracle_program(calls: list[Call], answer_step: int | None, answer_field: str | None) -> str:
    """Python source of ``solve(env)``: the oracle's calls, results feeding later arguments.

    ``env.call(name, arguments)`` returns the tool's result as Python data.
    """
    lines = ["def solve(env):"]
    for i, c in enumerate(calls):
        parts = [f"{k!r}: {_literal(v)}" for k, v in c.args.items()]
        parts += [f"{k!r}: {source(ref)}" for k, ref in c.refs.items()]
        lines.append(f"    r{i} = env.call({c.tool!r}, {{{', '.join(parts)}}})")
    if answer_step is not None and answer_field is not None:
        lines.append(f"    return {answer_expr(f'r{answer_step}', answer_field)}")
    else:
        lines.append("    return None")
    return "\n".join(lines) + "\n"


def _literal(value: object) -> str:
    """A Python literal of an argument: strings as JSON writes them (valid Python too), True/False/None and lists as Python."""
    return _JSON.encode(value) if isinstance(value, str) else repr(value)
