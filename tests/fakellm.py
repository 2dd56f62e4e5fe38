"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat completions and embeddings API and
the Anthropic messages API, counts requests, and can be scripted per test.

In tests it runs in a background thread (see the `llm` fixture); benchmarks start it as a
separate process: `python tests/fakellm.py --latency 0.1` prints `PORT <n>` when ready. With
`--faults 0.05` it answers 5% of the requests (drawn from a seeded generator) with a fault, in turn
a 429 with Retry-After, a 500, a reset connection and an answer slower than `--slow` seconds;
requests carrying the header `x-fakellm-no-faults` are spared (a soak test's agent).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from aiohttp import web
from fakebatch import BatchAPI


@dataclass
class Reply:
    """One scripted answer: text for a 200, or an HTTP error status, optionally after a delay."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    delay: float = 0.0
    prompt_tokens: int = 20
    completion_tokens: int = 10


def answer(score: float = 0.8, reason: str = "looks right", **kw: Any) -> Reply:
    return Reply(text=json.dumps({"score": score, "reason": reason}), **kw)


def text(content: str, **kw: Any) -> Reply:
    return Reply(text=content, **kw)


def error(status: int, *, retry_after: float | None = None, headers: dict[str, str] | None = None,
          **kw: Any) -> Reply:
    headers = {**({"retry-after": f"{retry_after:g}"} if retry_after is not None else {}), **(headers or {})}
    return Reply(status=status, headers=headers, body={"error": {"message": f"scripted {status}",
                                                                 "type": "scripted"}}, **kw)


Responder = Callable[[str, dict[str, Any]], Reply | str]


def _default_responder(kind: str, body: dict[str, Any]) -> Reply:
    return answer(0.8, "looks right")


def embedding_for(text_value: str, dims: int = 64) -> list[float]:
    """A deterministic embedding: hashed character trigrams, so similar texts are close."""
    vector = [0.0] * dims
    padded = f"  {text_value.lower()}  "
    for i in range(len(padded) - 2):
        h = int.from_bytes(hashlib.md5(padded[i : i + 3].encode()).digest()[:4], "little")
        vector[h % dims] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class FakeLLM:
    """The server. `script(...)` queues replies for the next chat calls; `respond` answers the rest."""

    def __init__(self, *, latency: float = 0.0, faults: float = 0.0, slow: float = 5.0, seed: int = 0,
                 record: bool = True) -> None:
        self.latency = latency
        #: Whether `requests` keeps each request (a long soak run counts them in `served` only).
        self.record = record
        self.served: dict[str, int] = {}
        #: The share of requests answered with an injected fault (see `_fault`), and how slow a slow one is.
        self.faults = faults
        self.slow = slow
        self._random = random.Random(seed)
        self._fault_turn = 0
        #: Injected faults by kind: "429", "500", "reset", "slow".
        self.injected: dict[str, int] = {}
        self.port = 0
        self.requests: list[dict[str, Any]] = []
        self.respond: Responder = _default_responder
        #: Replaces the embeddings (which are otherwise computed from the text), e.g. with an error.
        self.embeddings_reply: Reply | None = None
        self._queue: deque[Reply] = deque()
        self._embeddings_queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._inflight = 0
        self.max_inflight = 0
        #: Bumped by reset(): a slow request left over from an earlier test does not count as in flight.
        self._generation = 0
        #: The batch endpoints (OpenAI Batch, Anthropic Message Batches), answering as the chat endpoints do.
        self.batches = BatchAPI(self)
        #: Whether unscripted chat answers echo the request back (its URL and headers, as sent and decoded),
        #: as a careless server or proxy does: a 404 naming it when the prompt holds ECHO-ERROR, else the reason.
        self.echo = False

    # -- urls -----------------------------------------------------------------------------------

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ------------------------------------------------------------------------------

    def script(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(text(r) if isinstance(r, str) else r for r in replies)

    def script_embeddings(self, *replies: Reply) -> None:
        """Replies for the next embeddings calls (an error, say), before `embeddings_reply` or the vectors."""
        with self._lock:
            self._embeddings_queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self._embeddings_queue.clear()
            self.requests.clear()
            self.respond = _default_responder
            self.echo = False
            self.embeddings_reply = None
            self.latency = 0.0
            self.faults = 0.0
            self.served.clear()
            self.injected.clear()
            self.max_inflight = 0
            self._inflight = 0
            self._generation += 1
        self.batches.reset()

    def count(self, kind: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if kind is None or r["kind"] == kind)

    # -- serving --------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        kind = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings", "/v1/messages": "messages"}.get(
            request.path)
        if kind is None:
            return web.json_response({"error": {"message": f"no route {request.path}"}}, status=404)
        body = await request.json()
        with self._lock:
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.served[kind] = self.served.get(kind, 0) + 1
            if self.record:
                self.requests.append({"kind": kind, "body": body, "headers": headers, "time": time.monotonic()})
            queue = self._embeddings_queue if kind == "embeddings" else self._queue
            scripted = queue.popleft() if queue else None
            fault = None if (scripted or "x-fakellm-no-faults" in headers) else self._fault()
            generation = self._generation
            self._inflight += 1
            self.max_inflight = max(self.max_inflight, self._inflight)
        try:
            if fault == "reset":
                await asyncio.sleep(self.latency)
                assert request.transport is not None
                request.transport.abort()  # the connection drops without an answer
                return web.Response()
            reply = scripted or fault_reply(fault, self.slow) or (
                echo_reply(request, headers, body) if self.echo else self._respond(kind, body))
            if self.latency or reply.delay:
                await asyncio.sleep(self.latency + reply.delay)
            if isinstance(reply.body, str):  # a page that is not JSON, as a misconfigured proxy serves
                return web.Response(text=reply.body, status=reply.status, content_type="text/html")
            if reply.status != 200:
                return web.json_response(reply.body or {}, status=reply.status, headers=reply.headers)
            return web.json_response(self._payload(kind, body, reply), headers=reply.headers)
        finally:
            with self._lock:
                if generation == self._generation:
                    self._inflight -= 1

    async def _stats(self, request: web.Request) -> web.Response:
        """GET /fakellm/stats: requests served by kind and faults injected by kind."""
        with self._lock:
            return web.json_response({"served": dict(self.served), "injected": dict(self.injected)})

    def _fault(self) -> str | None:
        """Which fault this request gets, if any (call with the lock held)."""
        if not self.faults or self._random.random() >= self.faults:
            return None
        kind = FAULTS[self._fault_turn % len(FAULTS)]
        self._fault_turn += 1
        self.injected[kind] = self.injected.get(kind, 0) + 1
        return kind

    def _respond(self, kind: str, body: dict[str, Any]) -> Reply:
        if kind == "embeddings":
            return self.embeddings_reply or Reply(text="")
        result = self.respond(kind, body)
        return text(result) if isinstance(result, str) else result

    def _payload(self, kind: str, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        model = body.get("model", "fake")
        if kind == "embeddings":
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return {"object": "list", "model": model,
                    "data": [{"object": "embedding", "index": i, "embedding": embedding_for(t)}
                             for i, t in enumerate(inputs)],
                    "usage": {"prompt_tokens": sum(len(t.split()) for t in inputs),
                              "total_tokens": sum(len(t.split()) for t in inputs)}}
        if kind == "messages":
            return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": reply.text or ""}], "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens}}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply.text or ""}}],
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                          "total_tokens": reply.prompt_tokens + reply.completion_tokens}}

    async def _start(self, port: int = 0) -> None:
        app = web.Application()
        app.router.add_get("/fakellm/stats", self._stats)
        self.batches.install(app)
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", port, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def start(self) -> FakeLLM:
        """Serve from a background thread; returns once the port is bound."""
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="fakellm", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def stop(self) -> None:
        if self._loop is None or self._runner is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join()


FAULTS = ("429", "500", "reset", "slow")


def echo_reply(request: web.Request, headers: dict[str, str], body: dict[str, Any]) -> Reply:
    """The request echoed back: its URL as sent and decoded, and every header (a key, a Basic header)."""
    sent = f"{request.method} {request.raw_path} ({unquote_plus(request.raw_path)}) with {json.dumps(headers)}"
    if "ECHO-ERROR" in json.dumps(body):
        return Reply(status=404, body={"error": {"message": f"no model for {sent}"}})
    return answer(0.5, f"you sent {sent}")


def fault_reply(fault: str | None, slow: float) -> Reply | None:
    if fault == "429":
        return error(429, retry_after=0.2)
    if fault == "500":
        return error(500)
    if fault == "slow":
        return answer(0.5, "slow", delay=slow)
    return None


def score_from_prompt(kind: str, body: dict[str, Any]) -> Reply:
    """Scores by a `SCORE=<x>` marker in the prompt; a marker that is not a number gets prose back."""
    messages = body.get("messages") or []
    content = " ".join(str(m.get("content", "")) for m in messages)
    match = re.search(r"SCORE=(\S+)", content)
    if not match:
        return answer(0.5, "no marker")
    try:
        return answer(float(match.group(1)), "scored from marker")
    except ValueError:
        return text(f"I cannot score this ({match.group(1)}).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    parser.add_argument("--faults", type=float, default=0.0, help="share of requests answered with a fault")
    parser.add_argument("--slow", type=float, default=5.0, help="seconds a slow fault takes to answer")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault draws")
    parser.add_argument("--no-record", action="store_true", help="count requests without keeping them")
    args = parser.parse_args()
    server = FakeLLM(latency=args.latency, faults=args.faults, slow=args.slow, seed=args.seed,
                     record=not args.no_record)

    async def run() -> None:
        await server._start(args.port)
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
