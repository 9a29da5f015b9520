"""Looking at a corpus and its runs: the static HTML report (``envsynth report``) and the task view (``envsynth show``).

``envsynth.view.taskview`` gives one task as plain data, ``envsynth.view.show`` prints it with
rich, ``envsynth.view.html`` writes the report (needs the ``report`` extra). See docs/report.md.
"""
