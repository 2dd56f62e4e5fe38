"""The providers' batch APIs on the wire: OpenAI's Batch (`/files` + `/batches`) and Anthropic's Message
Batches (`/v1/messages/batches`), spoken with the judge's own HTTP session, headers and retry rules.

Each request carries a `custom_id` (cobalt's hash of the request), by which its answer comes back.
A result file is read up to 10 MB per request of the batch (the online cap), at most
`MAX_RESULTS_BYTES`; a results URL on another origin than the endpoint's
is refused: the key would go along.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._secrets import safe_url
from ._providers import Endpoint, redact
from ._retry import retrying
from ._wire import (
    DEFAULT_URLS,
    MAX_RESPONSE_BYTES,
    Clients,
    Completion,
    HTTPStatusError,
    ProviderError,
    _json_object,
    _Target,
    chat_answer,
    endpoint_url,
    request_headers,
)

#: The most bytes of one batch's results read (a 50,000-request OpenAI batch of judge answers is ~100 MB).
MAX_RESULTS_BYTES = 1024 * 2**20
#: What each provider takes in one batch (OpenAI: 50,000 requests, 200 MB; Anthropic: 100,000, 256 MB).
MAX_REQUESTS = {"openai": 50_000, "anthropic": 100_000}
MAX_BATCH_BYTES = 190 * 2**20
#: The OpenAI batch window; Anthropic's is fixed at 24 hours.
COMPLETION_WINDOW = "24h"


@dataclass
class BatchState:
    """A batch as the provider last described it."""

    batch_id: str
    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)
    #: Where the answers are: OpenAI's output and error file ids, or Anthropic's results URL.
    locations: list[str] = field(default_factory=list)
    error: str | None = None


#: A request's answer: its completion, or why it has none.
Outcome = Completion | ProviderError


def supports_batches(endpoint: Endpoint) -> bool:
    return endpoint.provider in ("openai", "anthropic")


def speaks_openai_batches_for_sure(endpoint: Endpoint) -> bool:
    """OpenAI's own API has the Batch API; another OpenAI-compatible server (vLLM, Ollama, a LiteLLM proxy) may
    not, which `has_batch_api` asks it."""
    return endpoint.provider != "openai" or endpoint_url(endpoint, "").startswith(DEFAULT_URLS["openai"])


async def has_batch_api(clients: Clients, endpoint: Endpoint) -> tuple[bool | None, str]:
    """Ask an OpenAI-compatible server whether it speaks the Batch API, by listing its batches (a GET that
    costs nothing): `(False, the URL)` when that is not found there, `(True, ...)` when it is; `(None, ...)`
    when the server could not tell (down, the key refused): the run's own calls will say why."""
    target = clients._target(endpoint, "/batches")
    try:
        await _call(clients, endpoint, "GET", "/batches")
    except HTTPStatusError as exc:
        return (False if exc.status in (404, 405) else None), target.shown
    except ProviderError:
        return None, target.shown
    return True, target.shown


async def submit(clients: Clients, endpoint: Endpoint, requests: Sequence[tuple[str, str, dict[str, Any]]]) -> str:
    """Send `(custom_id, path, body)` requests as one batch; returns the batch id."""
    if endpoint.provider == "anthropic":
        data = await _call(clients, endpoint, "POST", "/v1/messages/batches",
                           json_body={"requests": [{"custom_id": cid, "params": body} for cid, _, body in requests]})
    else:
        prefix = _openai_path_prefix(endpoint)
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": prefix + path, "body": body},
                                   ensure_ascii=False) + "\n" for cid, path, body in requests)
        uploaded = await _call(clients, endpoint, "POST", "/files", form={"purpose": "batch"},
                               file=("cobalt-judge-batch.jsonl", lines.encode("utf-8")))
        file_id = _text(uploaded.get("id"))
        if not file_id:
            raise ProviderError(f"{endpoint.label} batch upload answered without a file id; check base_url "
                                f"{safe_url(endpoint_url(endpoint, ''))!r}")
        data = await _call(clients, endpoint, "POST", "/batches",
                           json_body={"input_file_id": file_id, "endpoint": prefix + "/chat/completions",
                                      "completion_window": COMPLETION_WINDOW,
                                      "metadata": {"created_by": "cobalt"}})
    batch_id = _text(data.get("id"))
    if not batch_id:
        raise ProviderError(f"{endpoint.label} answered a batch creation without an id; check base_url "
                            f"{safe_url(endpoint_url(endpoint, ''))!r}")
    return batch_id


async def retrieve(clients: Clients, endpoint: Endpoint, batch_id: str) -> BatchState:
    """The batch's status now."""
    if endpoint.provider == "anthropic":
        data = await _call(clients, endpoint, "GET", f"/v1/messages/batches/{batch_id}")
        status = _text(data.get("processing_status")) or "unknown"
        counts = {k: int(v) for k, v in (data.get("request_counts") or {}).items() if isinstance(v, int)}
        url = _text(data.get("results_url"))
        return BatchState(batch_id, status, status == "ended", counts, [url] if url else [])
    data = await _call(clients, endpoint, "GET", f"/batches/{batch_id}")
    status = _text(data.get("status")) or "unknown"
    counts = {k: int(v) for k, v in (data.get("request_counts") or {}).items() if isinstance(v, int)}
    files = [f for f in (_text(data.get("output_file_id")), _text(data.get("error_file_id"))) if f]
    errors = (data.get("errors") or {}).get("data") if isinstance(data.get("errors"), dict) else None
    error = "; ".join(str(e.get("message")) for e in errors if isinstance(e, dict)) if errors else None
    return BatchState(batch_id, status, status in ("completed", "failed", "expired", "cancelled"), counts, files,
                      redact(error, endpoint)[:300] if error else None)


async def results(clients: Clients, endpoint: Endpoint, state: BatchState) -> dict[str, Outcome]:
    """Every answer the ended batch holds, by custom_id: a completion, or the request's own error. A line
    that is not JSON loses that one answer (an error naming its request, when its custom_id can be read);
    a file is read up to 10 MB per request of the batch (as an online answer is), at most MAX_RESULTS_BYTES."""
    found: dict[str, Outcome] = {}
    cap = min(MAX_RESULTS_BYTES, max(1, _requests(state)) * MAX_RESPONSE_BYTES)
    for location in state.locations:
        if endpoint.provider == "anthropic":
            raw = await _call(clients, endpoint, "GET", location, absolute=True, raw=True, cap=cap)
        else:
            raw = await _call(clients, endpoint, "GET", f"/files/{location}/content", raw=True, cap=cap)
        for number, line in enumerate(raw.splitlines(), 1):
            if line.strip():
                found.update(_line(endpoint, state.batch_id, number, line))
    return found


def _requests(state: BatchState) -> int:
    """How many requests the batch holds, as its counts say (OpenAI's `total`, else Anthropic's kinds summed)."""
    return state.counts.get("total") or sum(state.counts.values())


_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([^"\\]{1,200})"')


def _line(endpoint: Endpoint, batch_id: str, number: int, line: str) -> dict[str, Outcome]:
    """One results line's answer, by custom_id; a line that is not JSON is that request's error alone."""
    try:
        entry = json.loads(line)
    except json.JSONDecodeError as exc:
        named = _CUSTOM_ID.search(line)
        if named is None:
            return {}
        return {named[1]: ProviderError(f"{endpoint.label} batch {batch_id}: line {number} of its results, this "
                                        f"request's answer, is not valid JSON ({exc.msg}); run again to judge it")}
    if isinstance(entry, dict) and isinstance(entry.get("custom_id"), str):
        return {entry["custom_id"]: _outcome(endpoint, batch_id, entry)}
    return {}


def _outcome(endpoint: Endpoint, batch_id: str, entry: Mapping[str, Any]) -> Outcome:
    where = f"{endpoint.label} batch {batch_id}"
    if endpoint.provider == "anthropic":
        result = entry.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return chat_answer(endpoint, result["message"], batched=True)
        if kind == "errored":
            error = result.get("error") or {}
            detail = error.get("error", error) if isinstance(error, dict) else error
            message = detail.get("message") if isinstance(detail, dict) else detail
            return ProviderError(f"{where}: the request failed: {redact(str(message), endpoint)[:300]}")
        return ProviderError(f"{where}: the request was {kind or 'not answered'} before it was judged")
    response = entry.get("response") or {}
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    if status == 200 and isinstance(body, dict):
        return chat_answer(endpoint, body, batched=True)
    error = entry.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    if code == "batch_expired":
        return ProviderError(f"{where} expired before this request was judged (the 24 h window)")
    return ProviderError(f"{where}: the request failed{f' with HTTP {status}' if status else ''}: "
                         f"{redact(str(message), endpoint)[:300]}")


def _openai_path_prefix(endpoint: Endpoint) -> str:
    """The path the batch lines name: the base URL's path (`/v1` for OpenAI), which a line's `url` starts with."""
    import yarl

    return yarl.URL(endpoint_url(endpoint, "")).path.rstrip("/")


async def _call(clients: Clients, endpoint: Endpoint, method: str, path: str, *, json_body: Any = None,
                form: Mapping[str, str] | None = None, file: tuple[str, bytes] | None = None,
                absolute: bool = False, raw: bool = False, cap: int = MAX_RESULTS_BYTES) -> Any:
    """One management call with the judge's retry rules: the decoded JSON object, or the body's text (read
    up to `cap` bytes)."""
    target = _target(clients, endpoint, path, absolute)

    async def attempt(deadline: float) -> Any:
        return await _send(clients, endpoint, target, method, deadline, json_body, form, file, raw, cap)

    return await retrying(attempt, retries=endpoint.max_retries, budget=endpoint.retry_max_seconds,
                          budget_name="[judge] retry_max_seconds", timing=clients.timing)


def _target(clients: Clients, endpoint: Endpoint, path: str, absolute: bool) -> _Target:
    import yarl

    base = yarl.URL(endpoint_url(endpoint, "")).with_user(None)
    if not absolute:
        return clients._target(endpoint, path)
    url = yarl.URL(path)
    if url.origin() != base.origin():
        raise ProviderError(f"{endpoint.label} named its batch results at {safe_url(path)}, another origin than "
                            f"{safe_url(str(base))}; cobalt sends its key only to the judge's own server")
    return _Target(safe_url(path), url, request_headers(endpoint), clients._target(endpoint, "").ssl)


async def _send(clients: Clients, endpoint: Endpoint, target: _Target, method: str, deadline: float,
                json_body: Any, form: Mapping[str, str] | None, file: tuple[str, bytes] | None, raw: bool,
                cap: int) -> Any:
    import aiohttp

    headers = dict(target.headers)
    data: Any = None
    if file is not None:
        headers.pop("Content-Type", None)  # aiohttp writes the multipart boundary
        data = aiohttp.FormData()
        for key, value in (form or {}).items():
            data.add_field(key, value)
        data.add_field("file", file[1], filename=file[0], content_type="application/jsonl")
    elif json_body is not None:
        data = json.dumps(json_body, ensure_ascii=False).encode("utf-8")
    # a results file may be large: it gets five minutes at least, and up to `cap`
    body = await clients.send(endpoint, target, method, data, deadline, headers=headers,
                              cap=cap if raw else None,
                              timeout=max(endpoint.timeout, 300.0) if raw else None)
    if raw:
        return body.decode("utf-8", errors="replace")
    return _json_object(endpoint, target, body)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
