"""Scratch connections (runtime.state.scratch_connection): reused per schema, but not kept forever."""

from __future__ import annotations

import threading

from envsynth.runtime import state


def test_a_thread_keeps_only_the_most_recently_used_scratch_connections() -> None:
    out: dict[str, object] = {}

    def work() -> None:
        schemas = [f'CREATE TABLE "t{i}" (id TEXT PRIMARY KEY);' for i in range(state.SCRATCH_CONNECTIONS + 8)]
        first = state.scratch_connection(schemas[0])
        out["reused"] = state.scratch_connection(schemas[0]) is first
        for s in schemas[1:]:
            state.scratch_connection(s)
        out["kept"] = len(state._SCRATCH.conns)
        last = state.scratch_connection(schemas[-1])
        out["last_reused"] = state.scratch_connection(schemas[-1]) is last
        out["first_renewed"] = state.scratch_connection(schemas[0]) is not first
        out["tables"] = first.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()  # a user's reference still works

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert out == {"reused": True, "kept": state.SCRATCH_CONNECTIONS, "last_reused": True, "first_renewed": True, "tables": [("t0",)]}
