"""Throughput at high concurrency: cobalt against a plain aiohttp client, like for like (issue 14).

The workload: N items, each one agent chat call then one LLM-judge call, against the loopback
server `tests/fakellm.py` (a separate process, fixed latency per call), with at most C LLM calls in
flight for every runner:

- `aiohttp`, `httpx`: plain clients, an `asyncio.Semaphore(C)` around the two sequential calls of
  an item, one client (connection pool of C) for the whole run.
- `cobalt`: `experiment(..., concurrency=C/2, judge_concurrency=C/2)`, the agent itself one aiohttp
  POST over a shared session, one `llm-judge` evaluator, cache off, results stored as usual.
- `cobalt-before` (with `--before DIR`): the same, importing cobalt_lib from DIR (e.g. an unpacked
  older commit: `git archive main cobalt_lib | tar -x -C /tmp/before`), so before and after are
  measured in the same invocation under the same load.
- `cobalt-uvloop` (with `--uvloop`): cobalt on uvloop's event loop (`COBALT_EVENT_LOOP=uvloop`).

Every run is a fresh process: the wall time is the whole process, spawn to exit, imports included
(the issue's definition), and is also given for the run alone; CPU is the process's own (user +
system, all threads), per LLM call. Peak RSS is the process's maximum resident set. The 1-minute
load average before each run is printed beside it: on a shared machine, compare ratios taken in
the same invocation.

    .venv/bin/python benchmarks/overhead.py                              # the issue's three settings
    .venv/bin/python benchmarks/overhead.py --settings 1000x20 --runners aiohttp,cobalt
    .venv/bin/python benchmarks/overhead.py --before /tmp/before --uvloop --no-httpx
    .venv/bin/python benchmarks/overhead.py --settings 5000x200 --runners cobalt --profile

Also measured (skip with `--no-extras`): peak memory of cobalt at N=1000 and N=5000 (C=100), and a
fully cached re-run of 1000 items.
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
DEFAULT_SETTINGS = "1000x20,5000x100,5000x200"
RUNNERS = ("aiohttp", "httpx", "cobalt", "cobalt-before", "cobalt-uvloop")

TARGET_WALL = 1.10  # cobalt process wall / plain aiohttp process wall, per setting
TARGET_CPU = 2.0  # cobalt CPU per call / plain aiohttp CPU per call
TARGET_MEMORY = 1.10  # peak RSS at N=5000 / at N=1000
TARGET_CACHED_S = 1.0  # fully cached re-run of 1000 items


# ---------------------------------------------------------------------------------------------
# Child side: one measured run per process; prints one JSON line on stdout.
# ---------------------------------------------------------------------------------------------


def measure(fn: Callable[[], T], *, profile: bool = False) -> tuple[T, Result]:
    """Call `fn`; its value, with the wall and CPU time (all threads) of the call alone."""
    cpu0, wall0 = time.process_time(), time.perf_counter()
    value = profiled(fn) if profile else fn()
    return value, {"run_wall_s": time.perf_counter() - wall0, "run_cpu_s": time.process_time() - cpu0}


def profiled(fn: Callable[[], T]) -> T:
    """Run `fn` under cProfile (main thread only) and print the top 30 functions to stderr."""
    import cProfile
    import pstats

    with cProfile.Profile() as prof:
        value = fn()
    if out := os.environ.get("BENCH_PROFILE_OUT"):  # raw stats, for pstats or snakeviz
        prof.dump_stats(f"{out}.{os.getpid()}")
    for order in ("tottime", "cumulative"):
        print(f"\n=== cProfile, top 30 by {order} ({' '.join(sys.argv[1:])}) ===", file=sys.stderr)
        pstats.Stats(prof, stream=sys.stderr).sort_stats(order).print_stats(30)
    if callers := os.environ.get("BENCH_PROFILE_CALLERS"):  # e.g. "__repr_args__|connect": who calls them
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_callers(callers)
    return value


def chat_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1/chat/completions"


def agent_body(question: str) -> Result:
    return {"model": MODEL, "messages": [{"role": "user", "content": question}]}


def judge_body(question: str, answer: str) -> Result:
    return {"model": MODEL, "max_tokens": 512, "temperature": 0.0,
            "messages": [{"role": "system", "content": JUDGE_SYSTEM},
                         {"role": "user", "content": f"Rate {question} -> {answer}"}]}


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


def event_loop_runner(use_uvloop: bool) -> Callable[[Any], Any]:
    """What `Experiment.run()` runs its coroutine with (cobalt's own `asyncio.run`), optionally on uvloop."""
    from cobalt_lib._aio import run

    if use_uvloop:
        os.environ["COBALT_EVENT_LOOP"] = "uvloop"  # how a user asks for it
    return run


def child_cobalt(args: argparse.Namespace) -> Result:
    agent, close = make_agent(args.port)
    half = max(1, args.concurrency // 2)
    exp = cobalt_experiment("bench-overhead", args.n, agent, half, max(1, args.concurrency - half))
    run_loop = event_loop_runner(args.child == "cobalt-uvloop")

    async def run_then_close(config: Any) -> Any:  # exactly Experiment.run(), plus closing the agent's session
        try:
            return await exp.arun(config=config)
        finally:
            await close()

    with tempfile.TemporaryDirectory(prefix="cobalt-bench-") as out:
        config = cobalt_config(args.port, out, cache=False)
        report, figures = measure(lambda: run_loop(run_then_close(config)), profile=args.profile)  # as Experiment.run
        where = str(Path(sys.modules["cobalt_lib"].__file__ or "").parent)
        return {**figures, **report_figures(report), "cobalt_lib": where}


def child_cached(args: argparse.Namespace) -> Result:
    exp = cobalt_experiment("bench-cached", args.n, fixed_agent, args.concurrency, None)
    with tempfile.TemporaryDirectory(prefix="cobalt-bench-") as out:
        config = cobalt_config(args.port, out, cache=True)
        first, first_figures = measure(lambda: exp.run(config=config))
        second, figures = measure(lambda: exp.run(config=config), profile=args.profile)
    return {**figures, **report_figures(second), "first_run_wall_s": first_figures["run_wall_s"],
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
    async with httpx.AsyncClient(limits=limits, timeout=600.0) as client:

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
    ok, figures = measure(lambda: asyncio.run(run(args.port, args.n, args.concurrency)), profile=args.profile)
    return {**figures, "ok": ok, "errors": args.n - ok}


CHILDREN: dict[str, Callable[[argparse.Namespace], Result]] = {
    "aiohttp": child_reference, "httpx": child_reference, "cobalt": child_cobalt, "cobalt-before": child_cobalt,
    "cobalt-uvloop": child_cobalt, "cached": child_cached,
}


# ---------------------------------------------------------------------------------------------
# Parent side: the loopback server, one subprocess per run, the table and the targets.
# ---------------------------------------------------------------------------------------------


@contextmanager
def fake_llm(latency: float, *extra: str) -> Iterator[int]:
    """Start tests/fakellm.py as a separate process on 127.0.0.1; yield its port; stop it by its PID."""
    cmd = [sys.executable, str(FAKELLM), "--latency", str(latency), *extra]
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


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Bench:
    """Runs children against one server; each result gets whole-process wall, CPU and peak RSS."""

    def __init__(self, args: argparse.Namespace, port: int) -> None:
        self.args, self.port = args, port

    def run(self, mode: str, n: int, c: int) -> Result:
        cmd = [sys.executable, __file__, "--child", mode, "--port", str(self.port), "--n", str(n),
               "--concurrency", str(c), *(["--profile"] if self.args.profile else [])]
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "PYTHONUNBUFFERED": "1"}
        if mode == "cobalt-before" or (mode == "cached" and self.args.extras_before):
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.args.before, env.get("PYTHONPATH")]))
        load = os.getloadavg()[0]
        print(f"  {mode:<14} N={n:<6} C={c:<4} (load {load:.2f}) ...", file=sys.stderr, end="", flush=True)
        cpu0, wall0 = children_cpu_s(), time.perf_counter()
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT) as child:
            out, _ = child.communicate()
        wall, cpu = time.perf_counter() - wall0, children_cpu_s() - cpu0
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed with exit code {child.returncode}")
        result: Result = json.loads(out.strip().splitlines()[-1])
        if result["errors"] or result.get("eval_errors"):
            raise RuntimeError(f"{mode} N={n} C={c}: {result['errors']} failed items, "
                               f"{result.get('eval_errors', 0)} eval errors; the figures would be meaningless")
        calls = 2 * n
        ideal = calls * self.args.latency / c
        result.update(mode=mode, n=n, concurrency=c, load=load, wall_s=wall, cpu_s=cpu, ideal_s=ideal,
                      ratio_ideal=wall / ideal, cpu_ms_per_call=1000 * cpu / calls,
                      run_cpu_ms_per_call=1000 * result["run_cpu_s"] / calls)
        print(f" {wall:.2f} s", file=sys.stderr, flush=True)
        return result


def parse_setting(text: str) -> tuple[int, int]:
    n, _, c = text.lower().partition("x")
    if not (n.isdigit() and c.isdigit() and int(n) > 0 and int(c) > 1):
        raise argparse.ArgumentTypeError(f"a setting is NxC with N items and C >= 2 calls in flight, got {text!r}")
    return int(n), int(c)


def settings_list(text: str) -> list[tuple[int, int]]:
    return [parse_setting(part.strip()) for part in text.split(",") if part.strip()]


def run_all(bench: Bench, args: argparse.Namespace) -> Result:
    """Every run the report needs: per setting, each runner once (references first)."""
    rows: list[Result] = []
    for n, c in args.settings:
        rows.append({"n": n, "concurrency": c, "runs": {mode: bench.run(mode, n, c) for mode in args.runners}})
    extras: Result = {}
    if args.extras:
        mode = "cobalt-before" if args.extras_before else "cobalt"
        extras["memory"] = [bench.run(mode, n, 100) for n in (1000, 5000)]
        extras["cached"] = bench.run("cached", 1000, 100)
    return {"settings": rows, **extras}


def check_targets(results: Result) -> list[Result]:
    """Each target of the issue, its measured value and whether it was met."""
    checks: list[Result] = []
    for row in results["settings"]:
        runs, setting = row["runs"], f"N={row['n']} C={row['concurrency']}"
        if "aiohttp" not in runs:
            continue
        base = runs["aiohttp"]
        for mode in (m for m in runs if m.startswith("cobalt")):
            ratio = runs[mode]["wall_s"] / base["wall_s"]
            checks.append({"target": f"{mode} wall / aiohttp wall <= {TARGET_WALL} at {setting}",
                           "measured": f"{ratio:.3f}", "met": ratio <= TARGET_WALL})
            cpu = runs[mode]["run_cpu_ms_per_call"] / base["run_cpu_ms_per_call"]
            checks.append({"target": f"{mode} CPU/call <= {TARGET_CPU:g}x aiohttp's at {setting} (the run)",
                           "measured": f"{cpu:.2f}x ({runs[mode]['run_cpu_ms_per_call']:.3f} vs "
                                       f"{base['run_cpu_ms_per_call']:.3f} ms)", "met": cpu <= TARGET_CPU})
    if "memory" in results:
        small, large = results["memory"]
        growth = large["peak_rss_mb"] / small["peak_rss_mb"]
        checks.append({"target": f"cobalt peak RSS flat in N (N={large['n']} / N={small['n']} <= {TARGET_MEMORY})",
                       "measured": f"{small['peak_rss_mb']:.0f} -> {large['peak_rss_mb']:.0f} MB ({growth:.2f}x)",
                       "met": growth <= TARGET_MEMORY})
    if "cached" in results:
        cached = results["cached"]
        ok = cached["run_wall_s"] < TARGET_CACHED_S and cached["judge_calls"] == 0
        checks.append({"target": f"fully cached re-run of {cached['n']} items < {TARGET_CACHED_S:g} s, 0 judge calls",
                       "measured": f"{cached['run_wall_s']:.2f} s ({cached['judge_calls']} judge calls, "
                                   f"{cached['cached_scores']} cached scores)", "met": ok})
    return checks


def machine() -> Result:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cores": os.cpu_count(), "cpu": model, "python": platform.python_version()}


HEADER = ("| setting | runner | load | wall s | / ideal | / aiohttp | run wall s | CPU s | CPU ms/call "
          "| run CPU ms/call | / aiohttp | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def table_line(r: Result, base: Result | None) -> str:
    wall_vs = f"{r['wall_s'] / base['wall_s']:.3f}" if base else "-"
    cpu_vs = f"{r['run_cpu_ms_per_call'] / base['run_cpu_ms_per_call']:.2f}x" if base else "-"
    return (f"| {r['n']}x{r['concurrency']} | {r['mode']} | {r['load']:.2f} | {r['wall_s']:.2f} | "
            f"{r['ratio_ideal']:.2f} | {wall_vs} | {r['run_wall_s']:.2f} | {r['cpu_s']:.2f} | "
            f"{r['cpu_ms_per_call']:.3f} | {r['run_cpu_ms_per_call']:.3f} | {cpu_vs} | {r['peak_rss_mb']:.0f} |")


def print_text(results: Result, checks: list[Result], meta: Result) -> None:
    m = meta["machine"]
    print(f"\n{meta['date']}: {m['cores']} cores ({m['cpu']}), Python {m['python']}; latency "
          f"{meta['latency'] * 1000:g} ms per call; ideal = 2 N latency / C; load = 1-min load average before the run")
    print(f"command: {meta['command']}\n")
    print(HEADER)
    for row in results["settings"]:
        base = row["runs"].get("aiohttp")
        for r in row["runs"].values():
            print(table_line(r, base))
    if "memory" in results:
        small, large = results["memory"]
        print(f"\nmemory (cobalt, C=100): peak RSS {small['peak_rss_mb']:.0f} MB at N={small['n']}, "
              f"{large['peak_rss_mb']:.0f} MB at N={large['n']}")
    if "cached" in results:
        c = results["cached"]
        print(f"cached re-run of {c['n']} items: {c['run_wall_s']:.2f} s wall, {c['run_cpu_s']:.2f} s CPU, "
              f"{c['judge_calls']} judge calls, {c['cached_scores']} cached scores (first run "
              f"{c['first_run_wall_s']:.2f} s, {c['first_judge_calls']} judge calls; load {c['load']:.2f})")
    print("\ntargets:")
    for check in checks:
        print(f"  [{'met ' if check['met'] else 'MISS'}] {check['target']}: {check['measured']}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", type=settings_list, default=settings_list(DEFAULT_SETTINGS),
                        help=f"NxC settings, comma-separated (default {DEFAULT_SETTINGS})")
    parser.add_argument("--runners", default="aiohttp,httpx,cobalt",
                        help=f"comma-separated, from {', '.join(RUNNERS)} (default aiohttp,httpx,cobalt)")
    parser.add_argument("--no-httpx", action="store_true", help="leave out the plain httpx client (slow past C=100)")
    parser.add_argument("--before", metavar="DIR", help="also run cobalt importing cobalt_lib from DIR")
    parser.add_argument("--uvloop", action="store_true", help="also run cobalt on uvloop's event loop")
    parser.add_argument("--no-extras", dest="extras", action="store_false",
                        help="skip the memory pair and the cached re-run")
    parser.add_argument("--extras-before", action="store_true",
                        help="run the memory pair and the cached re-run on the --before code instead")
    parser.add_argument("--latency", type=float, default=0.1, help="server latency per call in seconds")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--profile", action="store_true", help="cProfile every child run; top 30 to stderr")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--concurrency", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    runners = [r.strip() for r in args.runners.split(",") if r.strip()]
    runners += ["cobalt-before"] if args.before else []
    runners += ["cobalt-uvloop"] if args.uvloop else []
    if args.no_httpx:
        runners = [r for r in runners if r != "httpx"]
    if unknown := set(runners) - set(RUNNERS):
        parser.error(f"unknown runner(s) {', '.join(sorted(unknown))}; choose from {', '.join(RUNNERS)}")
    if "cobalt-before" in runners and not args.before:
        parser.error("the cobalt-before runner needs --before DIR")
    args.runners = list(dict.fromkeys(runners))
    return args


def child_main(args: argparse.Namespace) -> None:
    if os.environ.get("BENCH_GC_STATS"):  # time spent in the cyclic garbage collector, to stderr at exit
        import atexit
        import gc

        spent = [0.0, 0.0]

        def on_gc(phase: str, info: dict[str, int]) -> None:
            if phase == "start":
                spent[1] = time.perf_counter()
            else:
                spent[0] += time.perf_counter() - spent[1]

        gc.callbacks.append(on_gc)
        if threshold := os.environ.get("BENCH_GC_THRESHOLD"):
            gc.freeze()
            gc.set_threshold(int(threshold), 10, 10)
        atexit.register(lambda: print(f"gc: {spent[0]:.3f} s, {gc.get_stats()}", file=sys.stderr))
    result = CHILDREN[args.child](args)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux
    print(json.dumps(result), flush=True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    meta = {"command": " ".join([Path(sys.executable).name, *sys.argv]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(), "latency": args.latency}
    with fake_llm(args.latency) as port:
        results = run_all(Bench(args, port), args)
    checks = check_targets(results)
    if args.json:
        print(json.dumps({"meta": meta, "results": results, "targets": checks}, indent=2))
    else:
        print_text(results, checks, meta)


if __name__ == "__main__":
    main()
