"""Collecting the spans an agent call emits, attributed to the item whose call made them.

The run sets `current_trace` (a context variable) to the item's `ItemTrace` in the task or worker
thread that calls the agent, as it does for `track_usage`'s meter. cobalt's span processor, added to
the process's OpenTelemetry tracer provider, notes each span started while it is set (or whose parent
span belongs to an item: context the agent carried into threads of its own) and keeps the span when it
ends. An agent that emits no span costs a context variable set per call, nothing more
(benchmarks/traces_overhead.py).

Where the tracer provider comes from: when the process has none yet, cobalt sets an SDK
`TracerProvider` holding only its processor. When the user already set one (Logfire, Langfuse, Phoenix,
their own exporter), cobalt adds its processor to it rather than replacing it: OpenTelemetry allows one
global provider per process and refuses a second, and replacing theirs would cut their export, while a
processor beside their exporters sees the very spans they export, at no cost to them. A provider that is
not the SDK's cannot take a processor: cobalt then says once that it collects no trace.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..results._spans import SpanRecord
from ._genai import kind_of

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Span

#: The most spans kept per agent call by default (`[traces] max_spans`); the rest are counted.
MAX_SPANS = 1000


class ItemTrace:
    """The spans of one agent call, in the order they ended (at most `limit`; `dropped` counts the rest).

    A span is kept as the SDK's finished span and read into a `SpanRecord` only when the call is over
    (`records`), so the agent's own time carries no more than an append per span."""

    __slots__ = ("__weakref__", "_records", "dropped", "limit", "spans")

    def __init__(self, limit: int = MAX_SPANS) -> None:
        self.spans: list[ReadableSpan] = []
        self.limit = limit
        self.dropped = 0
        self._records: list[SpanRecord] | None = None

    def add(self, span: ReadableSpan) -> None:
        if len(self.spans) < self.limit:
            self.spans.append(span)
        else:
            self.dropped += 1

    def records(self) -> list[SpanRecord]:
        """The spans kept so far, as records (read once: spans that end later are not in them)."""
        if self._records is None:
            self._records = [record(span) for span in list(self.spans)]
        return self._records


#: The trace of the agent call running in this context (an asyncio task or a worker thread).
current_trace: ContextVar[ItemTrace | None] = ContextVar("cobalt_item_trace", default=None)


class ItemSpanProcessor:
    """An OpenTelemetry span processor keeping each span in the trace of the item whose call started it."""

    def __init__(self) -> None:
        # span id -> the trace of the item it belongs to, while the span is open; weakly, so a span the agent
        # never ends does not keep its item's spans alive after the call
        self._open: weakref.WeakValueDictionary[int, ItemTrace] = weakref.WeakValueDictionary()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        trace = current_trace.get()
        if trace is None and span.parent is not None:  # a thread of the agent's own, given the context
            trace = self._open.get(span.parent.span_id)
        if trace is not None:
            self._open[span.context.span_id] = trace

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None:
            return
        trace = self._open.pop(span.context.span_id, None)
        if trace is not None:
            trace.add(span)

    def _on_ending(self, span: Span) -> None:
        pass

    def shutdown(self) -> None:
        self._open.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def record(span: ReadableSpan) -> SpanRecord:
    """What the store keeps of a finished span."""
    attributes = {str(k): _plain(v) for k, v in (span.attributes or {}).items()}
    context = span.context
    start, end = span.start_time or 0, span.end_time
    return SpanRecord.model_construct(  # no validation: the values are built right here, on the agent's hot path
        span_id=format(context.span_id, "016x") if context else "", trace_id=format(context.trace_id, "032x")
        if context else "", parent_id=format(span.parent.span_id, "016x") if span.parent else None,
        name=span.name, kind=kind_of(attributes), start_ns=start,
        duration_ms=(end - start) / 1e6 if end is not None else None,
        status=span.status.status_code.name.lower(), status_message=span.status.description or None,
        attributes=attributes,
        events=[{"name": e.name, "time_ns": e.timestamp, "attributes": {str(k): _plain(v) for k, v in
                                                                        (e.attributes or {}).items()}}
                for e in span.events])


def _plain(value: Any) -> Any:
    """An attribute value as JSON holds it (OpenTelemetry keeps sequences as tuples)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


_PROCESSOR: list[ItemSpanProcessor] = []
_INSTALLING = threading.Lock()
_TOLD = [False]


def wanted() -> bool:
    """Whether anything in the process uses OpenTelemetry (its tracing API is imported): only then can an
    agent emit a span, so only then are the SDK imported and a provider set (50-300 ms of imports a
    process otherwise, paid by every run of an agent that emits nothing)."""
    return "opentelemetry.trace" in sys.modules


def install() -> bool:
    """Add cobalt's span processor to the process's tracer provider (made when there is none), once per
    process. False when the provider cannot take one (it is not the OpenTelemetry SDK's)."""
    if _PROCESSOR:
        return True
    with _INSTALLING:
        if _PROCESSOR:
            return True
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        processor = ItemSpanProcessor()
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):
            current.add_span_processor(processor)  # type: ignore[arg-type]
        elif isinstance(current, trace.ProxyTracerProvider):  # nobody set one: cobalt's, with only its processor
            provider = TracerProvider()
            provider.add_span_processor(processor)  # type: ignore[arg-type]
            trace.set_tracer_provider(provider)
        else:
            if not _TOLD[0]:
                _TOLD[0] = True
                print(f"cobalt: the process's OpenTelemetry tracer provider is a {type(current).__qualname__}, not "
                      "the OpenTelemetry SDK's TracerProvider, so cobalt cannot collect the agent's spans.",
                      file=sys.stderr)
            return False
        _PROCESSOR.append(processor)
        return True


def installed() -> bool:
    """Whether cobalt's processor is collecting in this process."""
    return bool(_PROCESSOR)
