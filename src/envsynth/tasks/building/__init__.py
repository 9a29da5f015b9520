"""Building: the initial states a planned chain runs on.

A plan becomes a small world, the oracle's arguments and an initial state s0 proven by
executing the chain (world.py, instantiate.py, step_args.py); then the minimal core rows, the
rows the request must name and the tools the agent sees (core.py, visible.py), and the S task
states, each with distractor rows by depth and its ground-truth run (states.py, distractors.py).
"""
