"""Evaluations out as OpenTelemetry events: one `gen_ai.evaluation.result` event per evaluation.

Opt-in (`[traces] export_evaluations = true`, or COBALT_EXPORT_EVALUATIONS=1). The events go through the
OpenTelemetry SDK's OTLP/HTTP log exporter, which the standard variables configure
(OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS,
OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), so a team's Logfire, Langfuse or
Phoenix shows cobalt's scores beside its traces. An event carries the GenAI conventions' attributes
(`gen_ai.evaluation.name`, `.score.value`, `.score.label`, `.explanation`, `gen_ai.response.id`,
`error.type`) and cobalt's own (`cobalt.*`: run, experiment, item); it is parented to the item's root span
when the agent emitted one. It never carries an endpoint, a header, a key or an error message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._secrets import scrub_loggers
from ..results._report import Evaluation, ItemResult
from ..results._spans import SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LoggerProvider

#: The event's name, per the GenAI semantic conventions.
EVENT_NAME = "gen_ai.evaluation.result"
#: The longest explanation sent (characters); a longer reason is cut, saying so.
MAX_EXPLANATION = 8_000


class EvaluationExporter:
    """Sends each evaluation of a run as an event; `close()` sends what is still batched."""

    def __init__(self, provider: LoggerProvider, run: Mapping[str, str]) -> None:
        self.provider = provider
        self.logger = provider.get_logger("cobalt")
        self.run = dict(run)

    @classmethod
    def for_run(cls, run_id: str, experiment: str) -> EvaluationExporter:
        """The exporter of a run, its OTLP endpoint from the environment."""
        return cls(logger_provider(), {"cobalt.run.id": run_id, "cobalt.experiment": experiment})

    def emit(self, item: ItemResult, evaluations: Mapping[str, Evaluation]) -> None:
        """One event per evaluation of `item`, parented to the item's root span when it has one."""
        context = _span_context(item.spans)
        response = _response_id(item.spans)
        for name, evaluation in evaluations.items():
            self.logger.emit(event_name=EVENT_NAME, context=context, attributes=self.attributes(
                item, name, evaluation, response), body=None)

    def attributes(self, item: ItemResult, name: str, ev: Evaluation, response: str | None) -> dict[str, Any]:
        found: dict[str, Any] = {"gen_ai.evaluation.name": name, **self.run, "cobalt.item.index": item.index,
                                 "cobalt.item.run_index": item.run_index, "cobalt.item.id": item.item_id,
                                 "cobalt.evaluation.cached": ev.cached}
        if ev.status != "ok":
            found["error.type"] = "eval-error"  # the kind of failure only: its message may quote anything
        if ev.score is not None:
            found["gen_ai.evaluation.score.value"] = float(ev.score)
        label = ("eval-error" if ev.status != "ok" else None if ev.passed is None
                 else "pass" if ev.passed else "fail")
        if label:
            found["gen_ai.evaluation.score.label"] = label
        if ev.reason:
            cut = len(ev.reason) - MAX_EXPLANATION
            found["gen_ai.evaluation.explanation"] = ev.reason if cut <= 0 else (
                f"{ev.reason[:MAX_EXPLANATION]}… [{cut} characters cut]")
        if ev.raw_score is not None and ev.raw_score != ev.score:
            found["cobalt.evaluation.raw_score"] = float(ev.raw_score)
        if ev.judge_model:
            found["cobalt.judge.model"] = ev.judge_model
        if response:
            found["gen_ai.response.id"] = response
        return found

    def close(self) -> None:
        self.provider.shutdown()


def logger_provider() -> LoggerProvider:
    """A logger provider batching records to the OTLP/HTTP endpoint the environment names (a provider of
    its own: the process's global one, if the user set any, is left alone)."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource

    # The SDK logs a failed export with the endpoint's URL (a `?token=` in it) and its exception: scrubbed
    scrub_loggers("opentelemetry")
    given = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "cobalt"}
    provider = LoggerProvider(resource=Resource.create(given))
    provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    return provider


def _root(spans: list[SpanRecord]) -> SpanRecord | None:
    """The item's first span whose parent is not in its trace (its agent's outermost span)."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids and s.trace_id and s.span_id]
    return min(roots, key=lambda s: s.start_ns) if roots else None


def _span_context(spans: list[SpanRecord]) -> Any:
    """An OpenTelemetry context whose current span is the item's root span (None without spans)."""
    root = _root(spans)
    if root is None:
        return None
    from opentelemetry import trace

    span = trace.NonRecordingSpan(trace.SpanContext(int(root.trace_id, 16), int(root.span_id, 16), is_remote=True,
                                                    trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    return trace.set_span_in_context(span)


def _response_id(spans: list[SpanRecord]) -> str | None:
    """The id of the last model answer (what the output came from), when the model spans carry one."""
    answers = [s for s in spans if s.kind == "model" and s.attributes.get("gen_ai.response.id")]
    return str(max(answers, key=lambda s: s.start_ns).attributes["gen_ai.response.id"]) if answers else None
