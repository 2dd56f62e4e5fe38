"""A trace in the compact shape a reader with limited room (a model, over MCP) takes: one entry per span, parents
before children, with what it means rather than every attribute."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..results._spans import SpanRecord
from ._genai import MESSAGE_KEYS, message_text, messages, model_of, tokens_of, tool_arguments, tool_result
from ._tree import span_tree, walk


def compact_trace(spans: Sequence[SpanRecord]) -> list[dict[str, Any]]:
    """Each span as `{name, kind, depth, start_ms, duration_ms}` (start from the trace's first span), plus a
    model call's `model`, tokens and `messages` (`role: text` each), a tool call's `tool`, `arguments` and
    `result`, and an error's `error`."""
    if not spans:
        return []
    start = min(s.start_ns for s in spans)
    return [_entry(span, depth, start) for depth, span in walk(span_tree(spans))]


def _entry(span: SpanRecord, depth: int, start_ns: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": span.name, "kind": span.kind, "depth": depth,
                             "start_ms": round((span.start_ns - start_ns) / 1e6, 3),
                             "duration_ms": None if span.duration_ms is None else round(span.duration_ms, 3)}
    if span.status == "error":
        entry["error"] = span.status_message or "error"
    if span.kind in ("model", "embeddings"):
        tokens_in, tokens_out = tokens_of(span)
        entry.update(model=model_of(span), input_tokens=tokens_in, output_tokens=tokens_out,
                     messages=[f"{m.get('role', '?')}: {message_text(m)}" for key in MESSAGE_KEYS
                               for m in messages(span.attributes.get(key))])
    elif span.kind == "tool":
        a = span.attributes
        entry.update(tool=a.get("gen_ai.tool.name"), arguments=tool_arguments(a), result=tool_result(a))
    return {k: v for k, v in entry.items() if v is not None}
