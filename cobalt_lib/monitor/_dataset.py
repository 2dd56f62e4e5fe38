"""A production trace made a dataset item, appended to a JSONL dataset file, so the next experiment tests it.

The item is the trace's input; a trace whose conversation had more than one user turn becomes a
conversation item (`{"conversation": {"turns": [...]}}`, docs/conversations.md) replaying those turns. Its
id is the trace's (`trace-<first 16 hex digits>`): adding the same trace again adds nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._errors import DatasetError
from ._trace import ProductionTrace


def trace_item(trace: ProductionTrace, *, expected: str | None = None) -> dict[str, Any]:
    """The dataset item a trace amounts to (refused when the trace says nothing of its input)."""
    item: dict[str, Any] = {"id": f"trace-{trace.trace_id[:16]}"}
    turns = [m["content"] for m in trace.conversation if m["role"] == "user"]
    if len(turns) > 1:
        item["conversation"] = {"turns": turns}
    elif trace.input is not None:
        item["input"] = trace.input
    elif turns:
        item["input"] = turns[0]
    else:
        raise DatasetError(f"Trace {trace.trace_id} records no input (no gen_ai.input.messages, input.value or "
                           "prompt attributes on its spans), so it cannot become a dataset item.")
    if expected is not None:
        item["expected_output"] = expected
    item["production"] = {"trace_id": trace.trace_id, "service": trace.service, "output": trace.output}
    return item


def add_to_dataset(trace: ProductionTrace, path: Path, *, expected: str | None = None) -> dict[str, Any]:
    """Append the trace's item to the JSONL file `path` (made when missing); an item of the same id already
    there is left as it is and returned."""
    item = trace_item(trace, expected=expected)
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        raise DatasetError(f"{path} is not a JSONL dataset file; name a .jsonl file to append the item to.")
    if path.exists():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                found = json.loads(line) if line.strip() else None
            except ValueError:
                raise DatasetError(f"{path}:{number} is not JSON; fix that line before adding to the file.") from None
            if isinstance(found, dict) and found.get("id") == item["id"]:
                return found
    text = json.dumps(item, ensure_ascii=False, default=str) + "\n"
    with path.open("a", encoding="utf-8") as out:
        if out.tell() and not _ends_in_newline(path):
            text = "\n" + text
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    return item


def _ends_in_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
