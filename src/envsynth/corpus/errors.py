"""The one error type of the corpus boundary."""

from __future__ import annotations

from envsynth.errors import EnvsynthError


class CorpusError(EnvsynthError, RuntimeError):
    """A corpus folder that is missing, invalid, or was built with another composition.

    The message is one line that names the folder or file and says what is wrong.
    """
