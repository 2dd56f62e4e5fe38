"""Values too large for a row: stored cut, with a marker, and kept whole in a side file.

DuckDB's JSON reader fails a row over about 32 MB, and with it the whole batch, so an output, input,
error, traceback or judge answer longer than `[store] max_value_bytes` (UTF-8 bytes of its text: the
string itself, or the JSON of any other value) is stored as a string: its first `max_value_bytes`
bytes and a marker naming its full length and its side file,
`<output_dir>/values/<sha256 of its JSON>.json`, which holds the whole value's JSON. The row's
`cut_values` column maps each column cut to its digest: `restore` puts the whole values back into
rows read from the store from that column alone, so a value that merely ends with the marker's text
(an agent's output, say) is read back as itself. A row stored before that column existed has the
marker checked against the side file: its digest, length and head.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: The default of `[store] max_value_bytes`: 8 MB.
MAX_VALUE_BYTES = 8 * 1024 * 1024
#: Side files, under the output directory.
VALUES_DIR = "values"
#: The columns a value may be cut in, per table.
CAPPED: dict[str, tuple[str, ...]] = {
    "outputs": ("input", "output", "metadata", "error", "traceback"),
    "scores": ("reason", "error", "raw_response"),
    "spans": ("attributes", "events"),
    "trace_spans": ("attributes", "events"),
    "trace_summaries": ("input", "output", "conversation", "tool_calls"),
}
_MARKER = re.compile(r"\n\[cobalt: cut at (\d+) of (\d+) bytes; whole value in values/([0-9a-f]{64})\.json\]$")


def marker(kept: int, total: int, digest: str) -> str:
    """What follows the kept head of a cut value."""
    return f"\n[cobalt: cut at {kept} of {total} bytes; whole value in {VALUES_DIR}/{digest}.json]"


def cap_row(table: str, row: dict[str, Any], values: Path, limit: int) -> dict[str, Any]:
    """`row` with each value of a capped column over `limit` bytes cut and kept whole in a side file."""
    out = dict(row)
    for column in CAPPED.get(table, ()):
        value = row.get(column)
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= limit:
            continue
        whole = json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(whole).hexdigest()
        _keep(values / f"{digest}.json", whole)
        head = data[:limit].decode("utf-8", "ignore")  # a character cut in two is dropped
        out[column] = head + marker(len(head.encode("utf-8", "surrogatepass")), len(data), digest)
        out["cut_values"] = {**(out.get("cut_values") or {}), column: digest}
    return out


def _keep(path: Path, data: bytes) -> None:
    """Write a side file whole (a temporary name, then a rename); one already there is the same value."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".value-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def cut_length(value: Any) -> int | None:
    """The full length in bytes of a value stored cut, None for a whole value."""
    found = _found(value)
    return int(found.group(2)) if found else None


def _found(value: Any) -> re.Match[str] | None:
    if not isinstance(value, str) or not value.endswith(".json]"):
        return None
    return _MARKER.search(value[-200:])


_RESTORED = ("input", "output", "metadata", "error", "traceback", "reason", "raw_response", "attributes", "events",
             "conversation", "tool_calls")


def restore(rows: Iterable[dict[str, Any]], values: Path) -> None:
    """Put the whole value back, from its side file, wherever a row holds a cut one (in place). A
    value whose side file is gone stays cut, marker and all."""
    for row in rows:
        cut = row.get("cut_values")
        if isinstance(cut, dict):
            for column, digest in cut.items():
                if column in _RESTORED and re.fullmatch("[0-9a-f]{64}", str(digest)):
                    with contextlib.suppress(OSError, ValueError):
                        row[column] = json.loads((values / f"{digest}.json").read_bytes())
            continue
        for column in _RESTORED:
            found = _found(row.get(column))
            if found is not None and (whole := _verified(row[column], found, values)) is not None:
                row[column] = whole[0]


def _verified(stored: str, found: re.Match[str], values: Path) -> tuple[Any] | None:
    """The whole value of a row cut before `cut_values` existed, when its side file is the one its marker
    names and the row holds that value's head: else the text is a value of its own that ends like a marker."""
    try:
        whole = (values / f"{found.group(3)}.json").read_bytes()
        value = json.loads(whole)
    except (OSError, ValueError):
        return None
    if hashlib.sha256(whole).hexdigest() != found.group(3):
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    data = text.encode("utf-8", "surrogatepass")
    head = stored[:found.start()].encode("utf-8", "surrogatepass")
    if len(data) != int(found.group(2)) or len(head) != int(found.group(1)) or not data.startswith(head):
        return None
    return (value,)


def referenced(store: Any) -> set[str]:
    """The side files (by digest) that some stored row still points to: a value cut in `CAPPED`."""
    import duckdb

    if not store.exists():
        return set()
    dialect = store.backend.dialect
    found: set[str] = set()
    for table, columns in CAPPED.items():
        for column in columns:
            try:
                digest = dialect.regexp_extract(f"CAST({column} AS VARCHAR)",
                                                "'whole value in values/([0-9a-f]{64})\\.json'")
                rows = store.query(f"SELECT DISTINCT {digest} AS digest FROM {table} "
                                   f"WHERE CAST({column} AS VARCHAR) LIKE '%[cobalt: cut at %'")
            except duckdb.CatalogException:  # a store without the table yet
                continue
            found.update(str(r["digest"]) for r in rows if r["digest"])
    return found


def orphans(store: Any, values: Path) -> list[Path]:
    """Side files under `values` that no stored row points to any more (what a clean may remove)."""
    if not values.is_dir():
        return []
    kept = referenced(store)
    return sorted(p for p in values.glob("*.json") if p.stem not in kept)
