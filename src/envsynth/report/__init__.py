"""Reports over corpora: quality statistics of the tasks a reader sees, and the coherence of their initial states."""

from envsynth.report.quality import DEFECTS, AppView, QualityReport, TaskLint, lint_corpus, lint_task
from envsynth.tasks.admission.coherence import CLASSES, CoherenceReport, StateLint, lint_state, lint_states

__all__ = [
    "CLASSES",
    "DEFECTS",
    "AppView",
    "CoherenceReport",
    "QualityReport",
    "StateLint",
    "TaskLint",
    "lint_corpus",
    "lint_state",
    "lint_states",
    "lint_task",
]
