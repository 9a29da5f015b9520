"""Admission: whether a task is kept, and the variants of an admitted one.

A task state and its request become a sealed task, admitted or rejected with the reason
(admit.py): a do-nothing agent must score 0, the oracle 1, and every row the request names
must be findable with the visible tools from what it states (solvable.py). Variant stages make
the oracle look rows up as an agent would (lookup.py, routes.py), later states carry state 0's
admitted task over to their own ids (restate.py), and tasks under a rule of the app's policy
are marked, rejected or made refusal tasks (policy.py, refusal_rows.py).
"""
