"""The one way cobalt makes a Rich console: markup off. Everything cobalt prints holds text it did not write
(item inputs, outputs, judges' reasons, errors, label notes, tags, names), and Rich would read `[/INST]` in
it as a closing tag (MarkupError: the command dies) and `[s7]` or `[bold]` as styles (the text vanishes).
With markup off every string prints as it is; cobalt's own styling goes through `Text` and `style=`."""

from __future__ import annotations

from typing import Any

from rich.console import Console


def plain_console(**options: Any) -> Console:
    """A Console that prints every string verbatim (no markup, no highlighting); `options` as Console's."""
    return Console(markup=False, highlight=False, **options)
