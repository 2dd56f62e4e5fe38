"""The spans an agent call emitted, as a run records them: one `SpanRecord` per OpenTelemetry span.

A record is what the `spans` table holds of a span (its ids, name, timing, status, attributes and
events), without the run and item it belongs to; `traces` reads meaning into them (model and tool
calls per the GenAI semantic conventions).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class SpanRecord(BaseModel):
    """One finished span: ids as hex, start in Unix nanoseconds, duration in milliseconds."""

    span_id: str
    parent_id: str | None = None
    trace_id: str = ""
    name: str = ""
    #: `model`, `tool`, `agent` or `other`, from the span's `gen_ai.operation.name`.
    kind: str = "other"
    start_ns: int = 0
    duration_ms: float | None = None
    #: `ok`, `error` or `unset`, and the error's description.
    status: str = "unset"
    status_message: str | None = None
    attributes: dict[str, Any] = Field(default_factory=dict)
    #: The span's events: `{name, time_ns, attributes}` each.
    events: list[dict[str, Any]] = Field(default_factory=list)


def span_row(run_id: str, index: int, run_index: int, seq: int, span: SpanRecord) -> dict[str, Any]:
    """The `spans` row of one span of item (`index`, `run_index`), `seq` its place in end order."""
    return {"run_id": run_id, "item_index": index, "run_index": run_index, "seq": seq, **span.model_dump()}


def span_from_row(row: dict[str, Any]) -> SpanRecord:
    return SpanRecord(**{k: v for k, v in row.items() if k in SpanRecord.model_fields and v is not None})
