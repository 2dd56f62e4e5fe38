"""Where in a user's file an exception came from, for messages that name the file and line."""

from __future__ import annotations

import traceback
from pathlib import Path


def line_in(exc: BaseException, path: Path) -> int | None:
    """The line of `path` the traceback of `exc` passed through last (the user's own line), or None."""
    target = path.resolve()
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == target]
    return lines[-1] if lines else None
