"""Batch judging: a run's judge calls sent through the provider's batch API, at its 50% discount.

Calls arriving together are gathered per endpoint; once none has arrived for `window` seconds (or a
batch is full) they go as one batch, which is polled with a growing wait until it ends or the deadline
passes. Each caller gets its own answer back as a `Completion` marked `batched`, so the judge parses,
caches and prices it as it does an online answer: the cache keys are the same, and a later online
run reuses the answers.

Every batch is written down (`BatchLedger`) as it is created: a run stopped while it waits (Ctrl-C,
a crash, the deadline) is resumed with `cobalt run --resume`, which waits on the same batches
instead of paying for new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._errors import BatchPending, CobaltError
from .._numbers import seconds, threshold
from .._secrets import safe_url
from . import _batch_wire as wire
from ._providers import Endpoint
from ._wire import Clients, Completion, ProviderError, chat_request

#: What a batch answer costs against the same call online (both providers bill batches at half price).
BATCH_PRICE_FACTOR = 0.5


@dataclass(frozen=True)
class StoredBatch:
    """A batch as the ledger keeps it: which endpoint it went to and which requests it holds."""

    batch_id: str
    endpoint: str  # `provider/model @ base_url`, as `endpoint_key` writes it
    custom_ids: tuple[str, ...]


class BatchLedger(Protocol):
    """Where a run writes down its batches (the store's `judge_batches` table)."""

    def opened(self, batch: StoredBatch) -> None: ...
    def ended(self, batch_id: str, status: str, counts: dict[str, int]) -> None: ...
    def open_batches(self) -> list[StoredBatch]: ...


@dataclass(frozen=True)
class PollTiming:
    """The wait between two looks at a batch (`first`, growing by `factor` up to `most`) and the clock."""

    first: float = 5.0
    factor: float = 1.5
    most: float = 60.0
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


def endpoint_key(endpoint: Endpoint) -> str:
    """The endpoint as the ledger names it: provider, model and server (no credentials)."""
    return f"{endpoint.label} @ {safe_url(endpoint.base_url or '')}"


def request_id(endpoint: Endpoint, path: str, body: dict[str, Any]) -> str:
    """The request's `custom_id`: a hash of where it goes and what it asks (64 characters of [0-9a-f],
    within both providers' rules), equal for equal requests, so a resumed run finds its answers."""
    payload = json.dumps([endpoint_key(endpoint), path, body], sort_keys=True, ensure_ascii=False,
                         separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class _Queue:
    """The requests for one endpoint not sent yet, and the timer that sends them."""

    def __init__(self) -> None:
        self.requests: dict[str, tuple[str, dict[str, Any]]] = {}
        self.size = 0
        self.timer: asyncio.TimerHandle | None = None


@dataclass
class BatchStats:
    """What the run's batches did: created, adopted from an earlier attempt, requests sent."""

    created: list[str] = field(default_factory=list)
    adopted: list[str] = field(default_factory=list)
    requests: int = 0


class BatchJudging:
    """One run's judge calls through batches. `complete` is the judge's `Clients.complete` for a batch."""

    def __init__(self, clients: Clients, *, deadline: float, window: float = 2.0,
                 timing: PollTiming | None = None, ledger: BatchLedger | None = None, run_id: str = "RUN_ID",
                 say: Callable[[str], None] | None = None) -> None:
        self.clients = clients
        self.run_id = run_id
        #: Where a batch's news goes (sent, ended): the run's stderr, since items are quiet while it waits.
        self.say = say or (lambda message: None)
        self.deadline = deadline
        self.window = window
        self.timing = timing or PollTiming()
        self.ledger = ledger
        self.stats = BatchStats()
        self._queues: dict[Endpoint, _Queue] = {}
        self._waiting: dict[str, asyncio.Future[Completion]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._adopted: dict[str, list[StoredBatch]] | None = None
        self._adopted_started: set[str] = set()

    async def complete(self, endpoint: Endpoint, system: str, messages: list[dict[str, str]]) -> Completion:
        """The answer to one chat call, through a batch (one already waited on when it holds this request)."""
        path, body = chat_request(endpoint, system, messages)
        custom_id = request_id(endpoint, path, body)
        future = self._waiting.get(custom_id)
        if future is None or (future.done() and future.exception() is not None):
            future = self._waiting[custom_id] = asyncio.get_running_loop().create_future()
            if not self._adopt(endpoint, custom_id):
                self._enqueue(endpoint, custom_id, path, body)
        # shield: one caller cancelled (its item's timeout) leaves the answer to the others waiting on it
        return await asyncio.shield(future)

    async def aclose(self) -> None:
        """Stop waiting: the batches go on at the provider, and a resumed run picks them up."""
        for queue in self._queues.values():
            if queue.timer is not None:
                queue.timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- gathering ------------------------------------------------------------------------------

    def _enqueue(self, endpoint: Endpoint, custom_id: str, path: str, body: dict[str, Any]) -> None:
        queue = self._queues.setdefault(endpoint, _Queue())
        size = len(json.dumps(body, ensure_ascii=False)) + 200
        if queue.requests and (len(queue.requests) >= wire.MAX_REQUESTS[endpoint.provider]
                               or queue.size + size > wire.MAX_BATCH_BYTES):
            self._send(endpoint)
            queue = self._queues[endpoint]
        queue.requests[custom_id] = (path, body)
        queue.size += size
        if queue.timer is not None:
            queue.timer.cancel()
        queue.timer = asyncio.get_running_loop().call_later(self.window, self._send, endpoint)

    def _send(self, endpoint: Endpoint) -> None:
        queue = self._queues.pop(endpoint, None)
        if queue is None or not queue.requests:
            return
        if queue.timer is not None:
            queue.timer.cancel()
        requests = [(cid, path, body) for cid, (path, body) in queue.requests.items()]
        self._spawn(self._submit_and_wait(endpoint, requests))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- a batch's life -------------------------------------------------------------------------

    async def _submit_and_wait(self, endpoint: Endpoint, requests: Sequence[tuple[str, str, dict[str, Any]]]) -> None:
        ids = [cid for cid, _, _ in requests]
        try:
            batch_id = await wire.submit(self.clients, endpoint, requests)
        except Exception as exc:
            self._fail(ids, exc if isinstance(exc, ProviderError) else ProviderError(
                f"{endpoint.label} batch could not be created: {type(exc).__name__}: {exc}"))
            return
        self.stats.created.append(batch_id)
        self.stats.requests += len(ids)
        if self.ledger is not None:
            self.ledger.opened(StoredBatch(batch_id, endpoint_key(endpoint), tuple(ids)))
        self.say(f"judge batch {batch_id}: {len(ids)} requests sent to {endpoint.label}; waiting for its answers "
                 f"(up to {_hours(self.deadline)})")
        await self._wait(endpoint, batch_id, ids)

    async def _wait(self, endpoint: Endpoint, batch_id: str, ids: Sequence[str]) -> None:
        """Poll the batch until it ends (then hand out its answers) or the deadline passes."""
        timing = self.timing
        until = timing.monotonic() + self.deadline
        pause = timing.first
        try:
            while True:
                state = await wire.retrieve(self.clients, endpoint, batch_id)
                if state.ended:
                    break
                left = until - timing.monotonic()
                if left <= 0:
                    self._fail(ids, BatchPending(
                        f"The judge batch {batch_id} ({endpoint.label}, {len(ids)} requests) had not ended after "
                        f"{_hours(self.deadline)} ([judge] batch_deadline); the run stopped with its agent outputs "
                        f"kept and the batch id stored: `cobalt run --resume {self.run_id}` waits on the same batch."))
                    return
                await timing.sleep(min(pause, left))
                pause = min(pause * timing.factor, timing.most)
            answers = await wire.results(self.clients, endpoint, state)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._fail(ids, exc if isinstance(exc, ProviderError) else ProviderError(
                f"{endpoint.label} batch {batch_id} could not be read: {type(exc).__name__}: {exc}"))
            return
        if self.ledger is not None:
            with contextlib.suppress(CobaltError):  # the answers matter more than the note that it ended
                self.ledger.ended(batch_id, state.status, state.counts)
        why = f"; {state.error}" if state.error else ""
        answered = sum(1 for cid in ids if isinstance(answers.get(cid), Completion))
        self.say(f"judge batch {batch_id}: {state.status}, {answered} of {len(ids)} requests answered{why}")
        for cid in ids:
            outcome = answers.get(cid) or ProviderError(
                f"{endpoint.label} batch {batch_id} ended {state.status} without an answer to this request{why}")
            future = self._waiting.get(cid)
            if future is not None and not future.done():
                if isinstance(outcome, Completion):
                    future.set_result(outcome)
                else:
                    future.set_exception(outcome)

    def _fail(self, ids: Sequence[str], error: Exception) -> None:
        for cid in ids:
            future = self._waiting.get(cid)
            if future is not None and not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: a request no caller waits on any more is not an unhandled error

    # -- batches of an earlier attempt ----------------------------------------------------------

    def _adopt(self, endpoint: Endpoint, custom_id: str) -> bool:
        """Whether `custom_id` is in a batch an earlier attempt of this run created (then it is waited on)."""
        if self._adopted is None:
            self._adopted = {}
            for batch in (self.ledger.open_batches() if self.ledger is not None else []):
                for cid in batch.custom_ids:
                    self._adopted.setdefault(cid, []).append(batch)
        key = endpoint_key(endpoint)
        for batch in self._adopted.get(custom_id, []):
            if batch.endpoint != key:
                continue
            if batch.batch_id not in self._adopted_started:
                self._adopted_started.add(batch.batch_id)
                self.stats.adopted.append(batch.batch_id)
                loop = asyncio.get_running_loop()
                for cid in batch.custom_ids:
                    if cid not in self._waiting or self._waiting[cid].done():
                        self._waiting[cid] = loop.create_future()
                self.say(f"judge batch {batch.batch_id}: sent by an earlier attempt of the run; waiting for its "
                         "answers")
                self._spawn(self._wait(endpoint, batch.batch_id, batch.custom_ids))
            return True
        return False


def _hours(value: float) -> str:
    return f"{threshold(value / 3600)}h" if value >= 3600 else seconds(value)
