"""Wording: the request a user says, in their own words.

Rows are named the way a person knows them, never by id (describe.py); the requester and how
they open (requester.py, roles.py: who may ask for what), the instruction and the questions of
information tasks in varied phrasing (instruction.py, questions.py, words.py: plurals, verbs,
field words), and the tau2-style scenario (scenario.py); request.py composes them into the
task's request.
"""
