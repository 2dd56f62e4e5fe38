"""Calling the user's agent: sync or async, bounded, timed out, failures recorded."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import queue
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._pricing import cost_usd
from ._report import ItemResult

Runner = Callable[..., Any]


@dataclass(frozen=True)
class AgentContext:
    """What the agent receives: the dataset item, its index and which repetition this is."""

    item: dict[str, Any]
    index: int
    run_index: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def input(self) -> Any:
        return self.item.get("input")


class DaemonThreads:
    """Worker threads for sync agents. Daemon threads, so an agent that hangs forever cannot
    keep the process alive after the run has recorded it as a timeout."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put((fn, loop, future))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            elif len(self._threads) < self.max_workers:
                thread = threading.Thread(target=self._work, name="cobalt-agent", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, loop, future = job
            try:
                result, error = fn(), None
            except BaseException as exc:
                result, error = None, exc
            try:
                loop.call_soon_threadsafe(_settle, future, result, error)
            except RuntimeError:  # the run ended (loop closed) while this call hung past its timeout
                return
            with self._lock:
                self._idle += 1


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def input_hash(item: Mapping[str, Any]) -> str:
    canonical = json.dumps(item, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


async def call_agent(runner: Runner, ctx: AgentContext, *, timeout: float, limit: asyncio.Semaphore,
                     threads: DaemonThreads | None, prices: Mapping[str, tuple[float, float]]) -> ItemResult:
    """Run the agent on one item under `limit`; exceptions and timeouts become the item's status."""
    result = ItemResult(index=ctx.index, run_index=ctx.run_index, input=ctx.item.get("input", ctx.item),
                        item=ctx.item, input_hash=input_hash(ctx.item))
    await limit.acquire()
    release_later = False
    started = time.perf_counter()
    try:
        if threads is not None:
            future = threads.submit(lambda: runner(ctx))
            try:
                value = await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                # The thread cannot be stopped: its slot stays taken until it returns, so the
                # concurrency bound holds for the calls really in flight.
                release_later = True
                future.add_done_callback(lambda _f: limit.release())
                raise
        else:
            value = await asyncio.wait_for(_awaitable(runner, ctx), timeout)
        result.latency_ms = (time.perf_counter() - started) * 1000
        _fill_output(result, value, prices)
    except TimeoutError:
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.status = "timeout"
        result.error = f"the agent did not answer within {timeout:g} s"
    except Exception as exc:
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.status = "error"
        result.error = f"{type(exc).__name__}: {exc}"
        result.traceback = traceback.format_exc(limit=20)
    finally:
        if not release_later:
            limit.release()
    return result


async def _awaitable(runner: Runner, ctx: AgentContext) -> Any:
    value = runner(ctx)
    if inspect.isawaitable(value):
        value = await value
    return value


def _fill_output(result: ItemResult, value: Any, prices: Mapping[str, tuple[float, float]]) -> None:
    if isinstance(value, Mapping) and "output" in value:
        metadata = value.get("metadata") or {}
        result.output = value["output"]
        result.metadata = dict(metadata) if isinstance(metadata, Mapping) else {"value": metadata}
    else:
        result.output = value
    result.tokens, result.cost_usd = agent_usage(result.metadata, prices)


def agent_usage(
    metadata: Mapping[str, Any], prices: Mapping[str, tuple[float, float]]
) -> tuple[int | None, float | None]:
    """Tokens and cost reported by the agent's metadata; cost estimated from the model if absent."""
    usage = metadata.get("usage") if isinstance(metadata.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    tokens_in = _int(metadata.get("input_tokens", usage.get("input_tokens", usage.get("prompt_tokens"))))
    tokens_out = _int(metadata.get("output_tokens", usage.get("output_tokens", usage.get("completion_tokens"))))
    total = _int(metadata.get("tokens", usage.get("total_tokens")))
    if total is None and (tokens_in is not None or tokens_out is not None):
        total = (tokens_in or 0) + (tokens_out or 0)
    cost = metadata.get("cost_usd", metadata.get("cost"))
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        return total, float(cost)
    model = metadata.get("model")
    if isinstance(model, str) and tokens_in is not None and tokens_out is not None:
        return total, cost_usd(model, tokens_in, tokens_out, prices)
    return total, None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
