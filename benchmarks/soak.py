"""Soak run (issue 14, target 4): many items x 3 LLM-judge evaluators against a loopback server
that answers 5% of the judge calls with a fault, checking that every item is accounted for.

The server (`tests/fakellm.py`, a separate process, 100 ms per call) injects, in turn, a 429 with
`Retry-After: 0.2`, a 500, a connection reset and an answer slower (`--slow`, 2 s) than the judge's
timeout (1 s). The agent is one aiohttp chat call to the same server that is spared the faults, so
every item has an output and the faults land on cobalt's judge calls, which retry them (at most
4 retries within 60 s). Each size runs in a fresh process; the checks, after the run:

- the report holds every item exactly once (indices 0..N-1), each `ok` with 3 evaluations, each
  evaluation `ok` or an `eval-error` that says why (a call that failed for good);
- the summary counts add up to N, the results file and the store hold N outputs and 3 N scores;
- peak RSS of the run (measured before these checks, which read the results file whole) at the
  largest size over the smallest (flat: <= 1.10).

    .venv/bin/python benchmarks/soak.py                        # N=5000 and N=20000
    .venv/bin/python benchmarks/soak.py --sizes 2000 --faults 0.1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from overhead import MODEL, ROOT, children_cpu_s, fake_llm, machine

Result = dict[str, Any]
EVALUATORS = {
    "relevance": "Is this answer on topic? Q: {{input}} A: {{output}}",
    "correctness": "Is this answer correct? Q: {{input}} A: {{output}}",
    "tone": "Is the tone of this answer polite? {{output}}",
}
TARGET_MEMORY = 1.10


# ---------------------------------------------------------------------------------------------
# Child: one run of N items; prints one JSON line.
# ---------------------------------------------------------------------------------------------


def child(args: argparse.Namespace) -> Result:
    import aiohttp

    from cobalt_lib import Dataset, Evaluator, define_config, experiment
    from cobalt_lib._aio import run

    url = f"http://127.0.0.1:{args.port}/v1/chat/completions"
    holder: list[aiohttp.ClientSession] = []

    async def agent(ctx: Any) -> str:
        if not holder:
            holder.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)))
        body = {"model": MODEL, "messages": [{"role": "user", "content": str(ctx.input)}]}
        async with holder[0].post(url, json=body, headers={"x-fakellm-no-faults": "1"}) as response:
            data = await response.json()
        return str(data["choices"][0]["message"]["content"])

    dataset = Dataset([{"input": f"question {i}"} for i in range(args.n)])
    exp = experiment("soak", dataset, agent, evaluators=[Evaluator(name=n, prompt=p) for n, p in EVALUATORS.items()],
                     concurrency=args.concurrency // 2, judge_concurrency=args.concurrency // 2)

    async def run_then_close(config: Any) -> Any:
        try:
            return await exp.arun(config=config)
        finally:
            if holder:
                await holder[0].close()

    with tempfile.TemporaryDirectory(prefix="cobalt-soak-") as out:
        judge = {"provider": "openai", "base_url": f"http://127.0.0.1:{args.port}/v1", "model": MODEL,
                 "timeout": 1.0, "max_retries": 4, "retry_max_seconds": 60}
        config = define_config(judge=judge, output_dir=out, cache={"enabled": False})
        before_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # imports and the dataset
        cpu0, wall0 = time.process_time(), time.perf_counter()
        report = run(run_then_close(config))
        # The run's peak: the checks below read the whole results file into memory on purpose.
        figures = {"run_wall_s": time.perf_counter() - wall0, "run_cpu_s": time.process_time() - cpu0,
                   "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "before_rss_mb": before_mb}
        problems = check_report(report, args.n) + check_stored(report, Path(out), args.n)
    statuses = Counter(ev.status for item in report.items for ev in item.evaluations.values())
    errors = Counter((ev.error or "")[:60].split(":")[-1].strip() or "?" for item in report.items
                     for ev in item.evaluations.values() if ev.status != "ok")
    return {**figures, "items": len(report.items), "ok_items": report.summary.ok, "scores_ok": statuses["ok"],
            "eval_errors": statuses["eval-error"], "error_kinds": dict(errors.most_common(5)),
            "judge_calls": report.summary.judge_calls, "problems": problems[:20], "problem_count": len(problems),
            "checks_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def check_report(report: Any, n: int) -> list[str]:
    problems = []
    indices = sorted(item.index for item in report.items)
    if indices != list(range(n)):
        problems.append(f"the report holds {len(indices)} items, {len(set(indices))} distinct, not 0..{n - 1}")
    s = report.summary
    if s.ok + s.errors + s.timeouts != n:
        problems.append(f"summary counts {s.ok} ok + {s.errors} errors + {s.timeouts} timeouts != {n}")
    if report.status != "completed":
        problems.append(f"the run is {report.status}")
    for item in report.items:
        if item.status != "ok":
            problems.append(f"item {item.index}: agent {item.status}: {item.error}")
        elif set(item.evaluations) != set(EVALUATORS):
            problems.append(f"item {item.index}: evaluations {sorted(item.evaluations)}")
        for name, ev in item.evaluations.items():
            if ev.status == "ok" and ev.score is None:
                problems.append(f"item {item.index} {name}: ok without a score")
            if ev.status == "eval-error" and not ev.error:
                problems.append(f"item {item.index} {name}: eval-error without a reason")
    return problems


def check_stored(report: Any, out: Path, n: int) -> list[str]:
    import duckdb

    problems = []
    saved = json.loads(Path(report.results_path).read_text())
    if len(saved["items"]) != n:
        problems.append(f"the results file holds {len(saved['items'])} items, not {n}")
    with duckdb.connect(str(out / "cobalt.duckdb"), read_only=True) as con:
        for table, want in (("outputs", n), ("scores", len(EVALUATORS) * n)):
            row = con.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [report.id]).fetchone()
            if row is None or row[0] != want:
                problems.append(f"the store's {table} table holds {row[0] if row else 0} rows, not {want}")
    return problems


# ---------------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------------


def server_stats(port: int) -> Result:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/fakellm/stats", timeout=10) as response:
        return dict(json.loads(response.read()))


def spawn(args: argparse.Namespace, port: int, n: int) -> Result:
    cmd = [sys.executable, __file__, "--child", "--port", str(port), "--n", str(n),
           "--concurrency", str(args.concurrency)]
    load = os.getloadavg()[0]
    print(f"  soak N={n} C={args.concurrency} (load {load:.2f}) ...", file=sys.stderr, end="", flush=True)
    before = server_stats(port)
    cpu0, wall0 = children_cpu_s(), time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, check=False,
                          env={**os.environ, "OPENAI_API_KEY": "sk-soak", "PYTHONUNBUFFERED": "1"})
    wall, cpu = time.perf_counter() - wall0, children_cpu_s() - cpu0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {done.returncode}")
    after = server_stats(port)
    result: Result = json.loads(done.stdout.strip().splitlines()[-1])
    injected = {k: v - before["injected"].get(k, 0) for k, v in after["injected"].items()}
    calls = sum(after["served"].values()) - sum(before["served"].values())
    result.update(n=n, load=load, wall_s=wall, cpu_s=cpu, injected=injected, calls=calls,
                  items_per_s=n / result["run_wall_s"], calls_per_s=calls / result["run_wall_s"])
    print(f" {wall:.1f} s", file=sys.stderr, flush=True)
    return result


def report_text(rows: list[Result], args: argparse.Namespace, command: str) -> str:
    m = machine()
    lines = [f"\n{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}: {m['cores']} cores ({m['cpu']}), Python "
             f"{m['python']}; {len(EVALUATORS)} LLM-judge evaluators; C={args.concurrency} calls in flight "
             f"(concurrency={args.concurrency // 2}, judge_concurrency={args.concurrency // 2}); latency "
             f"{args.latency * 1000:g} ms; faults {args.faults:.0%} of judge calls; judge timeout 1 s, slow answers "
             f"{args.slow:g} s", f"command: {command}", "",
             "| N | load | wall s | run wall s | CPU s | items/s | LLM calls/s | calls served | faults injected "
             "| scores ok | eval-errors | peak RSS MB | RSS before the run MB | problems |", "|---" * 14 + "|"]
    for r in rows:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(r["injected"].items())) or "none"
        lines.append(f"| {r['n']} | {r['load']:.2f} | {r['wall_s']:.1f} | {r['run_wall_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{r['items_per_s']:.0f} | {r['calls_per_s']:.0f} | {r['calls']} | {faults} | {r['scores_ok']} "
                     f"| {r['eval_errors']} | {r['peak_rss_mb']:.0f} | {r['before_rss_mb']:.0f} "
                     f"| {r['problem_count']} |")
    lines.append("")
    for r in rows:
        if r["eval_errors"]:
            lines.append(f"N={r['n']}: eval-errors by cause: {r['error_kinds']}")
        for problem in r["problems"]:
            lines.append(f"N={r['n']}: PROBLEM: {problem}")
    ok = all(not r["problem_count"] for r in rows)
    lines.append(f"[{'met ' if ok else 'MISS'}] every item accounted for in the report, the results file and the store")
    if len(rows) > 1:
        growth = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
        lines.append(f"[{'met ' if growth <= TARGET_MEMORY else 'MISS'}] peak RSS flat in N: "
                     f"{rows[0]['peak_rss_mb']:.0f} MB at N={rows[0]['n']}, {rows[-1]['peak_rss_mb']:.0f} MB at "
                     f"N={rows[-1]['n']} ({growth:.2f}x, target <= {TARGET_MEMORY})")
        # What the run itself adds over the process it started in (imports, the user's dataset).
        own = [r["peak_rss_mb"] - r["before_rss_mb"] for r in (rows[0], rows[-1])]
        lines.append(f"       the run's own memory (peak minus RSS before the run): {own[0]:.0f} MB at "
                     f"N={rows[0]['n']}, {own[1]:.0f} MB at N={rows[-1]['n']} ({own[1] / own[0]:.2f}x)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,20000", help="items per run, comma-separated (default 5000,20000)")
    parser.add_argument("--concurrency", type=int, default=200, help="LLM calls in flight (default 200)")
    parser.add_argument("--faults", type=float, default=0.05, help="share of judge calls with a fault (0.05)")
    parser.add_argument("--slow", type=float, default=2.0, help="seconds a slow answer takes (judge timeout: 1 s)")
    parser.add_argument("--latency", type=float, default=0.1, help="server latency per call in seconds")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)), flush=True)
        return
    sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    extra = ["--faults", str(args.faults), "--slow", str(args.slow), "--no-record"]
    with fake_llm(args.latency, *extra) as port:
        rows = [spawn(args, port, n) for n in sizes]
    print(report_text(rows, args, " ".join([Path(sys.executable).name, *sys.argv])))


if __name__ == "__main__":
    main()
