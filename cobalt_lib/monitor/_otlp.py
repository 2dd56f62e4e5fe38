"""OTLP trace payloads read into span records: the protobuf of `POST /v1/traces`, its JSON encoding, and
the OpenTelemetry Collector's file exporter (one JSON `ExportTraceServiceRequest` a line).

The two encodings differ in more than syntax (the OTLP specification, "JSON Protobuf Encoding"): JSON
keeps the ids as hex (protobuf as bytes), the 64-bit integers as strings, and the enums as numbers;
both are read here into the same `SpanRecord`, with the span's service (`service.name` of its resource).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .._errors import CobaltError
from ..results._spans import SpanRecord
from ..traces._genai import kind_of

#: OTLP's status codes, by their enum numbers (protobuf, JSON) and names (some JSON encoders).
_STATUS = {0: "unset", 1: "ok", 2: "error", "STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok",
           "STATUS_CODE_ERROR": "error"}


class BadPayload(CobaltError):
    """A body that is not an OTLP trace export: one sentence saying what was wrong."""


#: A span's fields where a reader leaves them out (None) or a redaction hook set them to None.
_DEFAULTS = {"trace_id": "", "name": "", "kind": "other", "start_ns": 0, "status": "unset"}
_FIELDS = tuple(SpanRecord.model_fields)


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """A span as it arrived: the fields of the record the store keeps, and the service that sent it."""

    fields: dict[str, Any]
    service: str | None

    @property
    def span(self) -> SpanRecord:
        return record(self.fields)


def record(fields: dict[str, Any]) -> SpanRecord:
    """A `SpanRecord` of a span's fields (the store's row of it: other keys ignored, a None a default),
    built as pydantic's `model_construct` builds one, without its per-field defaults machinery (about 25 us
    a span, paid twice a span received before)."""
    kept = {name: fields.get(name) for name in _FIELDS}
    for name, default in _DEFAULTS.items():
        if kept[name] is None:
            kept[name] = default
    if kept["attributes"] is None:
        kept["attributes"] = {}
    if kept["events"] is None:
        kept["events"] = []
    span = SpanRecord.__new__(SpanRecord)
    object.__setattr__(span, "__dict__", kept)
    object.__setattr__(span, "__pydantic_fields_set__", set(_FIELDS))
    object.__setattr__(span, "__pydantic_extra__", None)
    object.__setattr__(span, "__pydantic_private__", None)
    return span


def from_protobuf(body: bytes) -> list[ReceivedSpan]:
    """The spans of a protobuf `ExportTraceServiceRequest`."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise BadPayload(f"The body is not an OTLP protobuf ExportTraceServiceRequest ({exc}); send "
                         "Content-Type: application/json for OTLP JSON.") from None
    found = []
    for resource_spans in request.resource_spans:
        service = _proto_service(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(ReceivedSpan(_proto_span(span), service))
    return found


def _proto_service(attributes: Any) -> str | None:
    for kv in attributes:
        if kv.key == "service.name":
            return str(_proto_value(kv.value))
    return None


def _proto_span(span: Any) -> dict[str, Any]:
    attributes = {kv.key: _proto_value(kv.value) for kv in span.attributes}
    start, end = span.start_time_unix_nano, span.end_time_unix_nano
    status = span.status
    return {"span_id": span.span_id.hex(), "parent_id": span.parent_span_id.hex() or None,
            "trace_id": span.trace_id.hex(), "name": span.name, "kind": kind_of(attributes), "start_ns": start,
            "duration_ms": (end - start) / 1e6 if end else None, "status": _STATUS.get(status.code, "unset"),
            "status_message": status.message or None, "attributes": attributes,
            "events": [{"name": e.name, "time_ns": e.time_unix_nano,
                        "attributes": {kv.key: _proto_value(kv.value) for kv in e.attributes}} for e in span.events]}


def _proto_value(value: Any) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_proto_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _proto_value(kv.value) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, which)


def from_json(document: Any, where: str = "The body") -> list[ReceivedSpan]:
    """The spans of an OTLP JSON `ExportTraceServiceRequest` (already parsed); `where` names it in errors."""
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise BadPayload(f"{where} is not an OTLP JSON trace export: expected an object with a "
                         "\"resourceSpans\" list.")
    found = []
    for resource_spans in _objects(document.get("resourceSpans"), where, "resourceSpans"):
        resource = resource_spans.get("resource") or {}
        service = _json_attributes(resource.get("attributes"), where).get("service.name")
        for scope_spans in _objects(resource_spans.get("scopeSpans"), where, "scopeSpans"):
            for span in _objects(scope_spans.get("spans"), where, "spans"):
                found.append(ReceivedSpan(_json_span(span, where), None if service is None else str(service)))
    return found


def _objects(value: Any, where: str, field: str) -> Iterator[dict[str, Any]]:
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise BadPayload(f"{where}: \"{field}\" must be a list of objects.")
    yield from value


def _json_span(span: dict[str, Any], where: str) -> dict[str, Any]:
    attributes = _json_attributes(span.get("attributes"), where)
    span_id, trace_id = _hex_id(span.get("spanId"), where, "spanId"), _hex_id(span.get("traceId"), where, "traceId")
    if not span_id or not trace_id:
        raise BadPayload(f"{where}: a span lacks its \"spanId\" or \"traceId\".")
    start, end = _nanos(span.get("startTimeUnixNano"), where), _nanos(span.get("endTimeUnixNano"), where)
    status = span.get("status") or {}
    return {"span_id": span_id, "parent_id": _hex_id(span.get("parentSpanId"), where, "parentSpanId") or None,
            "trace_id": trace_id, "name": str(span.get("name") or ""), "kind": kind_of(attributes), "start_ns": start,
            "duration_ms": (end - start) / 1e6 if end else None, "status": _STATUS.get(status.get("code", 0), "unset"),
            "status_message": status.get("message") or None, "attributes": attributes,
            "events": [{"name": str(e.get("name") or ""), "time_ns": _nanos(e.get("timeUnixNano"), where),
                        "attributes": _json_attributes(e.get("attributes"), where)}
                       for e in _objects(span.get("events"), where, "events")]}


def _hex_id(value: Any, where: str, field: str) -> str:
    """An id as lowercase hex: OTLP JSON sends hex; some exporters send protobuf's base64 (the Collector
    before 0.60 did): 16 or 8 bytes either way."""
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise BadPayload(f"{where}: \"{field}\" must be a hex string, not {type(value).__name__}.")
    try:
        return bytes.fromhex(value).hex() if len(value) in (16, 32) else base64.b64decode(value, validate=True).hex()
    except (ValueError, binascii.Error):
        raise BadPayload(f"{where}: \"{field}\" {value[:40]!r} is neither hex nor base64.") from None


def _nanos(value: Any, where: str) -> int:
    if value in (None, ""):
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadPayload(f"{where}: a time {str(value)[:40]!r} is not a count of nanoseconds.") from None


def _json_attributes(value: Any, where: str) -> dict[str, Any]:
    return {str(kv.get("key")): _json_value(kv.get("value") or {}) for kv in _objects(value, where, "attributes")}


def _json_value(value: dict[str, Any]) -> Any:
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [_json_value(v or {}) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {str(kv.get("key")): _json_value(kv.get("value") or {})
                for kv in (value["kvlistValue"] or {}).get("values") or []}
    if "bytesValue" in value:
        return value["bytesValue"]
    return None
