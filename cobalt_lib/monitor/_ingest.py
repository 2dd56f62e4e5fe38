"""Received spans into the store: decoded (`_otlp`), passed through the project's redaction hook, stored
as `trace_spans` rows, and traces past `[monitor] keep_days` pruned.

A request's spans are stored in one transaction before the receiver answers 200, so an exporter told
"accepted" never loses them; a body refused (400, 413) stores nothing of itself and leaves every span
stored before it where it is.
"""

from __future__ import annotations

import gzip
import importlib
import json
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ._otlp import BadPayload, ReceivedSpan, from_json, from_protobuf

if TYPE_CHECKING:
    from ..config._config import Config
    from ..store import Store

#: A span as the redaction hook sees it, and returns it (or None: not stored).
Redact = Callable[[dict[str, Any]], dict[str, Any] | None]
_DAY_NS = 86_400 * 10**9
#: Prune at most once per this many seconds: a delete per request would cost more than the request.
_PRUNE_EVERY = 60.0


class TooLarge(BadPayload):
    """A body over `[monitor] max_body_bytes`, before or after gzip."""


def load_redact(spec: str | None, root: Path) -> Redact | None:
    """The hook `[monitor] redact` names (`module:function`, the module found from the project root)."""
    if not spec:
        return None
    module_name, _, function = spec.partition(":")
    if not module_name or not function:
        raise ConfigError(f"[monitor] redact = {spec!r} must be 'module:function' (e.g. 'myproject.privacy:redact').")
    import sys

    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        found = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"[monitor] redact = {spec!r} cannot be loaded ({exc}); fix the name or unset it.") from None
    if not callable(found):
        raise ConfigError(f"[monitor] redact = {spec!r} is not a function.")
    return found


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """The body with its Content-Encoding (gzip, deflate, identity) undone, refused past `limit` bytes."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise BadPayload(f"Content-Encoding {encoding!r} is not supported; send gzip or no encoding.")
    inflater = zlib.decompressobj(zlib.MAX_WBITS | (16 if encoding == "gzip" else 0))
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadPayload(f"The body is not valid {encoding} ({exc}).") from None
    if len(data) > limit:
        raise TooLarge(f"The body inflates past {limit:,} bytes ([monitor] max_body_bytes); send smaller batches.")
    return data


def decode(body: bytes, content_type: str) -> list[ReceivedSpan]:
    """A request body's spans by its Content-Type (protobuf, else JSON)."""
    kind = content_type.split(";")[0].strip().lower()
    if kind in ("application/x-protobuf", "application/protobuf"):
        return from_protobuf(body)
    if kind != "application/json":
        raise BadPayload(f"Content-Type {kind or '(none)'!r} is not OTLP; send application/x-protobuf or "
                         "application/json.")
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadPayload(f"The body is not JSON ({exc}).") from None
    return from_json(document)


class Ingest:
    """Received spans into one store, redacted first; traces older than `keep_days` pruned now and then."""

    def __init__(self, store: Store, *, redact: Redact | None = None, keep_days: int = 0) -> None:
        self.store = store
        self.redact = redact
        self.keep_days = keep_days
        self._pruned = -math.inf
        self._lock = threading.Lock()

    @classmethod
    def for_config(cls, config: Config) -> Ingest:
        from ..store import Store

        return cls(Store.for_config(config), redact=load_redact(config.monitor.redact, config.root),
                   keep_days=config.monitor.keep_days)

    def accept(self, spans: list[ReceivedSpan]) -> int:
        """Store `spans` (those the hook keeps) in one transaction; returns how many were stored."""
        received = datetime.now(UTC)
        rows = [row for s in spans if (row := self._row(s, received)) is not None]
        self.store.add_trace_spans(rows)
        self._maybe_prune()
        return len(rows)

    def _row(self, received: ReceivedSpan, at: datetime) -> dict[str, Any] | None:
        row = {**received.span.model_dump(), "service": received.service, "received_at": at}
        if self.redact is not None:
            kept = self.redact(row)
            if kept is None:
                return None
            row = {**kept, "trace_id": row["trace_id"], "span_id": row["span_id"]}  # the ids stay whole
        return row

    def _maybe_prune(self) -> None:
        if not self.keep_days:
            return
        with self._lock:  # one of the receiver's threads prunes; the others go on
            if time.monotonic() - self._pruned < _PRUNE_EVERY:
                return
            self._pruned = time.monotonic()
        self.prune()

    def prune(self) -> int:
        """Delete the traces older than `keep_days` (none when it is 0); returns how many."""
        if not self.keep_days:
            return 0
        return self.store.prune_traces(time.time_ns() - self.keep_days * _DAY_NS)

    def import_file(self, path: Path, *, batch: int = 5000) -> int:
        """Store the spans of a Collector file-exporter file (one JSON export a line, gzip or plain);
        a line that is not an export is a BadPayload naming it, the lines before it stored."""
        stored = 0
        pending: list[ReceivedSpan] = []
        for number, line in _lines(path):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except ValueError as exc:
                kept = stored + self.accept(pending)
                raise BadPayload(f"{path}:{number} is not JSON ({exc}); each line must be one OTLP JSON export, "
                                 f"as the Collector's file exporter writes; the {kept:,} spans before it are "
                                 "stored.") from None
            try:
                pending += from_json(document, f"{path}:{number}")
            except BadPayload as exc:
                raise BadPayload(f"{exc} The {stored + self.accept(pending):,} spans before it are stored.") from None
            if len(pending) >= batch:
                stored += self.accept(pending)
                pending = []
        return stored + self.accept(pending)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            yield from enumerate(lines, 1)
    else:
        with path.open(encoding="utf-8") as lines:
            yield from enumerate(lines, 1)
