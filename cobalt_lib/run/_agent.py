"""Calling the user's agent: sync or async, bounded, timed out, failures recorded."""

from __future__ import annotations

import asyncio
import inspect
import math
import re
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .._numbers import seconds
from .._threads import DaemonThreads, UserExit
from .._timeouts import BlockedLoopTimeout, FinishedWhileCancelled, timeout_message, within
from ..llm._pricing import cost_usd
from ..llm._usage import UsageMeter, current_meter, tracking
from ..results._identity import content_hash
from ..results._report import ItemResult
from ..results._spans import SpanRecord
from ..traces._collect import ItemTrace, current_trace
from ..traces._genai import usage_metadata

Runner = Callable[..., Any]

NO_VARIANT: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class AgentContext:
    """What the agent receives: the dataset item, its index, which repetition this is and, in an
    experiment with variants, the variant's parameters (`ctx.variant["model"]`; empty without)."""

    item: dict[str, Any]
    index: int
    run_index: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    variant: Mapping[str, Any] = field(default_factory=lambda: NO_VARIANT)

    @property
    def input(self) -> Any:
        return self.item.get("input")


@dataclass(frozen=True)
class Recorded:
    """An answer recorded elsewhere, returned by an agent that replays it (a monitor's window replays a
    production trace): `output` is the agent's return value (an output or `{"output": ..., "metadata": ...}`),
    `spans` the spans that call emitted, kept as the item's spans as a traced call's are (its trace
    evaluators read them; the run stores them with the item)."""

    output: Any
    spans: Sequence[SpanRecord] = ()


def input_hash(item: Mapping[str, Any]) -> str:
    return content_hash(item)


async def call_agent(runner: Runner, ctx: AgentContext, *, timeout: float, limit: asyncio.Semaphore,
                     threads: DaemonThreads | None, prices: Mapping[str, tuple[float, float]],
                     timer: Callable[[], float] = time.perf_counter, trace_limit: int | None = None) -> ItemResult:
    """Run the agent on one item under `limit`; exceptions and timeouts become the item's status.
    With `trace_limit`, the spans the call emits (at most that many) are kept on the item (`traces`).

    Its latency is read off `timer` (seconds): a sync agent's around the call in its worker thread, so
    what the event loop stalls on meanwhile is not in it; an async agent's from its slot to its answer."""
    result = ItemResult(index=ctx.index, run_index=ctx.run_index, input=ctx.item.get("input", ctx.item),
                        item=ctx.item, input_hash=input_hash(ctx.item))
    release_later = False
    clock = [timer()]  # when the call got its slot: its latency and timeout count from there
    meter = UsageMeter() if tracking[0] else None  # what track_usage()d SDK clients spend in this call
    trace = ItemTrace(trace_limit) if trace_limit is not None else None  # the spans this call emits
    holding = threads is not None
    if holding:
        await limit.acquire()
        clock[0] = timer()
    try:
        measured: list[float] = []  # the worker thread's own timing of the call: no loop stall in it
        if threads is not None:
            future = threads.submit(lambda: _timed(runner, ctx, measured, meter, timer, trace))
            try:
                value = await asyncio.wait_for(asyncio.shield(future), timeout)
            except TimeoutError:
                release_later = True
                _hold_slot(future, limit, threads, grace=timeout)
                raise
        else:
            try:
                value = await within(lambda: _awaitable(runner, ctx, meter, trace), timeout, limit=limit,
                                     clock=clock, timer=timer)
            except FinishedWhileCancelled as stopped:  # answered just as the run was stopped: keep it
                result.latency_ms = (timer() - clock[0]) * 1000
                _fill_output(result, stopped.value, prices, meter, trace)
                stopped.item = result
                raise
            elapsed = timer() - clock[0]
            if elapsed > timeout + max(0.05, timeout / 20):  # the timer could not fire: the loop was blocked
                raise BlockedLoopTimeout(elapsed)
        result.latency_ms = (measured[0] if measured else timer() - clock[0]) * 1000
        _fill_output(result, value, prices, meter, trace)
    except BlockedLoopTimeout as exc:
        result.latency_ms = (timer() - clock[0]) * 1000
        result.status = "timeout"
        result.error = (f"the agent did not answer within {seconds(timeout)} (it took {seconds(exc.elapsed)}): "
                        "the event loop was blocked, so no timeout could fire; an async agent must not make blocking "
                        "calls (time.sleep, requests): make it a plain def, which cobalt runs in a thread, or use an "
                        "async client")
    except TimeoutError as exc:
        result.latency_ms = (timer() - clock[0]) * 1000
        result.status = "timeout"
        result.error = timeout_message("agent", timeout, exc)
    except Exception as exc:
        result.latency_ms = (timer() - clock[0]) * 1000
        result.status = "error"
        result.error = escape_surrogates(f"SystemExit: {exc}" if isinstance(exc, UserExit)
                                         else f"{type(exc).__name__}: {exc}")
        result.traceback = escape_surrogates(traceback.format_exc(limit=20))
    finally:
        if holding and not release_later:
            limit.release()
        if trace is not None and trace.spans:  # a failed or timed-out call's spans too: they say where it went wrong
            result.spans = trace.records()
    return result


def _hold_slot(future: asyncio.Future[Any], limit: asyncio.Semaphore, threads: DaemonThreads,
               grace: float) -> None:
    """A thread cannot be stopped: a timed-out call keeps its slot until it returns, so the bound
    holds for calls really in flight; but one stuck for `grace` more seconds is abandoned (up to
    MAX_ABANDONED_CALLS), so a few calls that hang forever cannot stall the rest of the run."""
    released = False

    def release(*_: object) -> None:
        nonlocal released
        if not released:
            released = True
            limit.release()

    def give_up() -> None:
        if not released and not future.done() and threads.abandon():
            release()

    future.add_done_callback(release)
    asyncio.get_running_loop().call_later(grace, give_up)


def _timed(runner: Runner, ctx: AgentContext, measured: list[float], meter: UsageMeter | None,
           timer: Callable[[], float], trace: ItemTrace | None = None) -> Any:
    """`runner(ctx)` in a worker thread, its duration on `timer` appended to `measured`."""
    token = current_meter.set(meter)
    traced = current_trace.set(trace)
    try:
        started = timer()
        value = runner(ctx)
        measured.append(timer() - started)
        return value
    finally:
        current_trace.reset(traced)
        current_meter.reset(token)


async def _awaitable(runner: Runner, ctx: AgentContext, meter: UsageMeter | None,
                     trace: ItemTrace | None = None) -> Any:
    if meter is not None:
        current_meter.set(meter)  # this task's own context: gone when the call ends
    if trace is not None:
        current_trace.set(trace)
    try:
        value = runner(ctx)
        if inspect.isawaitable(value):
            value = await value
    except SystemExit as exc:  # out of a task, it would stop the event loop and with it the run
        raise UserExit(exc.code) from None
    return value


def _fill_output(result: ItemResult, value: Any, prices: Mapping[str, tuple[float, float]],
                 meter: UsageMeter | None = None, trace: ItemTrace | None = None) -> None:
    if isinstance(value, Recorded):
        result.spans = list(value.spans)
        value = value.output
    problem = _return_problem(value)
    if problem is not None:  # a forgotten return or a mis-keyed dict: an error the gates see, not an output
        result.status = "error"
        result.error = problem
        return
    if isinstance(value, Mapping):
        metadata = value.get("metadata") or {}
        result.output = json_safe(value["output"])
        result.metadata = json_safe(dict(metadata) if isinstance(metadata, Mapping) else {"value": metadata})
    else:
        result.output = json_safe(value)
    if meter is not None and meter.calls:  # what the agent says itself wins over what was tracked
        result.metadata = {**meter.metadata(prices), **result.metadata}
    if trace is not None and (trace.spans or trace.dropped):
        _add_trace_usage(result, trace, prices)
    result.tokens, result.cost_usd = agent_usage(result.metadata, prices)


#: The metadata keys that report an agent call's usage: when any is there, the trace's is not used.
_USAGE_KEYS = ("tokens", "input_tokens", "output_tokens", "usage", "cost_usd", "cost")


def _add_trace_usage(result: ItemResult, trace: ItemTrace, prices: Mapping[str, tuple[float, float]]) -> None:
    """The model spans' tokens and cost as the item's usage, when neither the agent nor a tracked client
    reported any; how many spans were not kept, when some were not."""
    if trace.dropped:
        result.metadata = {**result.metadata, "spans_dropped": trace.dropped}
    if not any(key in result.metadata for key in _USAGE_KEYS):
        result.metadata = {**usage_metadata(trace.records(), prices), **result.metadata}


def _return_problem(value: Any) -> str | None:
    """Why the agent's return value is not an output, or None when it is one.

    None is rejected (almost always a missing `return`), and so is a dict without "output": it could
    be the output or a misspelt envelope, and guessing silently scores the wrong thing.
    """
    if value is None:
        return ('the agent returned None; return the output (a string or any JSON value) or '
                '{"output": ..., "metadata": {...}}')
    if isinstance(value, Mapping) and "output" not in value:
        names = [str(key) for key in value]
        keys = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "") if names else "none"
        return (f'the agent returned a dict without "output" (keys: {keys}); return '
                '{"output": ..., "metadata": {...}}, or wrap the dict: {"output": {...}}')
    return None


def json_safe(value: Any) -> Any:
    """`value` as JSON holds it, so the report, the results file and the store agree.

    Objects JSON cannot hold become their `str()`, bytes are decoded as UTF-8 (bad bytes replaced),
    NaN and infinities become None, and a lone surrogate (half of a pair, which UTF-8 cannot hold) is
    kept escaped, as the six characters `\\ud800`.
    """
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, bool | int | None):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, Mapping):
        return {escape_surrogates(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    if hasattr(value, "model_dump"):  # a pydantic model the agent returned
        return json_safe(value.model_dump(mode="json"))
    return escape_surrogates(str(value))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """`text` with each surrogate code point written as its escape (`\\udc80`): valid UTF-8 everywhere."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
