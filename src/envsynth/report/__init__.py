"""Reports over corpora: quality statistics of the tasks a reader sees."""

from envsynth.report.quality import DEFECTS, AppView, QualityReport, TaskLint, lint_corpus, lint_task

__all__ = ["DEFECTS", "AppView", "QualityReport", "TaskLint", "lint_corpus", "lint_task"]
