"""The tool schemas an episode of a task exposes, read from the corpus without starting one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from envsynth.export.write import ExportError

if TYPE_CHECKING:
    from envsynth.corpus.load import Corpus
    from envsynth.tasks.model import Task


def open_corpus(corpus: Corpus | str | Path) -> Corpus:
    """A loaded corpus, or the corpus in a folder.

    Raises:
        ExportError: no valid corpus there.
    """
    from envsynth.corpus.errors import CorpusError
    from envsynth.corpus.load import Corpus, load_corpus

    if isinstance(corpus, Corpus):
        return corpus
    try:
        return load_corpus(corpus)
    except CorpusError as exc:
        raise ExportError(str(exc)) from None


def task_tools(corpus: Corpus, task: Task) -> list[dict[str, Any]]:
    """OpenAI function schemas of the task's visible tools plus ``complete_task`` (and ``ask_user`` for a must-ask task):
    ``corpus.start(task).tools``."""
    from envsynth.tasks.episode import episode_tools

    return episode_tools(corpus.apps[task.app], task)
