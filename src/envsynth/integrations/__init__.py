"""Trainer and environment-hub integrations: an envsynth corpus as another library's environment.

One module per library, each an optional extra imported lazily (``pip install 'envsynth[<lib>]'``);
importing this package imports none of them. docs/train.md takes a newcomer from ``make demo`` to a
training step with each.
"""
