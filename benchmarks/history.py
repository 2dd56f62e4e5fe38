"""`cobalt history`, the pages' runs list and trends over a store of many runs (issue 35).

Writes R synthetic runs straight into a store file (once per R, kept under --dir): 5 experiments,
tags from a small set, two evaluators' aggregates plus latency and cost, one verdict per run, one run
in twenty failed. Then, each in a fresh process (imports excluded from the figure, the store opened
cold), the wall and CPU time and peak RSS of:

- `history`: `run_history(config, limit=20)`, what `cobalt history` lists;
- `history --experiment --tag`: the same narrowed to one experiment and one tag;
- `runs list`: the pages' first page of runs (`runs_list` with no filter);
- `runs list, filtered`: the same with an experiment, a tag and a status;
- `trends`: the trends page of one experiment (`trends_view`);
- `cobalt history` itself, the whole process (spawn to exit).

    .venv/bin/python benchmarks/history.py                         # R = 1,000 and 100,000
    .venv/bin/python benchmarks/history.py --runs 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENTS = [f"exp-{i}" for i in range(5)]
TAGS = ["nightly", "pr", "v1", "v2", "prod"]
VIEWS = ["history", "history --experiment --tag", "runs list", "runs list, filtered", "trends"]


def build(project: Path, runs: int) -> None:
    """A project whose store holds `runs` finished runs (written in batches of 20,000 runs)."""
    from cobalt_lib.store._store import Store

    project.mkdir(parents=True, exist_ok=True)
    (project / "cobalt.toml").write_text('output_dir = ".cobalt"\n')
    store = Store(project / ".cobalt" / "cobalt.duckdb")
    rng = random.Random(0)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for first in range(0, runs, 20_000):
        batch: dict[str, list[dict[str, object]]] = {"runs": [], "aggregates": [], "verdicts": []}
        for i in range(first, min(runs, first + 20_000)):
            run_id = f"{(start + timedelta(minutes=i)).strftime('%Y%m%d%H%M%S')}-{i:08x}"
            passed = rng.random() > 0.05
            when = start + timedelta(minutes=i)
            summary = {"total_items": 100, "total_duration_ms": 1000.0 + i % 100, "estimated_cost": 0.01}
            batch["runs"].append({
                "run_id": run_id, "experiment": EXPERIMENTS[i % 5], "status": "completed",
                "started_at": when.isoformat(), "finished_at": (when + timedelta(seconds=30)).isoformat(),
                "tags": rng.sample(TAGS, 2), "config": {"runs": 1}, "source": "library", "summary": summary,
                "passed": passed, "worked_ms": 1000.0})
            for metric, kind in (("quality", "evaluator"), ("safety", "evaluator"), ("latency", "metric"),
                                 ("cost", "metric")):
                mean = rng.random()
                batch["aggregates"].append({"run_id": run_id, "metric": metric, "kind": kind, "mean": mean,
                                            "median": mean, "p95": mean, "p99": mean, "min": 0.0, "max": 1.0,
                                            "stddev": 0.1, "count": 100, "errors": 0, "coverage": 1.0,
                                            "pass_rate": mean})
            batch["verdicts"].append({"run_id": run_id, "name": "quality >= 0.5", "passed": passed,
                                      "message": "", "actual": 0.6, "expected": 0.5, "gate": "threshold"})
        store.write(batch)


def view(name: str, project: Path) -> object:
    from cobalt_lib.config import load_config
    from cobalt_lib.ops._history import run_history
    from cobalt_lib.pages._queries import RunFilters, runs_list
    from cobalt_lib.pages._trends import trends_view

    config = load_config(project)
    if name == "history":
        return len(run_history(config, limit=20))
    if name == "history --experiment --tag":
        return len(run_history(config, experiment="exp-2", tag="v2", limit=20))
    if name == "runs list":
        return runs_list(config, RunFilters())["total"]
    if name == "runs list, filtered":
        return runs_list(config, RunFilters(experiment="exp-3", tag="prod", status="failed-gates"))["total"]
    return len(trends_view(config, "exp-1")["runs"])


def child(name: str, project: Path) -> None:
    import cobalt_lib.pages._trends  # noqa: F401  (imports before the clock)
    from cobalt_lib.config import load_config  # noqa: F401

    wall, cpu = time.perf_counter(), time.process_time()
    answer = view(name, project)
    print(json.dumps({"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu, "answer": answer,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def measure(name: str, project: Path) -> dict[str, object]:
    load = os.getloadavg()[0]
    if name == "cobalt history":
        wall = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "cobalt"), "history"], cwd=project, check=True,
                       capture_output=True)
        return {"wall_s": time.perf_counter() - wall, "cpu_s": None, "answer": "", "peak_rss_mb": None, "load": load}
    out = subprocess.run([sys.executable, __file__, "--child", name, "--project", str(project)], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return {**json.loads(out.strip().splitlines()[-1]), "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="1000,100000", help="comma-separated store sizes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/cobalt-history-bench"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.project)
        return
    print("| runs stored | view | load | wall s (each repeat) | CPU s | peak RSS MB | answer |")
    print("|---|---|---|---|---|---|---|")
    for runs in (int(r) for r in args.runs.split(",")):
        project = args.dir / f"runs-{runs}"
        if not (project / ".cobalt" / "cobalt.duckdb").exists():
            t = time.perf_counter()
            build(project, runs)
            print(f"(built {runs} runs in {time.perf_counter() - t:.1f} s)", file=sys.stderr)
        for name in [*VIEWS, "cobalt history"]:
            got = [measure(name, project) for _ in range(args.repeats)]
            walls = ", ".join(f"{g['wall_s']:.3f}" for g in got)
            cpu = min(g["cpu_s"] for g in got) if got[0]["cpu_s"] is not None else None  # type: ignore[type-var]
            rss = max(g["peak_rss_mb"] for g in got) if got[0]["peak_rss_mb"] is not None else None  # type: ignore[type-var]
            print(f"| {runs} | {name} | {got[0]['load']:.2f} | {walls} | {'-' if cpu is None else f'{cpu:.3f}'} | "
                  f"{'-' if rss is None else f'{rss:.0f}'} | {got[0]['answer']} |", flush=True)


if __name__ == "__main__":
    main()
