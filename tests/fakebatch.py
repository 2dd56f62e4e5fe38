"""The batch endpoints of the loopback LLM server (`FakeLLM.batches`): OpenAI's `/v1/files` and
`/v1/batches`, and Anthropic's `/v1/messages/batches`, answering each batched request as the server
answers the same request online (its script, then `respond`).

A batch stays in progress until it has been looked at `polls_to_end` times; then every request is
answered at once. `expire_after` answers only that many requests and ends the batch expired.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from fakellm import FakeLLM


@dataclass
class FakeBatch:
    batch_id: str
    provider: str  # "openai" or "anthropic"
    requests: list[dict[str, Any]]
    polls: int = 0
    status: str = "in_progress"
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


class BatchAPI:
    """What the batch endpoints hold: uploaded files, batches, and how they end."""

    def __init__(self, server: FakeLLM) -> None:
        self.server = server
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.files: dict[str, bytes] = {}
            self.batches: dict[str, FakeBatch] = {}
            #: How many looks a batch takes to end, and how many requests an expiring batch answers.
            self.polls_to_end = 1
            self.expire_after: int | None = None
            #: Every batch API call, as (method, path).
            self.calls: list[tuple[str, str]] = []
            #: Answer every batch endpoint 404, as a server without a batch API does.
            self.absent = False
            #: Results lines (1-based) written damaged: their JSON cut short, the custom_id still readable.
            self.damaged: set[int] = set()
            #: Bytes of padding after the results (a server sending more than any answer needs).
            self.padding = 0

    def install(self, app: web.Application) -> None:
        routes = [("POST", "/v1/files", self._upload), ("GET", "/v1/files/{file_id}/content", self._file_content),
                  ("GET", "/v1/batches", self._list_openai), ("POST", "/v1/batches", self._create_openai),
                  ("GET", "/v1/batches/{batch_id}", self._retrieve_openai),
                  ("POST", "/v1/messages/batches", self._create_anthropic),
                  ("GET", "/v1/messages/batches/{batch_id}", self._retrieve_anthropic),
                  ("GET", "/v1/messages/batches/{batch_id}/results", self._results_anthropic)]
        for method, path, handler in routes:
            app.router.add_route(method, path, self._unless_absent(handler))

    def _unless_absent(self, handler: Any) -> Any:
        """With `absent` set, the server is one without a batch API (vLLM, Ollama): 404, as FastAPI says it."""
        async def answer(request: web.Request) -> web.StreamResponse:
            if self.absent:
                self._note(request)
                return web.json_response({"detail": "Not Found"}, status=404)
            return await handler(request)  # type: ignore[no-any-return]

        return answer

    async def _list_openai(self, request: web.Request) -> web.Response:
        self._note(request)
        with self._lock:
            listed = [{"id": b.batch_id, "object": "batch", "status": b.status} for b in self.batches.values()
                      if b.provider == "openai"]
        return web.json_response({"object": "list", "data": listed, "has_more": False})

    def _note(self, request: web.Request) -> None:
        with self._lock:
            self.calls.append((request.method, request.path))

    # -- OpenAI -----------------------------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.Response:
        self._note(request)
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None or isinstance(upload, str):
            return web.json_response({"error": {"message": "purpose must be batch, with a file"}}, status=400)
        with self._lock:
            file_id = f"file-{next(self._ids)}"
            self.files[file_id] = upload.file.read()
        return web.json_response({"id": file_id, "object": "file", "purpose": "batch"})

    async def _create_openai(self, request: web.Request) -> web.Response:
        self._note(request)
        body = await request.json()
        lines = self.files.get(body.get("input_file_id", ""), b"").decode().splitlines()
        if body.get("endpoint") != "/v1/chat/completions" or not lines:
            return web.json_response({"error": {"message": "unknown file or endpoint"}}, status=400)
        requests = [json.loads(line) for line in lines]
        if any(r.get("url") != "/v1/chat/completions" or r.get("method") != "POST" for r in requests):
            return web.json_response({"error": {"message": "each line must POST /v1/chat/completions"}}, status=400)
        with self._lock:
            batch = FakeBatch(f"batch_{next(self._ids)}", "openai", requests)
            self.batches[batch.batch_id] = batch
        return web.json_response(self._openai_view(batch))

    async def _retrieve_openai(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        self._look(batch)
        return web.json_response(self._openai_view(batch))

    async def _file_content(self, request: web.Request) -> web.Response:
        self._note(request)
        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    def _openai_view(self, batch: FakeBatch) -> dict[str, Any]:
        ended = batch.status in ("completed", "expired")
        return {"id": batch.batch_id, "object": "batch", "endpoint": "/v1/chat/completions",
                "status": batch.status,
                "output_file_id": f"{batch.batch_id}-out" if ended and batch.results else None,
                "error_file_id": f"{batch.batch_id}-err" if ended and batch.errors else None,
                "request_counts": {"total": len(batch.requests), "completed": len(batch.results),
                                   "failed": len(batch.errors)}}

    # -- Anthropic --------------------------------------------------------------------------------

    async def _create_anthropic(self, request: web.Request) -> web.Response:
        self._note(request)
        body = await request.json()
        requests = body.get("requests") or []
        if not requests or any("custom_id" not in r or "params" not in r for r in requests):
            return web.json_response({"error": {"message": "requests need custom_id and params"}}, status=400)
        with self._lock:
            batch = FakeBatch(f"msgbatch_{next(self._ids)}", "anthropic", requests)
            self.batches[batch.batch_id] = batch
        return web.json_response(self._anthropic_view(batch, request))

    async def _retrieve_anthropic(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        self._look(batch)
        return web.json_response(self._anthropic_view(batch, request))

    async def _results_anthropic(self, request: web.Request) -> web.Response:
        self._note(request)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None or batch.status != "ended":
            return web.json_response({"error": {"message": "not ended"}}, status=404)
        return web.Response(body=self._lines([*batch.results, *batch.errors]), content_type="application/binary")

    def _lines(self, entries: list[dict[str, Any]]) -> bytes:
        lines = [json.dumps(r)[: -20 if n in self.damaged else None] for n, r in enumerate(entries, 1)]
        return "".join(line + "\n" for line in lines).encode() + b" " * self.padding

    def _anthropic_view(self, batch: FakeBatch, request: web.Request) -> dict[str, Any]:
        ended = batch.status == "ended"
        kinds = [r["result"]["type"] for r in [*batch.results, *batch.errors]]
        return {"id": batch.batch_id, "type": "message_batch", "processing_status": batch.status,
                "request_counts": {"processing": 0 if ended else len(batch.requests),
                                   **{k: kinds.count(k) for k in ("succeeded", "errored", "canceled", "expired")}},
                "results_url": f"http://{request.host}/v1/messages/batches/{batch.batch_id}/results" if ended
                else None}

    # -- answering --------------------------------------------------------------------------------

    def _look(self, batch: FakeBatch) -> None:
        with self._lock:
            batch.polls += 1
            if batch.status != "in_progress" or batch.polls < self.polls_to_end:
                return
            expire_after = self.expire_after
        for n, entry in enumerate(batch.requests):
            expired = expire_after is not None and n >= expire_after
            if batch.provider == "openai":
                self._answer_openai(batch, entry, expired)
            else:
                self._answer_anthropic(batch, entry, expired)
        with self._lock:
            batch.status = ("expired" if expire_after is not None else "completed") if batch.provider == "openai" \
                else "ended"
            for suffix, lines in (("out", batch.results), ("err", batch.errors)):
                self.files[f"{batch.batch_id}-{suffix}"] = self._lines(lines)

    def _reply(self, kind: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and body the server would answer this request with online."""
        server = self.server
        with server._lock:
            server.served[f"batch-{kind}"] = server.served.get(f"batch-{kind}", 0) + 1
            server.requests.append({"kind": f"batch-{kind}", "body": body, "headers": {}, "time": 0.0})
            scripted = server._queue.popleft() if server._queue else None
        reply = scripted or server._respond(kind, body)
        if reply.status != 200:
            return reply.status, reply.body or {"error": {"message": f"scripted {reply.status}"}}
        return 200, server._payload(kind, body, reply)

    def _answer_openai(self, batch: FakeBatch, entry: dict[str, Any], expired: bool) -> None:
        custom_id = entry["custom_id"]
        if expired:
            batch.errors.append({"id": f"req-{custom_id[:8]}", "custom_id": custom_id, "response": None,
                                 "error": {"code": "batch_expired", "message": "This request could not be executed "
                                           "before the completion window expired."}})
            return
        status, body = self._reply("chat", entry["body"])
        line = {"id": f"req-{custom_id[:8]}", "custom_id": custom_id,
                "response": {"status_code": status, "request_id": "r", "body": body}, "error": None}
        (batch.results if status == 200 else batch.errors).append(line)

    def _answer_anthropic(self, batch: FakeBatch, entry: dict[str, Any], expired: bool) -> None:
        custom_id = entry["custom_id"]
        if expired:
            batch.errors.append({"custom_id": custom_id, "result": {"type": "expired"}})
            return
        status, body = self._reply("messages", entry["params"])
        if status == 200:
            batch.results.append({"custom_id": custom_id, "result": {"type": "succeeded", "message": body}})
        else:
            error = body.get("error") if isinstance(body, dict) else None
            batch.errors.append({"custom_id": custom_id, "result": {"type": "errored", "error": {
                "type": "error", "error": {"type": "invalid_request_error",
                                           "message": (error or {}).get("message", "failed")}}}})
