"""What collecting traces costs a run (issue 26).

1. An agent that emits no span: `call_agent` on a trivial agent, sync (worker threads) and async, with span
   collection on (`trace_limit` set, as every run with `[traces] collect = true`) and off, in alternating
   batches; prints the median per-call time of each and the difference, then the added work alone (timeit),
   the figure to trust on a busy machine.
2. An instrumented agent: the cost per span of collecting it, spans emitted inside an agent call (kept on the
   item, and read into records when the call is over) against the same spans outside one (no item: the
   processor looks and lets go).
3. The one-off cost per process: importing the OpenTelemetry SDK and installing the processor.

    .venv/bin/python benchmarks/traces_overhead.py            # 2,000 calls a batch, 25 batches each way
    .venv/bin/python benchmarks/traces_overhead.py --calls 5000 --rounds 41
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import timeit
from typing import Any

from cobalt_lib._threads import DaemonThreads
from cobalt_lib.run._agent import AgentContext, call_agent
from cobalt_lib.traces._collect import ItemTrace, current_trace, install, record

ITEM = {"input": "q"}


def agent(ctx: Any) -> str:
    return "a"


async def async_agent(ctx: Any) -> str:
    return "a"


async def calls(n: int, runner: Any, trace_limit: int | None, threads: DaemonThreads | None) -> float:
    """Seconds per call of `n` sequential agent calls."""
    limit = asyncio.Semaphore(1)
    started = time.perf_counter()
    for i in range(n):
        await call_agent(runner, AgentContext(item=ITEM, index=i), timeout=30, limit=limit, threads=threads,
                         prices={}, trace_limit=trace_limit)
    return (time.perf_counter() - started) / n


def per_call(n: int, rounds: int) -> None:
    """Batches of `n` calls, collection off and on in turn (`rounds` pairs), so both see the same load."""
    for name, runner in (("async", async_agent), ("sync", agent)):
        threads = DaemonThreads(1) if name == "sync" else None
        on, off = [], []
        for _ in range(rounds):
            off.append(asyncio.run(calls(n, runner, None, threads)))
            on.append(asyncio.run(calls(n, runner, 1000, threads)))
        if threads:
            threads.shutdown()
        a, b = statistics.median(off), statistics.median(on)
        print(f"{name} agent, no spans: collection off {a * 1e6:.2f} us/call, on {b * 1e6:.2f} us/call, "
              f"difference {(b - a) * 1e6:+.2f} us/call ({(b - a) / a * 100:+.1f}%)")
    added = timeit.timeit("current_trace.reset(current_trace.set(ItemTrace(1000)))", number=200_000,
                          globals={"current_trace": current_trace, "ItemTrace": ItemTrace}) / 200_000
    print(f"the work collection adds to an agent call that emits no span (a trace made, a context variable set "
          f"and reset): {added * 1e9:.0f} ns")


def per_span(n: int, rounds: int) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("bench")

    def spans(inside: bool) -> float:
        """Per span: emitted (and, inside an agent call, read into its record when the call is over)."""
        kept = ItemTrace(limit=n * 2)
        token = current_trace.set(kept) if inside else None
        started = time.perf_counter()
        for _ in range(n):
            with tracer.start_as_current_span("chat gpt-4o-mini") as span:
                span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                                     "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10})
        kept.records()
        elapsed = (time.perf_counter() - started) / n
        if token is not None:
            current_trace.reset(token)
        return elapsed

    kept = ItemTrace()
    token = current_trace.set(kept)
    with tracer.start_as_current_span("chat gpt-4o-mini") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                             "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 10})
    current_trace.reset(token)
    finished = kept.spans[0]
    reading = timeit.timeit(lambda: record(finished), number=20_000) / 20_000
    print(f"reading a finished span into its record (after the call returns): {reading * 1e6:.1f} us")
    outside = statistics.median(spans(False) for _ in range(rounds))
    inside = statistics.median(spans(True) for _ in range(rounds))
    print(f"instrumented agent: a span costs {outside * 1e6:.2f} us outside an agent call, {inside * 1e6:.2f} us "
          f"inside one (kept on the item): cobalt's processor adds {(inside - outside) * 1e6:+.2f} us per span")


def one_off() -> None:
    code = ("import time; from cobalt_lib.traces._collect import install; t = time.perf_counter(); install(); "
            "print((time.perf_counter() - t) * 1000)")
    times = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
             for _ in range(5)]
    print("once per process: importing the OpenTelemetry SDK and installing the processor "
          f"{statistics.median(times):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=25)
    args = parser.parse_args()
    install()
    per_call(args.calls, args.rounds)
    per_span(args.calls, args.rounds)
    one_off()


if __name__ == "__main__":
    main()
