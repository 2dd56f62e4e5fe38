"""Received spans into the store: decoded (`_otlp`), passed through the project's redaction hook, stored
as `trace_spans` rows, and traces past `[monitor] keep_days` pruned.

A request's spans are stored in one transaction before the receiver answers 200, so an exporter told
"accepted" never loses them; a body refused (400, 413) stores nothing of itself and leaves every span
stored before it where it is.

Group commit: a store transaction costs far more than the rows in it (a connection opened, a commit
made durable), so the requests that arrive while one commit is under way (many exporters posting at
once) wait, and the next commit stores all of them in one transaction, each span once, each request
answered after that commit. One request alone is stored at once, as before.
"""

from __future__ import annotations

import gzip
import importlib
import json
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, StoreLocked
from ..results._spans import SpanRecord
from ._otlp import BadPayload, ReceivedSpan, from_json, from_protobuf, record
from ._trace import read_trace, summary_row

if TYPE_CHECKING:
    from ..config._config import Config
    from ..store import Store

#: A span as the redaction hook sees it, and returns it (or None: not stored).
Redact = Callable[[dict[str, Any]], dict[str, Any] | None]
_DAY_NS = 86_400 * 10**9
#: Prune at most once per this many seconds: a delete per request would cost more than the request.
_PRUNE_EVERY = 60.0
#: The writer lets the store go after this many seconds without a request (another process may want it)...
_IDLE = 0.5
#: ...and after holding it this long, then takes it again for the next request.
_HOLD = 5.0


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


class _Request:
    """One request's rows waiting for a commit, and how that commit went for them."""

    __slots__ = ("error", "rows", "stored")

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.stored = False
        self.error: BaseException | None = None


class Ingest:
    """Received spans into one store, redacted first; traces older than `keep_days` pruned now and then."""

    def __init__(self, store: Store, *, redact: Redact | None = None, keep_days: int = 0) -> None:
        self.store = store
        self.redact = redact
        self.keep_days = keep_days
        self._pruned = -math.inf
        self._lock = threading.Lock()
        #: Guards the queue and `_writing`; notified when a request joins the queue or a commit ends.
        self._turn = threading.Condition()
        self._queue: list[_Request] = []
        self._writing = False
        self._closing = False
        self._writer: threading.Thread | None = None

    @classmethod
    def for_config(cls, config: Config) -> Ingest:
        from ..store import Store

        return cls(Store.for_config(config), redact=load_redact(config.monitor.redact, config.root),
                   keep_days=config.monitor.keep_days)

    def accept(self, spans: list[ReceivedSpan]) -> int:
        """Store `spans` (those the hook keeps) in one transaction; returns how many were stored."""
        received = datetime.now(UTC)
        rows = [row for s in spans if (row := self._row(s, received)) is not None]
        if rows:
            self._commit(_Request(rows))
        self._maybe_prune()
        return len(rows)

    def wait_for_queued(self, count: int, timeout: float) -> bool:
        """Wait until a commit is under way and `count` requests wait behind it for the next (False on
        timeout): how a test or a benchmark knows that requests arrived together."""
        with self._turn:
            return self._turn.wait_for(lambda: self._writing and len(self._queue) >= count, timeout)

    def _commit(self, request: _Request) -> None:
        """Queue the request for the writer thread, which stores the whole queue (this request and every one
        that came meanwhile) in one transaction; return once that commit ended."""
        with self._turn:
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_loop, name="cobalt-ingest", daemon=True)
                self._writer.start()
            self._queue.append(request)
            self._turn.notify_all()
            self._turn.wait_for(lambda: request.stored or request.error is not None)
        if request.error is not None:
            raise request.error

    def close(self) -> None:
        """Let the store go (the writer's held connection closed) once the requests queued are stored."""
        with self._turn:
            self._closing = True
            self._turn.notify_all()
            writer = self._writer
        if writer is not None and writer is not threading.current_thread():
            writer.join()
        with self._turn:
            self._closing = False

    def _write_loop(self) -> None:
        """The writer: each turn stores every request queued, in one transaction, on a connection held open
        while requests keep coming (`Store.hold_open`), let go after `_IDLE` seconds without one (the
        thread ends then too) or after `_HOLD` seconds held, so other processes get the store between bursts."""
        release: Callable[[], None] | None = None
        held_since = 0.0
        try:
            while True:
                with self._turn:
                    self._turn.wait_for(lambda: self._queue or self._closing, _IDLE)
                    group, self._queue = self._queue, []
                    if not group and release is None:
                        self._writer = None  # under the lock: a request queued from now starts another
                        return
                    self._writing = bool(group)
                    self._turn.notify_all()
                if release is not None and (not group or time.monotonic() - held_since > _HOLD):
                    let_go, release = release, None
                    let_go()  # this turn's commit opens its own connection: a gap for other processes
                elif release is None:
                    release, held_since = self.store.hold_open(), time.monotonic()
                if group:
                    self._finish(group)
        finally:
            if release is not None:
                release()
            with self._turn:  # never a queue left without its writer
                if self._writer is threading.current_thread():
                    self._writer = None
                    for waiting in self._queue:
                        waiting.error = StoreLocked("The receiver's writer stopped; send these spans again.",
                                                    "this process")
                    self._queue = []
                    self._turn.notify_all()

    def _finish(self, group: list[_Request]) -> None:
        try:
            self._store_group(group)
        finally:
            with self._turn:
                self._writing = False
                for waiting in group:  # a commit cut short (an exception past `_store_group`) stored none of them
                    if not waiting.stored and waiting.error is None:
                        waiting.error = StoreLocked("The commit of these spans was interrupted; send them again.",
                                                    "this process")
                self._turn.notify_all()

    def _store_group(self, group: list[_Request]) -> None:
        try:
            self._store(_once(row for request in group for row in request.rows))
        except Exception as exc:
            if len(group) == 1 or isinstance(exc, StoreLocked):
                for request in group:
                    request.error = exc
                return
            # a row one request carries may be what the store refused: each alone, so the others still go in
            for request in group:
                try:
                    self._store(_once(request.rows))
                    request.stored = True
                except Exception as alone:
                    request.error = alone
            return
        for request in group:
            request.stored = True

    def _store(self, rows: list[dict[str, Any]]) -> None:
        """The rows and their traces' summaries, in one transaction."""
        self.store.add_trace_spans(rows, summaries(rows))

    def _row(self, received: ReceivedSpan, at: datetime) -> dict[str, Any] | None:
        row = {**received.fields, "service": received.service, "received_at": at}
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
        a line that is not an export is a BadPayload naming it, the lines before it stored. The store is
        let go at the end (the writer's held connection closed)."""
        try:
            return self._import(path, batch)
        finally:
            self.close()

    def _import(self, path: Path, batch: int) -> int:
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


def summaries(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `trace_summaries` rows of the traces these span rows belong to, each read from its rows here
    (`summary_row`). A trace the reading fails on (a redaction hook's odd values) gets none: a window reads
    its spans instead."""
    by_trace: dict[str, list[SpanRecord]] = {}
    service: dict[str, str | None] = {}
    for row in rows:
        by_trace.setdefault(row["trace_id"], []).append(record(row))
        service[row["trace_id"]] = service.get(row["trace_id"]) or row.get("service")
    found = []
    for trace_id, spans in by_trace.items():
        try:
            summary = summary_row(read_trace(trace_id, spans, service=service[trace_id]))
        except Exception:  # what it fails on is the spans' own values; the spans themselves are stored
            continue
        found.append({**summary, "received_at": rows[0].get("received_at")})
    return found


def _once(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows, a span sent twice (an exporter's retry in the same commit) once."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        kept.setdefault((row["trace_id"], row["span_id"]), row)
    return list(kept.values())


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            yield from enumerate(lines, 1)
    else:
        with path.open(encoding="utf-8") as lines:
            yield from enumerate(lines, 1)
