"""How much cobalt adds on top of the LLM calls it makes: wall time, CPU and memory.

The workload: N items, each one agent chat call plus one LLM-judge call, against the loopback
server `tests/fakellm.py` (a separate process, fixed latency per request), at concurrency C.
Every measured run happens in a fresh subprocess, so CPU time and peak RSS belong to that run
alone; the SDKs are imported before the clock starts.

    .venv/bin/python benchmarks/overhead.py                      # N=1000, C=20 and 100
    .venv/bin/python benchmarks/overhead.py --n 200 --concurrency 20 --skip-reference
    .venv/bin/python benchmarks/overhead.py --profile            # cProfile of each cobalt run, to stderr

Runs: cobalt with `concurrency=C` (the judge limit defaults to C as well, so up to 2C calls are in
flight), cobalt capped at C calls in flight (`concurrency=C/2, judge_concurrency=C/2`, the same
bound the plain clients and the peers run under), a fully cached re-run, plain httpx and plain
aiohttp references (an asyncio.Semaphore(C) over the same two sequential calls per item), and
cobalt at N/4 and N for memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Result = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
FAKELLM = ROOT / "tests" / "fakellm.py"
MODEL = "gpt-4o-mini"
PROMPT = "Rate {{input}} -> {{output}}"
JUDGE_SYSTEM = 'You are an impartial evaluator. Reply with only {"score": <0..1>, "reason": "<why>"}.'
MEMORY_C = 100

TARGET_RATIO = 1.10  # wall / ideal
TARGET_CPU_FACTOR = 2.0  # cobalt CPU per call / plain httpx CPU per call
TARGET_MEMORY_GROWTH = 1.10  # peak RSS at N / peak RSS at N/4
TARGET_CACHED_S = 2.0  # cached re-run of 1000 items


# ---------------------------------------------------------------------------------------------
# Child side: one measured run per process; prints one JSON line on stdout.
# ---------------------------------------------------------------------------------------------


def current_rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def measure(fn: Callable[[], T], *, profile: bool = False) -> tuple[T, Result]:
    """Call `fn` and return its value with wall time, process CPU time (all threads) and RSS."""
    rss_start = current_rss_mb()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    value = profiled(fn) if profile else fn()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    return value, {"wall_s": wall, "cpu_s": cpu, "rss_start_mb": rss_start, "peak_rss_mb": peak}


def profiled(fn: Callable[[], T]) -> T:
    """Run `fn` under cProfile (main thread only) and print the top 25 functions to stderr."""
    import cProfile
    import pstats

    with cProfile.Profile() as prof:
        value = fn()
    for order in ("cumulative", "tottime"):
        print(f"\n=== cProfile, top 25 by {order} ({' '.join(sys.argv[1:])}) ===", file=sys.stderr)
        pstats.Stats(prof, stream=sys.stderr).sort_stats(order).print_stats(25)
    return value


def chat_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1/chat/completions"


def agent_body(question: str) -> Result:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}]}


def judge_body(question: str, answer: str) -> Result:
    prompt = f"Rate {question} -> {answer}"
    return {"model": MODEL, "max_tokens": 512, "temperature": 0.0,
            "messages": [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]}


def make_agent(port: int) -> tuple[Callable[[Any], Awaitable[str]], Callable[[], Awaitable[None]]]:
    """The user's agent (one chat call over a shared aiohttp session per event loop) and its closer."""
    import aiohttp

    url = chat_url(port)
    sessions: dict[asyncio.AbstractEventLoop, aiohttp.ClientSession] = {}

    def session() -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if loop not in sessions:
            sessions[loop] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        return sessions[loop]

    async def agent(ctx: Any) -> str:
        async with session().post(url, json=agent_body(str(ctx.input))) as response:
            data = await response.json()
        return str(data["choices"][0]["message"]["content"])

    async def close() -> None:
        own = sessions.pop(asyncio.get_running_loop(), None)
        if own is not None:
            await own.close()

    return agent, close


async def fixed_agent(ctx: Any) -> str:
    """A deterministic agent that calls nothing: its outputs repeat, so the judge cache hits."""
    return f"answer to {ctx.input}"


def preload_cobalt() -> None:
    """Import what a cobalt run loads lazily, so import time stays out of the measured wall time."""
    import duckdb
    import openai.resources.chat.completions

    import cobalt_lib.run._execute

    del duckdb, openai, cobalt_lib  # imported for their side effect: loaded modules


def cobalt_experiment(name: str, n: int, agent: Callable[[Any], Awaitable[str]], concurrency: int,
                      judge_concurrency: int | None) -> Any:
    from cobalt_lib import Dataset, Evaluator, experiment

    dataset = Dataset([{"input": f"question {i}"} for i in range(n)])
    return experiment(name, dataset, agent, evaluators=[Evaluator(name="quality", prompt=PROMPT)],
                      concurrency=concurrency, judge_concurrency=judge_concurrency)


def cobalt_config(port: int, output_dir: str, *, cache: bool) -> Any:
    from cobalt_lib import define_config

    judge = {"provider": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": MODEL}
    return define_config(judge=judge, output_dir=output_dir, cache={"enabled": cache})


def report_figures(report: Any) -> Result:
    summary = report.summary
    return {"ok": summary.ok, "errors": summary.errors + summary.timeouts, "judge_calls": summary.judge_calls,
            "cached_scores": summary.cached_scores,
            "eval_errors": sum(s.errors for s in summary.scores.values())}


def child_cobalt(args: argparse.Namespace) -> Result:
    preload_cobalt()
    agent, close = make_agent(args.port)
    exp = cobalt_experiment("bench-overhead", args.n, agent, int(args.concurrency), args.judge_concurrency)

    async def run_then_close(config: Any) -> Any:  # exactly Experiment.run(), plus closing the agent's session
        try:
            return await exp.arun(config=config)
        finally:
            await close()

    with tempfile.TemporaryDirectory(prefix="cobalt-bench-") as out:
        config = cobalt_config(args.port, out, cache=False)
        report, figures = measure(lambda: asyncio.run(run_then_close(config)), profile=args.profile)
        return {**figures, **report_figures(report)}


def child_cached(args: argparse.Namespace) -> Result:
    preload_cobalt()
    exp = cobalt_experiment("bench-cached", args.n, fixed_agent, int(args.concurrency), None)
    with tempfile.TemporaryDirectory(prefix="cobalt-bench-") as out:
        config = cobalt_config(args.port, out, cache=True)
        first, first_figures = measure(lambda: exp.run(config=config))
        second, figures = measure(lambda: exp.run(config=config), profile=args.profile)
    return {**figures, **report_figures(second), "first_wall_s": first_figures["wall_s"],
            "first_judge_calls": first.summary.judge_calls}


Call = Callable[[Result], Awaitable[str]]


async def reference_items(call: Call, n: int, concurrency: int) -> int:
    """The plain-client workload: per item, under Semaphore(C), an agent call then a judge call."""
    gate = asyncio.Semaphore(concurrency)

    async def item(i: int) -> float:
        async with gate:
            question = f"question {i}"
            answer = await call(agent_body(question))
            return float(json.loads(await call(judge_body(question, answer)))["score"])

    return len(await asyncio.gather(*(item(i) for i in range(n))))


async def httpx_items(port: int, n: int, concurrency: int) -> int:
    import httpx

    url = chat_url(port)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=60.0) as client:

        async def call(body: Result) -> str:
            response = await client.post(url, json=body)
            response.raise_for_status()
            return str(response.json()["choices"][0]["message"]["content"])

        return await reference_items(call, n, concurrency)


async def aiohttp_items(port: int, n: int, concurrency: int) -> int:
    import aiohttp

    url = chat_url(port)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def call(body: Result) -> str:
            async with session.post(url, json=body) as response:
                response.raise_for_status()
                return str((await response.json())["choices"][0]["message"]["content"])

        return await reference_items(call, n, concurrency)


def child_reference(args: argparse.Namespace) -> Result:
    run = httpx_items if args.child == "httpx" else aiohttp_items
    import_client = "httpx" if args.child == "httpx" else "aiohttp"
    __import__(import_client)
    ok, figures = measure(lambda: asyncio.run(run(args.port, args.n, int(args.concurrency))), profile=args.profile)
    return {**figures, "ok": ok, "errors": args.n - ok}


CHILDREN: dict[str, Callable[[argparse.Namespace], Result]] = {
    "cobalt": child_cobalt, "cached": child_cached, "httpx": child_reference, "aiohttp": child_reference,
}


# ---------------------------------------------------------------------------------------------
# Parent side: the loopback server, one subprocess per run, the table and the targets.
# ---------------------------------------------------------------------------------------------


@contextmanager
def fake_llm(latency: float) -> Iterator[int]:
    """Start tests/fakellm.py as a separate process on 127.0.0.1; yield its port; stop it by its PID."""
    cmd = [sys.executable, str(FAKELLM), "--latency", str(latency)]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fakellm did not start (said {line!r}, exit code {server.poll()})")
        yield int(line.split()[1])
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()


class Bench:
    """Runs children against one server and remembers each result (a run is never repeated)."""

    def __init__(self, port: int, latency: float, profile: bool) -> None:
        self.port, self.latency, self.profile = port, latency, profile
        self.runs: dict[tuple[str, int, int, int | None], Result] = {}

    def run(self, mode: str, n: int, c: int, judge_c: int | None = None) -> Result:
        key = (mode, n, c, judge_c)
        if key not in self.runs:
            self.runs[key] = self._spawn(mode, n, c, judge_c)
        return self.runs[key]

    def _spawn(self, mode: str, n: int, c: int, judge_c: int | None) -> Result:
        cmd = [sys.executable, __file__, "--child", mode, "--port", str(self.port), "--n", str(n),
               "--concurrency", str(c), *(["--judge-concurrency", str(judge_c)] if judge_c else []),
               *(["--profile"] if self.profile else [])]
        print(f"  running {mode:<7} N={n:<5} C={c:<4}{f' judge C={judge_c}' if judge_c else ''} ...",
              file=sys.stderr, flush=True)
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "PYTHONUNBUFFERED": "1"}
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed with exit code {done.returncode}")
        result: Result = json.loads(done.stdout.strip().splitlines()[-1])
        if result["errors"] or result.get("eval_errors"):
            raise RuntimeError(f"{mode} N={n} C={c}: {result['errors']} failed items, "
                               f"{result.get('eval_errors', 0)} eval errors; the figures would be meaningless")
        return self._derive(result, mode, n, c, judge_c)

    def _derive(self, result: Result, mode: str, n: int, c: int, judge_c: int | None) -> Result:
        calls = 2 * n
        in_flight = c + judge_c if judge_c else c  # the bound the ideal assumes (see the module docstring)
        ideal = calls * self.latency / in_flight
        result.update(mode=mode, n=n, concurrency=c, judge_concurrency=judge_c, ideal_s=ideal,
                      ratio=result["wall_s"] / ideal, cpu_ms_per_call=1000 * result["cpu_s"] / calls)
        return result


def cobalt_label(c: int, judge_c: int | None) -> str:
    return f"cobalt concurrency={c}" + (f", judge_concurrency={judge_c}" if judge_c else "")


def run_all(bench: Bench, args: argparse.Namespace) -> Result:
    """Every run the report needs, grouped by concurrency."""
    per_c: list[Result] = []
    for c in args.concurrency:
        half = max(1, c // 2)
        row: Result = {"concurrency": c, "cobalt": bench.run("cobalt", args.n, c),
                       "cobalt_capped": bench.run("cobalt", args.n, half, max(1, c - half))}
        if not args.skip_reference:
            row["httpx"] = bench.run("httpx", args.n, c)
            row["aiohttp"] = bench.run("aiohttp", args.n, c)
        per_c.append(row)
    small = max(1, args.n // 4)
    memory = {"small": bench.run("cobalt", small, MEMORY_C), "large": bench.run("cobalt", args.n, MEMORY_C)}
    cached = bench.run("cached", args.n, MEMORY_C)
    return {"per_concurrency": per_c, "memory": memory, "cached": cached}


def check_targets(results: Result, n: int) -> list[Result]:
    """Each target of the issue, its measured value and whether it was met."""
    checks: list[Result] = []
    for row in results["per_concurrency"]:
        c = row["concurrency"]
        for key, label in (("cobalt", f"concurrency={c}"), ("cobalt_capped", f"<= {c} calls in flight")):
            ratio = row[key]["ratio"]
            checks.append({"target": f"wall/ideal < {TARGET_RATIO} at C={c}, N={n} ({label})",
                           "measured": f"{ratio:.2f}", "met": ratio < TARGET_RATIO})
        if "httpx" in row:
            for key in ("cobalt", "cobalt_capped"):
                factor = row[key]["cpu_ms_per_call"] / row["httpx"]["cpu_ms_per_call"]
                checks.append({"target": f"CPU/call <= {TARGET_CPU_FACTOR:g}x plain httpx at C={c} ({key})",
                               "measured": f"{factor:.2f}x", "met": factor <= TARGET_CPU_FACTOR})
    small, large = results["memory"]["small"], results["memory"]["large"]
    growth = large["peak_rss_mb"] / small["peak_rss_mb"]
    checks.append({"target": f"memory flat in N (peak RSS N={large['n']} / N={small['n']} <= {TARGET_MEMORY_GROWTH})",
                   "measured": f"{small['peak_rss_mb']:.0f} -> {large['peak_rss_mb']:.0f} MB ({growth:.2f}x)",
                   "met": growth <= TARGET_MEMORY_GROWTH})
    cached = results["cached"]
    zero = cached["judge_calls"] == 0 and cached["cached_scores"] == n
    checks.append({"target": f"cached re-run of N={n} < {TARGET_CACHED_S:g} s with 0 judge calls",
                   "measured": f"{cached['wall_s']:.2f} s, {cached['judge_calls']} judge calls, "
                               f"{cached['cached_scores']} cached scores",
                   "met": cached["wall_s"] < TARGET_CACHED_S and zero})
    return checks


def machine() -> Result:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "platform": platform.platform()}


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

HEADER = (f"{'run':<52} {'N':>5} {'wall s':>7} {'ideal s':>7} {'wall/ideal':>10} {'CPU s':>6} "
          f"{'CPU ms/call':>11} {'peak RSS MB':>11}")


def table_line(label: str, r: Result) -> str:
    return (f"{label:<52} {r['n']:>5} {r['wall_s']:>7.2f} {r['ideal_s']:>7.2f} {r['ratio']:>10.2f} "
            f"{r['cpu_s']:>6.2f} {r['cpu_ms_per_call']:>11.3f} {r['peak_rss_mb']:>11.0f}")


def print_text(results: Result, checks: list[Result], meta: Result) -> None:
    print(f"\ncobalt overhead benchmark - {meta['date']} - {meta['machine']['cores']} cores "
          f"({meta['machine']['cpu']}), Python {meta['machine']['python']}")
    print(f"N={meta['n']} items x (1 agent call + 1 judge call), latency {meta['latency'] * 1000:g} ms per call; "
          f"ideal = 2 N latency / C\n")
    print(HEADER)
    for row in results["per_concurrency"]:
        c = row["concurrency"]
        capped = row["cobalt_capped"]
        print(table_line(f"C={c}: {cobalt_label(c, None)}", row["cobalt"]))
        print(table_line(f"C={c}: {cobalt_label(capped['concurrency'], capped['judge_concurrency'])}", capped))
        for ref in ("httpx", "aiohttp"):
            if ref in row:
                print(table_line(f"C={c}: plain {ref} (Semaphore({c}))", row[ref]))
    mem = results["memory"]
    print(f"\nmemory at C={MEMORY_C}: peak RSS {mem['small']['peak_rss_mb']:.0f} MB at N={mem['small']['n']}, "
          f"{mem['large']['peak_rss_mb']:.0f} MB at N={mem['large']['n']} (after imports: "
          f"{mem['small']['rss_start_mb']:.0f} / {mem['large']['rss_start_mb']:.0f} MB)")
    cached = results["cached"]
    print(f"cached re-run (N={cached['n']}): {cached['wall_s']:.2f} s wall, {cached['cpu_s']:.2f} s CPU, "
          f"{cached['judge_calls']} judge calls, {cached['cached_scores']} cached scores "
          f"(first run: {cached['first_wall_s']:.2f} s, {cached['first_judge_calls']} judge calls)")
    print("\ntargets:")
    for check in checks:
        print(f"  [{'met ' if check['met'] else 'MISS'}] {check['target']}: {check['measured']}")
    print("\npeers at C=20 on this machine: pydantic-evals 1.75x ideal, promptfoo 2.1x, Inspect AI 2.65x, "
          "DeepEval 5.9x; plain aiohttp 1.05x (0.8 ms CPU per item); plain httpx 10.8 s wall / 3.4 s CPU")


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------


def concurrency_list(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {text!r}")
    return values


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000, help="items per run (default 1000)")
    parser.add_argument("--concurrency", type=concurrency_list, default=[20, 100], help="list, e.g. 20,100")
    parser.add_argument("--latency", type=float, default=0.1, help="server latency per call in seconds")
    parser.add_argument("--skip-reference", action="store_true", help="skip the plain httpx/aiohttp runs")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--profile", action="store_true", help="cProfile every child run; top 25 to stderr")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--judge-concurrency", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_main(args: argparse.Namespace) -> None:
    args.concurrency = args.concurrency[0]
    print(json.dumps(CHILDREN[args.child](args)), flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    meta = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "date": datetime.now(UTC).isoformat(
        timespec="seconds"), "machine": machine(), "n": args.n, "latency": args.latency}
    with fake_llm(args.latency) as port:
        results = run_all(Bench(port, args.latency, args.profile), args)
    checks = check_targets(results, args.n)
    if args.json:
        print(json.dumps({"meta": meta, "results": results, "targets": checks}, indent=2))
    else:
        print_text(results, checks, meta)


if __name__ == "__main__":
    main()
