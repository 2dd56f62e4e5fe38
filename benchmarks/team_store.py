"""The team store (Postgres) beside the embedded DuckDB file, side by side in one sitting (issue 32).

Starts a real Postgres server as tests/pg.py does (loopback, a free port, fsync off as in the tests:
the figure is cobalt's cost, not the disk's), then, interleaved, on each backend:

- `run`: a 10,000-item `experiment.run()` (a trivial agent, one exact-match evaluator), in a fresh
  process, imports excluded: wall and CPU seconds (target: Postgres within 1.15x of DuckDB's wall);
- `8 writers`: eight `cobalt run` processes of 500 items each started at once: the wall until the last
  exits, and that every item is stored exactly once;
- `history`: `run_history(limit=20)` over 1,000 stored runs, in a fresh process;
- `compare` and `first rows`: `compare_runs` of two 20,000-item runs, and the run page's first 50 rows
  (`Store.item_page`), in a fresh process each.

    .venv/bin/python benchmarks/team_store.py [--items 10000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

EXPERIMENT = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

N = int(os.environ.get("N", "500"))
experiment("bench", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(N)]),
           lambda ctx: ctx.item["expected_output"], concurrency=50,
           evaluators=[Evaluator(name="exact", type="exact-match", field="expected_output")])
'''

RUN = '''
import json, os, resource, sys, time
sys.path.insert(0, os.getcwd())
from cobalt_lib import load_config
from cobalt_lib.experiments import load_experiments
config = load_config()
[exp] = load_experiments(config)
wall, cpu = time.perf_counter(), time.process_time()
report = exp.run(config=config)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "items": len(report.items)}))
'''

VIEW = '''
import json, sys, time
from cobalt_lib import load_config
from cobalt_lib.store import Store
config = load_config()
what = sys.argv[1]
wall, cpu = time.perf_counter(), time.process_time()
if what == "history":
    from cobalt_lib.ops._history import run_history
    found = len(run_history(config, limit=20))
elif what == "compare":
    from cobalt_lib.ops._compare import compare_runs
    compare_runs(config, "b-run-a", "b-run-b")
    found = 1
else:
    found = Store.for_config(config).item_page("b-run-b", limit=50)[0]
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu, "found": found}))
'''


def project(root: Path, n: int) -> Path:
    (root / "experiments").mkdir(parents=True, exist_ok=True)
    (root / "experiments" / "bench.cobalt.py").write_text(EXPERIMENT)
    (root / "cobalt.toml").write_text("")
    return root


def env(url: str | None, **extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("COBALT_", "GITHUB_"))}
    return {**base, "COBALT_DAGSTER_RECORD": "off", **({"COBALT_STORE_URL": url} if url else {}), **extra}


def one_run(root: Path, url: str | None, items: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", RUN], cwd=root, env=env(url, N=str(items)), capture_output=True,
                         text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def writers(root: Path, url: str | None, count: int = 8, items: int = 500) -> tuple[float, list[int]]:
    cobalt = str(Path(sys.executable).parent / "cobalt")
    started = time.perf_counter()
    procs = [subprocess.Popen([cobalt, "run", "--ci"], cwd=root, env=env(url, N=str(items)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(count)]
    codes = [p.wait() for p in procs]
    wall = time.perf_counter() - started
    for proc, code in zip(procs, codes, strict=True):
        if code and proc.stderr:
            print(f"  a writer exited {code}: {proc.stderr.read().strip().splitlines()[-1]}")
    return wall, _per_run(root, url)


def _per_run(root: Path, url: str | None) -> list[int]:
    from cobalt_lib.store import Store

    store = Store(url, home=root / ".cobalt") if url else Store(root / ".cobalt" / "cobalt.duckdb")
    rows = store.query("SELECT run_id, count(*) AS n, count(DISTINCT item_index) AS d FROM outputs GROUP BY run_id")
    assert all(r["n"] == r["d"] for r in rows)
    return sorted(int(r["n"]) for r in rows)


def fill(root: Path, url: str | None, runs: int, items: int) -> None:
    """`runs` finished runs (aggregates, a verdict), and two runs of `items` items with scores."""
    from cobalt_lib.store import Store

    store = Store(url, home=root / ".cobalt") if url else Store(root / ".cobalt" / "cobalt.duckdb")
    start = datetime(2026, 1, 1, tzinfo=UTC)
    batch: dict[str, list[dict[str, object]]] = {"runs": [], "aggregates": [], "verdicts": []}
    for i in range(runs):
        when = start + timedelta(minutes=i)
        run_id = f"{when:%Y%m%d%H%M%S}-{i:08x}"
        batch["runs"].append({"run_id": run_id, "experiment": f"exp-{i % 5}", "status": "completed",
                              "started_at": when.isoformat(), "finished_at": (when + timedelta(seconds=30)).isoformat(),
                              "tags": ["nightly"], "config": {"runs": 1}, "source": "library", "passed": True,
                              "summary": {"total_items": 100, "total_duration_ms": 1000.0}, "worked_ms": 1000.0})
        batch["aggregates"].append({"run_id": run_id, "metric": "quality", "kind": "evaluator", "mean": 0.5,
                                    "count": 100, "errors": 0})
        batch["verdicts"].append({"run_id": run_id, "name": "quality >= 0.5", "passed": True, "gate": "threshold"})
    store.write(batch)
    for name, shift in (("b-run-a", 0.0), ("b-run-b", 0.1)):
        when = start + timedelta(days=30 + shift)
        store.write({"runs": [{"run_id": name, "experiment": "big", "status": "completed",
                               "started_at": when.isoformat(), "finished_at": when.isoformat(), "tags": [],
                               "config": {"runs": 1, "evaluators": [{"name": "q", "type": "exact-match"}]},
                               "source": "library",
                               "summary": {"total_items": items}}],
                     "outputs": [{"run_id": name, "item_index": i, "run_index": 0, "input": {"input": f"q{i}"},
                                  "output": f"answer {i}", "status": "ok", "latency_ms": 10.0, "item_id": f"i{i}",
                                  "input_hash": f"h{i}"} for i in range(items)],
                     "scores": [{"run_id": name, "item_index": i, "run_index": 0, "evaluator": "q",
                                 "score": float((i + int(shift * 10)) % 2), "status": "ok", "passed": True}
                                for i in range(items)],
                     "aggregates": [{"run_id": name, "metric": "q", "kind": "evaluator", "mean": 0.5,
                                     "count": items, "errors": 0}]})


def view(root: Path, url: str | None, what: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", VIEW, what], cwd=root, env=env(url), capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    import pg

    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--only", choices=["run", "writers", "views"], help="one part alone")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    with pg.server() as db, tempfile.TemporaryDirectory() as tmp:
        backends = {"duckdb": None, "postgres": None}
        for rep in range(args.repeats if args.only in (None, "run") else 0):
            for name in backends:
                url = db.create_database(f"run{rep}") if name == "postgres" else None
                got = one_run(project(Path(tmp) / f"run-{name}-{rep}", args.items), url, args.items)
                print(f"run {args.items} items  {name:8}  wall {got['wall']:.2f} s  cpu {got['cpu']:.2f} s  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
        for name in backends if args.only in (None, "writers") else []:
            url = db.create_database("writers") if name == "postgres" else None
            wall, counts = writers(project(Path(tmp) / f"writers-{name}", 500), url)
            print(f"8 writers x 500 items  {name:8}  wall {wall:.2f} s  rows per run {counts}  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        for name in backends if args.only in (None, "views") else []:
            url = db.create_database("views") if name == "postgres" else None
            root = project(Path(tmp) / f"views-{name}", 0)
            fill(root, url, 1000, 20_000)
            for what in ("history", "compare", "first rows"):
                for _ in range(args.repeats):
                    got = view(root, url, what)
                    print(f"{what:10}  {name:8}  wall {got['wall']:.3f} s  cpu {got['cpu']:.3f} s  "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
