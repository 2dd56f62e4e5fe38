"""Production traffic: OpenTelemetry traces received (`cobalt collect`, `cobalt traces import`), stored by
trace, read for their input, output, conversation, tool calls and usage (docs/monitors.md)."""

from ._checks import DriftCheck, drift_checks, send_alerts
from ._dataset import TraceAdded, add_to_dataset, add_trace, load_trace, names_a_file, trace_item
from ._ingest import Ingest, load_redact
from ._monitor import MONITORS, Monitor, WindowResult, monitor, sampled, score_window, window_bounds, window_key
from ._otlp import BadPayload, ReceivedSpan
from ._server import DEFAULT_PORT, Collector, needs_token, serve
from ._trace import ProductionTrace, conventional, read_trace

__all__ = [
           "DEFAULT_PORT",
           "MONITORS",
           "BadPayload",
           "Collector",
           "DriftCheck",
           "Ingest",
           "Monitor",
           "ProductionTrace",
           "ReceivedSpan",
           "TraceAdded",
           "WindowResult",
           "add_to_dataset",
           "add_trace",
           "conventional",
           "drift_checks",
           "load_redact",
           "load_trace",
           "monitor",
           "names_a_file",
           "needs_token",
           "read_trace",
           "sampled",
           "score_window",
           "send_alerts",
           "serve",
           "trace_item",
           "window_bounds",
           "window_key",
]
