"""A run for people: the live terminal reporter, Markdown, exports and comparison text."""

from __future__ import annotations

from ._compare import comparison_markdown
from ._export import RENDERERS, format_for, to_baseline, to_csv, to_json, to_junit, to_markdown
from ._markdown import report_markdown
from ._terminal import TerminalReporter
from ._units import count, duration, money

__all__ = [
    "RENDERERS",
    "TerminalReporter",
    "comparison_markdown",
    "count",
    "duration",
    "format_for",
    "money",
    "report_markdown",
    "to_baseline",
    "to_csv",
    "to_json",
    "to_junit",
    "to_markdown",
]
