"""A run for people: the live terminal reporter, Markdown, exports and comparison text."""

from __future__ import annotations

from ._compare import comparison_markdown
from ._export import RENDERERS, format_for, to_baseline, to_csv, to_json, to_junit, to_markdown
from ._markdown import report_markdown
from ._terminal import TerminalReporter
from ._units import UNKNOWN, count, delta, duration, metric, money, percent, score

__all__ = [
    "RENDERERS",
    "UNKNOWN",
    "TerminalReporter",
    "comparison_markdown",
    "count",
    "delta",
    "duration",
    "format_for",
    "metric",
    "money",
    "percent",
    "report_markdown",
    "score",
    "to_baseline",
    "to_csv",
    "to_json",
    "to_junit",
    "to_markdown",
]
