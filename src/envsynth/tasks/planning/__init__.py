"""Planning: what a task asks for before any state exists.

A task index of an app becomes a kind of task and a chain of tool calls planned on the
dependency graph (plan.py, chain.py; rowfacts.py refuses continuations that could never run),
the question of an information task (answer.py, askable.py), and the oracle solution as a
program, whose references to earlier results resolve in one place (oracle.py, refs.py).
"""
