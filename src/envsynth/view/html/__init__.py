"""The static HTML report of a corpus and its runs: ``envsynth report CORPUS [RUN_DIR ...] --out DIR``.

Needs the ``report`` extra (Jinja2 for the pages, pygal for the SVG charts); the dependency
graph is drawn in the page by the bundled Cytoscape.js.
"""

from envsynth.view.html.build import ReportError, ReportResult, build_report

__all__ = ["ReportError", "ReportResult", "build_report"]
