"""A production trace read for what the agent was asked and answered: its input, output, conversation, tool
calls, model, tokens and cost, by the same GenAI reading an experiment item's spans get (`traces._genai`).

Instrumentations name the same things differently, so each span is first read into the GenAI semantic
conventions' names (`conventional`), its own attributes kept: OpenLLMetry (Traceloop) flattens messages
into `gen_ai.prompt.N.*`/`gen_ai.completion.N.*` and sets `traceloop.entity.input`/`output`;
OpenInference (Phoenix, Arize) uses `llm.input_messages.N.message.*`, `input.value`/`output.value`,
`llm.model_name`, `llm.token_count.*` and `openinference.span.kind`; pydantic-ai and Logfire emit the
conventions themselves (`gen_ai.input.messages`, `gen_ai.output.messages`), the agent run's answer as
`final_result`. What a span already says in the conventions' own names wins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..results._spans import SpanRecord
from ..traces._genai import (
    TraceToolCall,
    json_value,
    kind_of,
    message_text,
    messages,
    tool_calls,
    usage_of_tally,
    usage_tally,
)

#: OpenInference's and Traceloop's span kinds, as the conventions' kinds.
_FOREIGN_KINDS = {"LLM": "model", "TOOL": "tool", "AGENT": "agent", "EMBEDDING": "embeddings",
                  "tool": "tool", "agent": "agent", "workflow": "agent"}
_INDEXED = re.compile(r"^(gen_ai\.prompt|gen_ai\.completion|llm\.input_messages|llm\.output_messages)\.(\d+)\.(.+)$")
#: Where an instrumentation keeps a whole call's input and output as text.
_INPUT_KEYS = ("input.value", "traceloop.entity.input")
_OUTPUT_KEYS = ("final_result", "output.value", "traceloop.entity.output")


def conventional(span: SpanRecord) -> SpanRecord:
    """The span with the GenAI conventions' attributes its instrumentation's own names amount to."""
    a = span.attributes
    added: dict[str, Any] = {}
    indexed: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in a.items():
        if (found := _INDEXED.match(key)) is not None:
            prefix, index, rest = found.groups()
            indexed.setdefault(prefix, {}).setdefault(int(index), {})[rest.removeprefix("message.")] = value
    for source, target in (("gen_ai.prompt", "gen_ai.input.messages"), ("llm.input_messages", "gen_ai.input.messages"),
                           ("gen_ai.completion", "gen_ai.output.messages"),
                           ("llm.output_messages", "gen_ai.output.messages")):
        if source in indexed and target not in a and target not in added:
            added[target] = json.dumps([_message(indexed[source][i]) for i in sorted(indexed[source])])
    for source, target in (("llm.model_name", "gen_ai.request.model"), ("llm.token_count.prompt",
                           "gen_ai.usage.input_tokens"), ("llm.token_count.completion", "gen_ai.usage.output_tokens"),
                           ("tool.name", "gen_ai.tool.name")):
        if source in a and target not in a:
            added[target] = a[source]
    kind = span.kind if span.kind != "other" else kind_of({**a, **added})
    if kind == "other":
        foreign = a.get("openinference.span.kind") or a.get("traceloop.span.kind")
        kind = _FOREIGN_KINDS.get(str(foreign), "other")
    if kind == "tool":
        for keys, target in ((("tool.parameters", *_INPUT_KEYS), "gen_ai.tool.call.arguments"),
                             (_OUTPUT_KEYS, "gen_ai.tool.call.result")):
            if target not in a and (value := _first(a, keys)) is not None:
                added[target] = value
        added.setdefault("gen_ai.tool.name", a.get("gen_ai.tool.name") or span.name)
    if not added and kind == span.kind:
        return span
    return span.model_copy(update={"attributes": {**a, **added}, "kind": kind})


def _message(flat: Mapping[str, Any]) -> dict[str, Any]:
    """A flattened message (`role`, `content`, `tool_calls.N.name`...) in the conventions' shape."""
    parts: list[dict[str, Any]] = []
    if flat.get("content") not in (None, ""):
        parts.append({"type": "text", "content": str(flat["content"])})
    calls: dict[int, dict[str, Any]] = {}
    for key, value in flat.items():
        if (found := re.match(r"^tool_calls\.(\d+)\.(?:tool_call\.)?(?:function\.)?(name|arguments|id)$", key)):
            calls.setdefault(int(found[1]), {})[found[2]] = value
    parts += [{"type": "tool_call", **call} for _, call in sorted(calls.items())]
    return {"role": str(flat.get("role") or "user"), "parts": parts}


def _first(attributes: Mapping[str, Any], keys: Sequence[str]) -> Any:
    value = next((attributes[k] for k in keys if attributes.get(k) not in (None, "")), None)
    if isinstance(value, str) and value.startswith('"'):  # Traceloop JSON-encodes a plain string too
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@dataclass(frozen=True)
class ProductionTrace:
    """What a production trace amounts to."""

    trace_id: str
    service: str | None
    #: Its spans, in the order they started (none when the trace was read from its summary row).
    spans: list[SpanRecord]
    #: The user's request (text, or the instrumentation's JSON value), None when no span says.
    input: Any
    output: Any
    #: The last model call's messages, `{role, content}` each, its answer last.
    conversation: list[dict[str, str]] = field(default_factory=list)
    tool_calls: list[TraceToolCall] = field(default_factory=list)
    #: `llm_calls`, `input_tokens`, `output_tokens`, `model` and `cost_usd` as `usage_metadata` reads them.
    usage: dict[str, Any] = field(default_factory=dict)
    start_ns: int = 0
    #: Whether a span of it ended in error.
    failed: bool = False
    #: `{model: [input tokens, output tokens]}`: what `usage` priced.
    tokens: dict[str, list[int]] = field(default_factory=dict)


def read_trace(trace_id: str, spans: Sequence[SpanRecord], *, service: str | None = None,
               prices: Mapping[str, tuple[float, float]] | None = None) -> ProductionTrace:
    """`spans` (one trace's) read for their input, output, conversation, tool calls and usage."""
    ordered = ordered_spans(spans)
    ids = {s.span_id for s in ordered}
    roots = [s for s in ordered if not s.parent_id or s.parent_id not in ids]
    models = [s for s in ordered if s.kind == "model"]
    outer = [*roots, *(s for s in ordered if s.kind == "agent")]
    conversation = _conversation(models[-1]) if models else []
    given = next((v for s in outer if (v := _first(s.attributes, _INPUT_KEYS)) is not None), None)
    answer = next((v for s in outer if (v := _first(s.attributes, _OUTPUT_KEYS)) is not None), None)
    if given is None and models:
        given = next((m["content"] for m in _conversation(models[0]) if m["role"] == "user"), None)
    if answer is None and conversation and conversation[-1]["role"] == "assistant":
        answer = conversation[-1]["content"]
    calls, tally = usage_tally(ordered)
    return ProductionTrace(trace_id=trace_id, service=service, spans=ordered, input=json_value(given),
                           output=json_value(answer), conversation=conversation, tool_calls=tool_calls(ordered),
                           usage=usage_of_tally(calls, tally, prices or {}),
                           start_ns=min((s.start_ns for s in ordered), default=0),
                           failed=any(s.status == "error" for s in ordered), tokens=tally)


def ordered_spans(spans: Sequence[SpanRecord]) -> list[SpanRecord]:
    """One trace's spans in the conventions' names (`conventional`), in the order they started."""
    return sorted((conventional(s) for s in spans), key=lambda s: (s.start_ns, s.span_id))


def summary_row(trace: ProductionTrace) -> dict[str, Any]:
    """The trace's `trace_summaries` row: what a window scores it by, read once when it is received, so
    scoring a window reads a row a trace instead of decoding and reading every span again. `spans` says
    how many spans it was read from: it stands for the trace only while the trace has that many."""
    return {"trace_id": trace.trace_id, "service": trace.service, "start_ns": trace.start_ns,
            "spans": len(trace.spans), "failed": trace.failed, "input": trace.input, "output": trace.output,
            "conversation": trace.conversation, "llm_calls": trace.usage.get("llm_calls", 0),
            "model_tokens": trace.tokens,
            "tool_calls": [{"name": c.name, "arguments": c.arguments, "result": c.result, "call_id": c.call_id}
                           for c in trace.tool_calls]}


def from_summary(row: Mapping[str, Any], *, service: str | None = None,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> ProductionTrace:
    """The trace a `summary_row` stands for (its spans not read), priced with `prices` now."""
    tokens = {str(model): [int(n) for n in counted] for model, counted in (row.get("model_tokens") or {}).items()}
    return ProductionTrace(trace_id=row["trace_id"], service=service or row.get("service"), spans=[],
                           input=row.get("input"), output=row.get("output"),
                           conversation=list(row.get("conversation") or []),
                           tool_calls=[TraceToolCall(**c) for c in row.get("tool_calls") or []],
                           usage=usage_of_tally(int(row.get("llm_calls") or 0), tokens, prices or {}),
                           start_ns=int(row.get("start_ns") or 0), failed=bool(row.get("failed")), tokens=tokens)


def _conversation(span: SpanRecord) -> list[dict[str, str]]:
    said = [*messages(span.attributes.get("gen_ai.input.messages")),
            *messages(span.attributes.get("gen_ai.output.messages"))]
    return [{"role": str(m.get("role") or "assistant"), "content": message_text(m)} for m in said]
