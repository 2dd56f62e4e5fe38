"""Production traffic: OpenTelemetry traces received (`cobalt collect`, `cobalt traces import`), stored by
trace, read for their input, output, conversation, tool calls and usage (docs/monitors.md)."""

from ._dataset import add_to_dataset, trace_item
from ._ingest import Ingest, load_redact
from ._otlp import BadPayload, ReceivedSpan
from ._server import DEFAULT_PORT, Collector, needs_token, serve
from ._trace import ProductionTrace, conventional, read_trace

__all__ = ["DEFAULT_PORT", "BadPayload", "Collector", "Ingest", "ProductionTrace", "ReceivedSpan", "add_to_dataset",
           "conventional", "load_redact", "needs_token", "read_trace", "serve", "trace_item"]
