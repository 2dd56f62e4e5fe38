"""A production trace made a dataset item, so the next experiment tests it: appended to a JSONL dataset file,
or added to a stored dataset as its next version (`datasets.add_items`). `add_trace` is the one use case
`cobalt traces add` and the trace page's "Add to dataset" both call.

The item is the trace's input; a trace whose conversation had more than one user turn becomes a
conversation item (`{"conversation": {"turns": [...]}}`, docs/conversations.md) replaying those turns. Its
id is the trace's (`trace-<first 16 hex digits>`): adding the same trace again adds nothing.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, DatasetError
from ._trace import ProductionTrace, read_trace

if TYPE_CHECKING:
    from ..config._config import Config

#: What names a dataset file rather than a stored dataset (a stored name may hold '.' but no '/').
_FILE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv")


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
    return _append_line(trace, path, expected)[0]


def _append_line(trace: ProductionTrace, path: Path, expected: str | None) -> tuple[dict[str, Any], bool]:
    """The item in `path`, and whether it was added (not there before)."""
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
                return found, False
    text = json.dumps(item, ensure_ascii=False, default=str) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as out:
        if out.tell() and not _ends_in_newline(path):
            text = "\n" + text
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    return item, True


def _ends_in_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


@dataclass(frozen=True)
class TraceAdded:
    """Where a trace's item went: `where` is the file, or `name@version` of the stored dataset."""

    item: dict[str, Any]
    where: str
    #: False when the file or the dataset's latest version already held an item of its id.
    added: bool
    #: The stored dataset's version holding the item (None for a file).
    version: int | None = None


def load_trace(config: Config, trace_id: str) -> ProductionTrace:
    """The stored production trace `trace_id` (hex, any case), read from its spans and priced with the
    project's prices; an unknown id is a ConfigError naming the command that lists them."""
    from ..store import Store

    store = Store.for_config(config)
    key = trace_id.strip().lower()
    with store.reading():
        spans = store.trace_spans_of([key]).get(key) if key else None
        if not spans:
            raise ConfigError(f"No production trace {trace_id} in the store; `cobalt traces list` shows the stored "
                              "ones.")
        service = store.trace_services([key]).get(key)
    prices = {name: (p.input, p.output) for name, p in config.prices.items()}
    return read_trace(key, spans, service=service, prices=prices)


def names_a_file(target: str) -> bool:
    """Whether `target` names a dataset file (a path, or a name ending as one) rather than a stored dataset."""
    return "/" in target or "\\" in target or target.lower().endswith(_FILE_SUFFIXES)


def add_trace(config: Config, trace_id: str, target: str, *, expected: str | None = None, who: str | None = None,
              inside: Path | None = None) -> TraceAdded:
    """Add the stored trace `trace_id` to `target`: a JSONL file (appended to, made when missing) or the name
    of a stored dataset (a new version). `inside`: a relative file is read from there, and a file outside
    it is refused (the pages write only inside the project; the command line where its user says)."""
    target = target.strip()
    if not target:
        raise DatasetError("Name the dataset: a stored dataset's name, or a .jsonl file in the project.")
    trace = load_trace(config, trace_id)
    if names_a_file(target):
        path = _confined(Path(target), inside) if inside is not None else Path(target)
        item, added = _append_line(trace, path, expected)
        shown = str(path.relative_to(inside.resolve())) if inside is not None else target
        return TraceAdded(item, shown, added=added)
    from ..datasets import add_items
    from ..store import Store

    item = trace_item(trace, expected=expected)
    origin = {"trace_id": trace.trace_id, "service": trace.service, **({"who": who} if who else {})}
    outcome = add_items(Store.for_config(config), target, [item], origin=origin, where=f"trace {trace.trace_id}")
    return TraceAdded(item, f"{outcome.version.dataset}@{outcome.version.version}", added=bool(outcome.added),
                      version=outcome.version.version)


def _confined(path: Path, inside: Path) -> Path:
    root = inside.resolve()
    found = (path if path.is_absolute() else root / path).resolve()
    if not found.is_relative_to(root):
        raise DatasetError(f"{path} is outside the project ({root}); name a .jsonl file inside it.")
    return found
