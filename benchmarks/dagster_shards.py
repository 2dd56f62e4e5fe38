"""A Dagster-launched run in shards against the library path, on one loopback LLM server (issue 21, part 2).

An experiment of `--n` items (default 100,000) whose agent answers at once and whose one `llm-judge`
evaluator calls `tests/fakellm.py` (a separate process), run twice in a temporary project:

- `library`: `cobalt run` (the library engine, one process; recording in Dagster switched off);
- `dagster`: the experiment's job executed by Dagster on its multiprocess executor with
  `[dagster] shard_items = --shard-items` (default 25,000), as a schedule or `cobalt request` runs it.

Reported: each path's wall time, items per second and CPU per item (the `cobalt run` process; the
Dagster steps' processes plus the orchestrating one, and their ratio to the library path's; steps
forked from a fork server are its children, and the server is stopped after the run, so its CPU and
theirs are counted too); the
largest peak RSS of any Dagster step process (and of the orchestrating process); each step's duration
from its step events; and the per-shard overhead: a run of `--probe` items in `--probe` one-item
shards against the same items in one shard (the extra wall time and CPU per extra shard: a step's
launch, imports, plan, files; `--probe 0` skips it).

    .venv/bin/python benchmarks/dagster_shards.py                         # 100,000 items
    .venv/bin/python benchmarks/dagster_shards.py --n 10000 --shard-items 2500
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dagster as dg

ROOT = Path(__file__).resolve().parent.parent
NAME = "bench"

EXPERIMENT = '''
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("bench", Dataset([{{"input": f"q{{i}}", "expected_output": f"Q{{i}}"}} for i in range({n})]),
            evaluators=[Evaluator(name="judge", type="llm-judge", prompt="Rate {{{{output}}}} for {{{{input}}}}.")],
            concurrency={concurrency})
async def bench(ctx):
    return ctx.input.upper()
'''


def bench_job(project_dir: str) -> Any:
    """The reconstructor every step process calls."""
    import cobalt_dagster

    return cobalt_dagster.build_definitions(project_dir).resolve_job_def(f"{NAME}_eval")


def make_project(root: Path, port: int, n: int, shard_items: int, concurrency: int) -> Path:
    (root / "experiments").mkdir(parents=True, exist_ok=True)
    (root / "experiments" / "bench.cobalt.py").write_text(EXPERIMENT.format(n=n, concurrency=concurrency))
    (root / "cobalt.toml").write_text(
        f'[judge]\nprovider = "openai"\nmodel = "gpt-4o-mini"\nbase_url = "http://127.0.0.1:{port}/v1"\n'
        f"[cache]\nenabled = false\n[dagster]\nrecord = \"off\"\nshard_items = {shard_items}\n")
    return root


def start_llm() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakellm.py")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    return proc, int(line.split()[1])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def stop_fork_server() -> None:
    """Stop the fork server the run's steps forked from, once it has reaped them: its CPU and its
    children's then count in this process's `RUSAGE_CHILDREN` (a fork server is not ours to wait for
    otherwise)."""
    from multiprocessing import forkserver

    server: Any = forkserver._forkserver  # type: ignore[attr-defined]
    pid = getattr(server, "_forkserver_pid", None)
    if pid is None:
        return
    children = Path(f"/proc/{pid}/task/{pid}/children")
    deadline = time.monotonic() + 30
    while children.exists() and children.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)  # the last step's exit, not yet reaped
    server._stop()


def library(root: Path) -> float:
    """Wall seconds of one `cobalt run` (its CPU is the caller's `children_cpu()` difference)."""
    started = time.perf_counter()
    subprocess.run([str(Path(sys.executable).parent / "cobalt"), "run", "experiments/bench.cobalt.py"], cwd=root,
                   check=True, capture_output=True, env={**os.environ, "COBALT_DAGSTER_RECORD": "off"})
    return time.perf_counter() - started


def dagster_run(root: Path) -> tuple[float, dict[str, tuple[float, float]]]:
    """Wall seconds of one Dagster-launched run, and each step's (start, end) from its events."""
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    job = dg.build_reconstructable_job(__name__ if __name__ != "__main__" else "dagster_shards", "bench_job",
                                       reconstructable_kwargs={"project_dir": str(root)},
                                       reconstructor_working_directory=str(Path(__file__).parent))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        partition = f"p{time.time_ns()}"
        instance.add_dynamic_partitions(f"{NAME}_runs", [partition])
        # The run config a schedule's or `cobalt request`'s run of the partition gets (its job's default for
        # the partition; `execute_job` alone would run with none).
        run_config = bench_job(str(root)).partitioned_config.get_run_config_for_partition_key(partition)
        started = time.perf_counter()
        with dg.execute_job(job, instance=instance, tags={"dagster/partition": partition},
                            run_config=run_config) as result:
            if not result.success:
                raise SystemExit("the Dagster run failed")
        wall = time.perf_counter() - started
        stop_fork_server()
        spans: dict[str, list[float]] = {}
        for record in instance.get_records_for_run(run_id=result.run_id).records:
            entry = record.event_log_entry
            kind = entry.dagster_event.event_type_value if entry.dagster_event else ""
            if kind in ("STEP_START", "STEP_SUCCESS") and entry.step_key:
                spans.setdefault(entry.step_key, []).append(entry.timestamp)
    return wall, {k: (min(v), max(v)) for k, v in spans.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--shard-items", type=int, default=25_000)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--probe", type=int, default=4)
    parser.add_argument("--skip-library", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    llm, port = start_llm()
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    try:
        with tempfile.TemporaryDirectory(prefix="cobalt-shards-") as tmp:
            lib_cpu = None
            if not args.skip_library:
                cpu = children_cpu()
                lib = library(make_project(Path(tmp) / "lib", port, args.n, args.shard_items, args.concurrency))
                lib_cpu = children_cpu() - cpu
                print(f"library path: {lib:.1f} s, {args.n / lib:.0f} items/s, CPU {lib_cpu:.1f} s "
                      f"({lib_cpu / args.n * 1000:.3f} ms per item)")
            cpu, own_cpu = children_cpu(), _own_cpu()
            wall, spans = dagster_run(make_project(Path(tmp) / "dg", port, args.n, args.shard_items, args.concurrency))
            steps_cpu, own_cpu = children_cpu() - cpu, _own_cpu() - own_cpu
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            total = steps_cpu + own_cpu
            ratio = f", {total / lib_cpu:.2f}x the library path's" if lib_cpu else ""
            print(f"dagster path: {wall:.1f} s, {args.n / wall:.0f} items/s, step processes' CPU "
                  f"{steps_cpu:.1f} s + orchestrator {own_cpu:.1f} s ({total / args.n * 1000:.3f} ms per item{ratio}); "
                  f"largest step peak RSS {peak:.0f} MB, orchestrator {own:.0f} MB")
            for step, (start, end) in sorted(spans.items(), key=lambda kv: kv[1][0]):
                print(f"  {step:60s} {end - start:7.2f} s")
            if args.probe < 2:
                return
            probes = []
            for shards in (1, args.probe):
                root = make_project(Path(tmp) / f"probe{shards}", port, args.probe, args.probe // shards, 4)
                cpu = children_cpu()
                wall, _ = dagster_run(root)
                probes.append((wall, children_cpu() - cpu))
            extra = args.probe - 1
            print(f"per extra shard: {(probes[1][0] - probes[0][0]) / extra:.2f} s wall, "
                  f"{(probes[1][1] - probes[0][1]) / extra:.2f} s CPU "
                  f"({args.probe} one-item shards vs one shard of {args.probe}, multiprocess executor, 2 at a time)")
    finally:
        llm.terminate()
        llm.wait()


if __name__ == "__main__":
    main()
