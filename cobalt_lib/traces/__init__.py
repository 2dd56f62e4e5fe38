"""Traces: the OpenTelemetry spans an agent emits, collected per item during a run, read for their model
and tool calls (the GenAI semantic conventions), shown as a span tree (`_tree`, `_compact` for the pages and
MCP, `_text` for `cobalt show RUN ITEM --trace`), and evaluations exported as `gen_ai.evaluation.result`
events. Production traces and their monitors are the `monitor` wing; the spans' tables are the store's."""

from ._collect import ItemTrace, current_trace, install
from ._genai import TraceToolCall, model_calls, tool_calls, usage_metadata
from ._tree import SpanNode, span_tree, summarise

__all__ = ["ItemTrace", "SpanNode", "TraceToolCall", "current_trace", "install", "model_calls", "span_tree",
           "summarise", "tool_calls", "usage_metadata"]
