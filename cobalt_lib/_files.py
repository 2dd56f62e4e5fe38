"""Writing a file so that readers see the old content or the new, never half of it."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


@functools.cache
def _file_mode() -> int:
    """0o666 less the process umask: what `open()` would have given (mkstemp gives 0o600)."""
    mask = os.umask(0o022)  # the only way to read the umask is to set it; put it straight back
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(target: Path, text: str) -> None:
    """Write `text` to a temporary file beside `target`, then rename it over `target`."""
    write_chunks_atomically(target, [text.encode("utf-8")])


def write_chunks_atomically(target: Path, chunks: Iterable[bytes]) -> None:
    """`write_atomically` of content produced piece by piece, so it never has to be in memory whole."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=target.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
        os.chmod(tmp, _file_mode())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_FULL_WORDS = ("No space left on device", "database or disk is full")


def disk_full(exc: BaseException) -> OSError | Exception | None:
    """The error in `exc`'s chain (itself, its cause or context) that says the disk is full, if any:
    an OSError ENOSPC, DuckDB's `No space left on device`, or SQLite's `database or disk is full` (Dagster's
    local storage, through SQLAlchemy)."""
    import errno

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return current
        if isinstance(current, Exception) and any(w in str(current) for w in _FULL_WORDS):
            return current
        current = current.__cause__ or current.__context__
    return None
