"""The results directory: one JSON file per run, written atomically and item by item."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import IO

from .._files import write_chunks_atomically
from .._secrets import scrubber
from ._report import ExperimentReport
from ._spill import StoredItems

#: Where the items go in `model_dump_json(indent=2)` of a report without items (fields at depth 1).
_NO_ITEMS = '\n  "items": [],\n'
_ITEM_INDENT = b"\n    "


def results_filename(report: ExperimentReport) -> str:
    """`<timestamp>_<experiment>_<run id>.json`, safe on every file system."""
    stamp = datetime.fromisoformat(report.timestamp).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.name).strip("_") or "experiment"
    return f"{stamp}_{name}_{report.id}.json"


def write_results(report: ExperimentReport, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / results_filename(report)
    report.results_path = str(target)
    clean = scrubber()  # a message in the report (a gate's, an item's error) may quote a server's echo
    write_chunks_atomically(target, (clean(chunk.decode("utf-8")).encode("utf-8") for chunk in results_json(report)))
    return target


def results_json(report: ExperimentReport) -> Iterator[bytes]:
    """`report.model_dump_json(indent=2)`, byte for byte, one item at a time: a run's items are read
    back from disk as they are written, so writing never holds more than one of them."""
    shell = report.model_copy(update={"items": []}).model_dump_json(indent=2)
    head, found, tail = shell.partition(_NO_ITEMS)
    if not report.items or not found:
        yield (shell if found else report.model_dump_json(indent=2)).encode("utf-8")
        return
    yield (head + '\n  "items": [').encode("utf-8")
    for position, data in enumerate(_items_json(report)):
        yield (b"," if position else b"") + _ITEM_INDENT + data.replace(b"\n", _ITEM_INDENT)
    yield ("\n  ],\n" + tail).encode("utf-8")


def _items_json(report: ExperimentReport) -> Iterator[bytes]:
    """Each item's `model_dump_json(indent=2)`; a run's stored items as they were stored, unparsed."""
    items = report.items
    if isinstance(items, StoredItems):
        return (items.raw(position) for position in range(len(items)))
    return (item.model_dump_json(indent=2).encode("utf-8") for item in items)


def read_results(path: str | Path) -> ExperimentReport:
    return ExperimentReport.model_validate_json(Path(path).read_text(encoding="utf-8"))


#: How a results file opens and closes its items (`model_dump_json(indent=2)`: items at depth 1, their
#: own lines indented by four, so the first line at depth 1 that starts with `]` closes them).
_ITEMS_OPEN = b'\n  "items": ['
_ITEMS_CLOSE = b"\n  ]"
_BLOCK = 1 << 20


def read_header(path: str | Path, *, block: int = _BLOCK) -> ExperimentReport:
    """A results file's report without its items (`items` empty), read a block at a time: the items
    are skipped, never held, so a run of any size costs what its summary does. A file not laid out as
    `write_results` writes it is read whole and its items dropped."""
    with open(path, "rb") as file:
        head, rest = _read_until(file, b"", _ITEMS_OPEN, keep=True, block=block)
        if rest is None:
            return ExperimentReport.model_validate_json(head).model_copy(update={"items": []})
        if not rest:
            rest = file.read(1)
        if rest.startswith(b"]"):  # `"items": []`
            after: bytes | None = rest[1:]
        else:
            _, after = _read_until(file, rest, _ITEMS_CLOSE, keep=False, block=block)
        if after is None:
            raise ValueError(f"{path}: its items never close (the file is cut short); run `cobalt show` on the "
                             "run to read it from the store instead")
        tail = after + file.read()
    return ExperimentReport.model_validate_json(head + b'\n  "items": []' + tail)


def _read_until(file: IO[bytes], start: bytes, marker: bytes, *, keep: bool, block: int,
                ) -> tuple[bytes, bytes | None]:
    """Read `file` on from the bytes `start` until `marker`: what came before it (when `keep`, else
    nothing) and what followed it in the last block; None after it when the file ends first (then the
    first is everything read, when `keep`)."""
    kept: list[bytes] = []
    carry = start
    while True:
        found = carry.find(marker)
        if found >= 0:
            kept.append(carry[:found])
            return b"".join(kept) if keep else b"", carry[found + len(marker):]
        more = file.read(block)
        if not more:
            kept.append(carry)
            return b"".join(kept) if keep else b"", None
        # Keep the last len(marker) - 1 bytes: the marker may straddle two blocks.
        cut = max(len(carry) - len(marker) + 1, 0)
        if keep:
            kept.append(carry[:cut])
        carry = carry[cut:] + more
