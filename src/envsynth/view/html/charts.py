"""Static SVG charts drawn by pygal (no JavaScript, nothing fetched: the SVG is inlined in the page)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

_SCRIPT = re.compile(r"<script.*?</script>", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_UUID = re.compile(r"chart-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def _style() -> Any:
    from pygal.style import Style

    return Style(
        background="white",
        plot_background="white",
        font_family="system-ui, sans-serif",
        label_font_size=12,
        major_label_font_size=12,
        value_font_size=11,
        title_font_size=15,
        legend_font_size=12,
        no_data_font_size=18,
        colors=("#3b6ea5", "#d9822b", "#4c9a5b", "#b34747", "#7a5ea8", "#8c8c8c"),
    )


def _render(chart: Any) -> str:
    """The chart's SVG, the same bytes for the same chart.

    pygal appends a <script> holding its config for its tooltip script (with js=[] nothing reads
    it), a comment with the date, and names the chart by a random uuid: the script and comments
    are dropped and the uuid becomes a digest of the SVG, so a rebuilt report is byte-identical.
    """
    svg = _COMMENT.sub("", _SCRIPT.sub("", chart.render(is_unicode=True)))
    found = _UUID.search(svg)
    if found is None:
        return svg
    stable = hashlib.sha256(svg.replace(found.group(1), "").encode()).hexdigest()[:16]
    return svg.replace(found.group(1), stable)


def _options(title: str, height: int) -> dict[str, Any]:
    return {
        "title": title,
        "style": _style(),
        "js": [],
        "disable_xml_declaration": True,
        "height": height,
        "width": 760,
        "print_values": True,
        "no_data_text": "no data",
        "truncate_label": 28,
    }


def bar(
    title: str, values: Mapping[str, float], *, horizontal: bool = False, percent: bool = False, series: str = "", empty: str = "no data"
) -> str:
    """One bar per key of ``values`` (an SVG string); ``percent`` shows 0..1 values as percentages, ``empty`` stands for no values."""
    import pygal

    height = max(260, 34 * len(values) + 120) if horizontal and values else 320 if values else 200
    cls = pygal.HorizontalBar if horizontal else pygal.Bar
    opts = _options(title, height)
    opts["no_data_text"] = empty
    if percent:
        opts.update(range=(0, 100), value_formatter=lambda v: f"{v:.0f}%")
    chart = cls(show_legend=False, x_label_rotation=0 if horizontal or len(values) < 6 else 30, **opts)
    chart.x_labels = list(values)
    chart.add(series or title, [round(100 * v, 1) if percent else v for v in values.values()])
    return _render(chart)


def grouped(title: str, labels: Sequence[str], series: Mapping[str, Sequence[float]], *, percent: bool = False) -> str:
    """Bars of several series side by side per label (an SVG string)."""
    import pygal

    opts = _options(title, 340)
    if percent:
        opts.update(range=(0, 100), value_formatter=lambda v: f"{v:.0f}%")
    chart = pygal.Bar(legend_at_bottom=True, x_label_rotation=30 if len(labels) > 5 else 0, **opts)
    chart.x_labels = list(labels)
    for name, values in series.items():
        chart.add(name, [round(100 * v, 1) if percent else v for v in values])
    return _render(chart)
