"""An item's trace as text: the span tree with timings, each model call with its messages and tokens,
each tool call with its arguments and result (`cobalt show RUN ITEM --trace`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .._numbers import count, duration
from ..results._spans import SpanRecord
from ._genai import (
    MESSAGE_KEYS,
    json_value,
    message_text,
    messages,
    model_of,
    tokens_of,
    tool_arguments,
    tool_result,
)
from ._tree import span_tree, summarise, walk

#: The longest message or value printed whole; longer ones are cut, saying how much (`--json` has all).
MAX_TEXT = 600


def trace_lines(spans: Sequence[SpanRecord]) -> list[str]:
    """The trace's summary line, then every span under its parent, indented two spaces a level."""
    if not spans:
        return ["trace: no spans (the agent emitted none: docs/traces.md says how to instrument it)"]
    lines = [summary_line(spans)]
    start = min(s.start_ns for s in spans)
    for depth, span in walk(span_tree(spans)):
        indent = "  " * depth
        lines.append(indent + span_head(span, start))
        lines += [indent + "    " + line for line in span_body(span)]
    return lines


def summary_line(spans: Sequence[SpanRecord]) -> str:
    s = summarise(spans)
    tokens = f" ({s.input_tokens} in / {s.output_tokens} out tokens)" if s.model_calls else ""
    return (f"trace: {count(s.spans, 'span')}, {count(s.model_calls, 'model call')}{tokens}, "
            f"{count(s.tool_calls, 'tool call')}, {duration(s.wall_ms)}")


def span_head(span: SpanRecord, start_ns: int) -> str:
    """`chat gpt-4o [model gpt-4o] at +1.20ms, 412ms, 20 in / 10 out tokens`, and an error's message."""
    kind = span.kind + (f" {model}" if span.kind in ("model", "embeddings") and (model := model_of(span)) else "")
    parts = [f"{span.name} [{kind}] at +{duration((span.start_ns - start_ns) / 1e6)}", duration(span.duration_ms)]
    if span.kind in ("model", "embeddings"):
        tokens_in, tokens_out = tokens_of(span)
        if tokens_in is not None or tokens_out is not None:
            parts.append(f"{tokens_in if tokens_in is not None else '?'} in / "
                         f"{tokens_out if tokens_out is not None else '?'} out tokens")
    if span.status == "error":
        parts.append("ERROR" + (f": {span.status_message}" if span.status_message else ""))
    return ", ".join(parts)


def span_body(span: SpanRecord) -> list[str]:
    """A model call's messages (`role: text`), a tool call's arguments and result."""
    if span.kind == "tool":
        return [f"{label}: {clip(_text(value))}" for label, value in
                (("arguments", tool_arguments(span.attributes)), ("result", tool_result(span.attributes)))
                if value is not None]
    if span.kind not in ("model", "embeddings"):
        return []
    return [f"{m.get('role', '?')}: {clip(message_text(m))}" for key in MESSAGE_KEYS
            for m in messages(span.attributes.get(key))]


def clip(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= MAX_TEXT:
        return flat
    return f"{flat[:MAX_TEXT]}… ({len(flat) - MAX_TEXT} more characters; --json shows all)"


def _text(value: Any) -> str:
    value = json_value(value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
